import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { systemClock, type Clock } from "../clock.js";
import type { Config } from "../config.js";
import { ApiError, unavailable } from "../domain/errors.js";
import { createMetrics, type Metrics } from "../metrics.js";
import type { LedgerStore } from "../store/store.js";
import { authenticateAdmin, authenticateContract } from "./auth.js";
import type { AppContext } from "./context.js";
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from "./errors.js";
import { adminRoutes } from "./routes/admin.js";
import { authRoutes } from "./routes/auth.js";
import { batchRoutes } from "./routes/batches.js";
import { balanceRoutes } from "./routes/contract.js";
import { operationRoutes } from "./routes/operations.js";
import { validatorCompiler } from "./validation.js";

export interface AppOptions {
  config: Config;
  store: LedgerStore;
  clock?: Clock;
  metrics?: Metrics;
  /** pino options or false; defaults to JSON logs at config.logLevel. */
  logger?: boolean | object;
}

/** Path parameters longer than this are still routed (and then rejected as 400, not 404). */
const MAX_PARAM_LENGTH = 512;

declare module "fastify" {
  interface FastifyInstance {
    /** Makes new requests answer 503 while in-flight ones finish (graceful shutdown). */
    drain(): void;
  }
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const ctx: AppContext = {
    config: options.config,
    store: options.store,
    clock: options.clock ?? systemClock,
    metrics: options.metrics ?? createMetrics(),
  };
  const app = Fastify({
    logger: options.logger ?? { level: options.config.logLevel, redact: ["req.headers.authorization"] },
    bodyLimit: options.config.bodyLimitBytes,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
    },
    return503OnClosing: false,
    trustProxy: options.config.trustProxy,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);
  installBodyParsers(app);
  const admission = installAdmission(app, options.config.maxInFlightRequests);
  installRequestMetrics(app, ctx.metrics);
  await app.register(rateLimit, {
    global: false,
    keyGenerator: (request) => request.headers.authorization ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new ApiError("RATE_LIMITED", `rate limit exceeded, retry in ${context.after}`, undefined, Math.ceil(context.ttl / 1000)),
  });
  if (options.config.corsOrigins.length > 0) {
    const origins = options.config.corsOrigins;
    await app.register(cors, {
      origin: origins.includes("*") ? true : origins,
      methods: ["GET", "PUT", "POST", "DELETE"],
      allowedHeaders: ["authorization", "content-type", "x-request-id"],
      exposedHeaders: ["retry-after", "www-authenticate"],
    });
  }
  await registerDocs(app);

  operationRoutes(app, ctx);
  authRoutes(app, ctx);
  await app.register(
    async (contractScope) => {
      contractScope.addHook("onRequest", authenticateContract(ctx));
      balanceRoutes(contractScope, ctx);
      batchRoutes(contractScope, ctx);
    },
    { prefix: "/v1/contracts/:contractAddress" },
  );
  await app.register(
    async (adminScope) => {
      adminScope.addHook("onRequest", authenticateAdmin(ctx));
      adminRoutes(adminScope, ctx);
    },
    { prefix: "/v1/admin" },
  );
  app.decorate("drain", admission.drain);
  return app;
}

/**
 * Answers 503 at once, instead of queueing without bound, when more than `maxInFlight` requests
 * are being served, and to every new request once draining for shutdown has begun.
 */
function installAdmission(app: FastifyInstance, maxInFlight: number): { drain(): void } {
  let inFlight = 0;
  let draining = false;
  app.addHook("onRequest", async (_request, reply) => {
    if (draining) throw unavailable("the service is shutting down", 1);
    if (inFlight >= maxInFlight) throw unavailable("too many requests in flight", 1);
    inFlight += 1;
    reply.raw.once("close", () => {
      inFlight -= 1;
    });
  });
  // Fastify marks only requests that arrive after close() with `Connection: close`; without
  // this, a request in flight at SIGTERM leaves its keep-alive socket open after the answer and
  // shutdown waits for the client (or the shutdown timeout, exit 1).
  app.addHook("onSend", async (_request, reply, payload) => {
    if (draining) reply.header("connection", "close");
    return payload;
  });
  return {
    drain: () => {
      draining = true;
    },
  };
}

/**
 * Only JSON bodies are parsed. Any other content type is read up to the body limit (so an
 * oversized body is a 413 whatever its type, as API.md orders) and then refused with 415.
 */
function installBodyParsers(app: FastifyInstance): void {
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => {
    done(new ApiError("UNSUPPORTED_MEDIA_TYPE", "the body must be application/json"), undefined);
  });
}

function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "(unmatched)";
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.requests.inc(labels);
    metrics.requestSeconds.observe(labels, reply.elapsedTime / 1000);
    request.log.info(
      { method: request.method, route, url: request.url.slice(0, 200), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      "request",
    );
  });
}

async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "points-ledger",
        version: "0.1.0",
        description: "Self-hostable Points API, compatible with the Blast Points API. See API.md.",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
