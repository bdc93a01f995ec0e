import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import proxyAddr from "@fastify/proxy-addr";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from "fastify";
import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import underPressure from "@fastify/under-pressure";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { chainOperatorsOf, type ChainOperators } from "../chain/operators.js";
import { systemClock, type Clock } from "../clock.js";
import type { Config } from "../config.js";
import { ApiError, ERROR_CATALOGUE, rateLimited, unavailable } from "../domain/errors.js";
import { SHUTTING_DOWN_MESSAGE } from "../domain/messages.js";
import {
  LOGGED_URL_MAX_LENGTH,
  MAX_CONCURRENT_STREAMED_READS,
  MAX_PARAM_LENGTH,
  PRESSURE_SAMPLE_INTERVAL_MS,
  STARTUP_SAMPLES_IGNORED,
  STREAMED_READ_RETRY_AFTER_SECONDS,
  TIMEOUT_CHECK_INTERVAL_MS,
} from "../domain/limits.js";
import { createMetrics, recordCommittedEvents, type Metrics } from "../metrics.js";
import type { LedgerStore } from "../store/store.js";
import { authenticateAdmin, authenticateContract, createAuthLimits, type AuthLimits } from "./auth.js";
import type { AppContext } from "./context.js";
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from "./errors.js";
import { redactingLoggerOptions } from "../log-redaction.js";
import { BEARER_SCHEME, declareScope } from "./access.js";
import { ApiKeyUses } from "../auth/api-key-uses.js";
import { adminApiKeyRoutes, apiKeyRoutes } from "./routes/api-keys.js";
import { admitByQueueTime, type RequestListener } from "./queue-admission.js";
import { adminRoutes } from "./routes/admin.js";
import { authRoutes } from "./routes/auth.js";
import { batchRoutes } from "./routes/batches.js";
import { webhookRoutes } from "./routes/webhooks.js";
import { adminEventRoutes, eventRoutes } from "./routes/events.js";
import { adminEventProofRoutes, eventProofRoutes, logRoutes } from "./routes/log.js";
import { balanceRoutes } from "./routes/contract.js";
import { operationRoutes } from "./routes/operations.js";
import { DOCS_SECURITY_HEADERS, documentRoute } from "./openapi-docs.js";
import { publicReadRoutes, snapshotAdminRoutes } from "./routes/snapshots.js";
import { balancesExportRoute, transferRoutes } from "./routes/transfers.js";
import { leaderboardRoutes } from "./routes/leaderboards.js";
import { consoleRoutes } from "./routes/console.js";
import { IntakePool } from "./batch-intake.js";
import { OutageLog } from "./outage-log.js";
import { validatorCompiler } from "./validation.js";

export interface AppOptions {
  config: Config;
  store: LedgerStore;
  clock?: Clock;
  metrics?: Metrics;
  /** Operators from the chain; by default made from config.chain (the server passes the one its worker shares). */
  chain?: ChainOperators | null;
  /** pino options or false; defaults to JSON logs at config.logLevel. */
  logger?: boolean | object;
}

/**
 * The HTTP server Fastify would make (lib/server.js: Node's server options, the request, keep-alive
 * and connection timeouts), with `listener` in front of Fastify's handler.
 */
function serverWithAdmission(
  config: Config,
  metrics: Metrics,
  operationalPaths: ReadonlySet<string>,
): (handler: RequestListener, serverOptions: FastifyServerOptions) => Server {
  return (handler, serverOptions) => {
    const listener = admitByQueueTime(handler, {
      maxQueueDelayMs: config.maxQueueDelayMs,
      clientTurnBudgetMs: config.clientTurnBudgetMs,
      clientAddress: clientAddressOf(config.trustProxy),
      isOperational: (path) => operationalPaths.has(path),
      onRefused: (request, status) =>
        metrics.requests.inc({
          method: request.method ?? "",
          route: status === 503 ? "(queued too long)" : "(over the client's share)",
          status: String(status),
        }),
    });
    // Slow bodies: a request must have fully arrived in time, else the client error handler
    // answers 400 and closes the connection (src/http/errors.ts).
    const server = createServer(
      { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
      listener,
    );
    if (serverOptions.keepAliveTimeout !== undefined) server.keepAliveTimeout = serverOptions.keepAliveTimeout;
    if (serverOptions.requestTimeout !== undefined) server.requestTimeout = serverOptions.requestTimeout;
    if (serverOptions.connectionTimeout !== undefined) server.setTimeout(serverOptions.connectionTimeout);
    return server;
  };
}

/**
 * The client's address as Fastify's request.ip gives it (lib/request.js), for the admission that
 * runs before Fastify: the socket's peer, or behind TRUST_PROXY the nearest untrusted forwarded one.
 */
function clientAddressOf(trustProxy: Config["trustProxy"]): (request: IncomingMessage) => string {
  if (trustProxy === false) return (request) => request.socket.remoteAddress ?? "";
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy.split(",").map((item) => item.trim()));
  return (request) => {
    const addresses = proxyAddr.all(request, trust);
    return addresses[addresses.length - 1] ?? "";
  };
}

/** Operational routes (health, readiness, metrics) by path, as they are added: the admission never refuses them. */
function recordOperationalPaths(app: FastifyInstance, paths: Set<string>): void {
  app.addHook("onRoute", (route) => {
    if (route.config?.operational) paths.add(route.url);
  });
}

declare module "fastify" {
  interface FastifyInstance {
    /** Makes new requests answer 503 while in-flight ones finish (graceful shutdown). */
    drain(): void;
  }
  interface FastifyContextConfig {
    /** Health, readiness and metrics: answered even while the API sheds load or drains. */
    operational?: boolean;
    /** A response that stays open (the event stream): bounded by its own limit, not MAX_IN_FLIGHT_REQUESTS. */
    longLived?: boolean;
    /** A large streamed read (tree dump, CSV export): also bounded by MAX_CONCURRENT_STREAMED_READS. */
    streamedRead?: boolean;
  }
}

/** The 503 that @fastify/under-pressure sends when the event loop falls behind, in the catalogue's form. */
class EventLoopOverloaded extends ApiError {
  constructor() {
    super("UNAVAILABLE", "the service is overloaded, retry shortly", undefined, 1);
  }
}

/** The request's id: the client's X-Request-Id when it is a plain short token, else a new UUID. */
function requestIdOf(request: IncomingMessage): string {
  const given = request.headers["x-request-id"];
  return typeof given === "string" && /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
}

/** What every route is handed (context.ts), from the options and their defaults. */
function contextOf(options: AppOptions): AppContext {
  const clock = options.clock ?? systemClock;
  return {
    config: options.config,
    store: options.store,
    clock,
    metrics: options.metrics ?? createMetrics(),
    intake: new IntakePool(options.config, options.config.batchIntakeThreads),
    chain: options.chain === undefined ? chainOperatorsOf(options.config, clock) : options.chain,
  };
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const ctx = contextOf(options);
  // The ledger counters follow what this process commits (src/metrics.ts), not what handlers say.
  const unsubscribe = ctx.store.onCommittedEvents((events) => recordCommittedEvents(ctx.metrics, events));
  const operationalPaths = new Set<string>();
  const outageLog = new OutageLog(() => ctx.store.ping());
  const app = Fastify({
    serverFactory: serverWithAdmission(options.config, ctx.metrics, operationalPaths),
    logger: loggerOf(options, outageLog),
    bodyLimit: options.config.bodyLimitBytes,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIdOf,
    return503OnClosing: false,
    requestTimeout: options.config.requestTimeoutMs,
    trustProxy: options.config.trustProxy,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  outageLog.attach(app.log);
  recordOperationalPaths(app, operationalPaths);
  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);
  installBodyParsers(app);
  await installLoadShedding(app, options.config.maxEventLoopDelayMs);
  const admission = installAdmission(app, options.config);
  installRequestMetrics(app, ctx.metrics);
  await registerRateLimits(app);
  await registerCors(app, options.config.corsOrigins);
  await registerDocs(app);
  const authLimits = createAuthLimits(app, ctx);
  const apiKeyUses = new ApiKeyUses(ctx.store, (error) => app.log.warn({ err: error }, "could not record when API keys were last used"));

  operationRoutes(app, ctx);
  authRoutes(app, ctx);
  await app.register(consoleRoutes);
  await app.register(async (contractScope) => contractRoutes(contractScope, ctx, authLimits, apiKeyUses), {
    prefix: "/v1/contracts/:contractAddress",
  });
  // Leaderboards: contract routes that the admin token, and with PUBLIC_READS anyone, may read too.
  await app.register(async (boardScope) => leaderboardRoutes(boardScope, ctx, authLimits, apiKeyUses), {
    prefix: "/v1/contracts/:contractAddress",
  });
  await app.register(
    async (adminScope) => {
      adminScope.addHook("onRequest", authenticateAdmin(ctx, authLimits));
      adminRoutes(adminScope, ctx);
      adminApiKeyRoutes(adminScope, ctx);
      adminEventRoutes(adminScope, ctx);
      adminEventProofRoutes(adminScope, ctx);
      balancesExportRoute(adminScope, ctx);
      snapshotAdminRoutes(adminScope, ctx);
    },
    { prefix: "/v1/admin" },
  );
  await app.register(async (readScope) => publicReadRoutes(readScope, ctx, authLimits), { prefix: "/v1" });
  await app.register(async (logScope) => logRoutes(logScope, ctx), { prefix: "/v1/log" });
  app.addHook("onClose", async () => {
    unsubscribe();
    outageLog.stop();
    // The last minute's uses of API keys, before the store closes.
    await apiKeyUses.close().catch((error: unknown) => app.log.warn({ err: error }, "could not record when API keys were last used"));
    await ctx.intake.close();
  });
  return app.decorate("drain", admission.drain);
}

/** The routes under /v1/contracts/:contractAddress: each declares its scope (access.ts), one hook authenticates them all. */
function contractRoutes(contractScope: FastifyInstance, ctx: AppContext, authLimits: AuthLimits, apiKeyUses: ApiKeyUses): void {
  contractScope.addHook("onRoute", declareScope);
  contractScope.addHook("onRequest", authenticateContract(ctx, authLimits, apiKeyUses));
  balanceRoutes(contractScope, ctx);
  batchRoutes(contractScope, ctx);
  webhookRoutes(contractScope, ctx);
  eventRoutes(contractScope, ctx);
  eventProofRoutes(contractScope, ctx);
  transferRoutes(contractScope, ctx);
  apiKeyRoutes(contractScope, ctx);
}

async function registerRateLimits(app: FastifyInstance): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    // The client's address only: a header the client chooses (junk tokens, `Bearer` spelled 64
    // ways) must not buy fresh buckets. Contract routes count per verified contract (http/auth.ts).
    keyGenerator: (request) => request.ip,
    errorResponseBuilder: (_request, context) =>
      rateLimited(Math.ceil(context.ttl / 1000), `${ERROR_CATALOGUE.RATE_LIMITED.message}, retry in ${context.after}`),
  });
}

/** CORS headers for the configured browser origins (CORS_ORIGINS); none when it is empty. */
async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(cors, {
    origin: origins.includes("*") ? true : [...origins],
    methods: ["GET", "PUT", "POST", "PATCH", "DELETE"],
    allowedHeaders: ["authorization", "content-type", "x-request-id"],
    exposedHeaders: ["retry-after", "www-authenticate"],
  });
}

/**
 * Sheds load when the CPU is the bottleneck: while the mean event-loop delay is past the limit,
 * new API requests get 503 + Retry-After at once (cheap) instead of queueing behind the work
 * that is already late. Operational routes pass (see `operational`).
 */
async function installLoadShedding(app: FastifyInstance, maxEventLoopDelayMs: number): Promise<void> {
  if (maxEventLoopDelayMs === 0) return;
  // Start-up (compiling every route's schemas in ready()) stalls the loop once, and the first
  // samples after it still hold that stall: shedding on them refused the first sign-ins and admin
  // requests after a restart (issue 19). That stall is not load, so the delay counts only once
  // the samples are past it.
  let sheddingFromMs = Infinity;
  app.addHook("onReady", async () => {
    sheddingFromMs = performance.now() + STARTUP_SAMPLES_IGNORED * PRESSURE_SAMPLE_INTERVAL_MS;
  });
  await app.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    sampleInterval: PRESSURE_SAMPLE_INTERVAL_MS,
    pressureHandler: (request) =>
      request.routeOptions.config.operational || performance.now() < sheddingFromMs ? undefined : Promise.reject(new EventLoopOverloaded()),
  });
}

/**
 * Answers 503 at once, instead of queueing without bound, when more than MAX_IN_FLIGHT_REQUESTS
 * are being served, 429 when one client address has MAX_IN_FLIGHT_PER_CLIENT of them (the rest
 * stay for the others), and 503 to every new request once draining for shutdown has begun. A request is
 * counted from when its body has arrived (preValidation), so clients still sending a body (slow
 * or silent ones, bounded by the request timeout) never take a slot from the others; health,
 * readiness and metrics are never refused for load (only, like everything, once draining for
 * shutdown has begun).
 */
function installAdmission(app: FastifyInstance, config: Pick<Config, "maxInFlightRequests" | "maxInFlightPerClient">): { drain(): void } {
  let inFlight = 0;
  const clientInFlight = new Map<string, number>();
  // Counted under the address rate limits use (request.ip: behind TRUST_PROXY, the forwarded one).
  const admitForClient = (client: string, reply: FastifyReply): void => {
    const count = clientInFlight.get(client) ?? 0;
    if (count >= config.maxInFlightPerClient) throw rateLimited(1, "too many requests from this client address in flight, retry shortly");
    clientInFlight.set(client, count + 1);
    reply.raw.once("close", () => {
      const left = clientInFlight.get(client)! - 1;
      if (left === 0) clientInFlight.delete(client);
      else clientInFlight.set(client, left);
    });
  };
  let streamedReads = 0;
  // A tree dump or an export holds its slot until the client has taken the whole body.
  const admitStreamedRead = (reply: FastifyReply): void => {
    if (streamedReads >= MAX_CONCURRENT_STREAMED_READS) {
      throw unavailable("too many exports and tree dumps are being streamed, retry later", STREAMED_READ_RETRY_AFTER_SECONDS);
    }
    streamedReads += 1;
    reply.raw.once("close", () => {
      streamedReads -= 1;
    });
  };
  let draining = false;
  // Draining refuses requests by their arrival: one that arrived before SIGTERM is finished even
  // if its body completes afterwards.
  app.addHook("onRequest", async () => {
    if (draining) throw unavailable(SHUTTING_DOWN_MESSAGE, 1);
  });
  app.addHook("preValidation", async (request, reply) => {
    if (request.routeOptions.config.operational) return;
    // An event stream would hold its slot for hours: a few hundred listeners would leave none for
    // the requests this bound protects. Streams have their own bound (MAX_EVENT_STREAMS).
    if (request.routeOptions.config.longLived) return;
    if (inFlight >= config.maxInFlightRequests) throw unavailable("too many requests in flight", 1);
    admitForClient(request.ip, reply);
    if (request.routeOptions.config.streamedRead) admitStreamedRead(reply);
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
 * Only JSON bodies are parsed (prototype poisoning refused). Any other content type is read up to the body limit (so an
 * oversized body is a 413 whatever its type, as docs/api.md orders) and then refused with 415.
 */
function installBodyParsers(app: FastifyInstance): void {
  app.removeContentTypeParser("text/plain");
  // Many clients send `Content-Type: application/json` on every request, DELETE and GET included:
  // an empty body is no body for a route that takes none (docs/api.md Conventions).
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
      return;
    }
    void parseJson(request, body as string, done);
  });
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => {
    done(new ApiError("UNSUPPORTED_MEDIA_TYPE"), undefined);
  });
}

function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "(unmatched)";
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.requests.inc(labels);
    metrics.requestSeconds.observe(labels, reply.elapsedTime / 1000);
    request.log.info(
      { method: request.method, route, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      "request",
    );
  });
}

/**
 * The logger's options: the given ones or JSON at LOG_LEVEL, every line scrubbed of secrets
 * (src/log-redaction.ts), a database outage written as two lines (src/http/outage-log.ts).
 */
function loggerOf(options: AppOptions, outageLog: OutageLog): false | object {
  if (options.logger === false) return false;
  const given = typeof options.logger === "object" ? options.logger : { level: options.config.logLevel };
  const redacting = redactingLoggerOptions(given, [options.config.adminToken]) as { hooks: object };
  return {
    ...redacting,
    hooks: {
      ...redacting.hooks,
      logMethod(this: unknown, args: unknown[], method: (...args: unknown[]) => void) {
        outageLog.logMethod(this, args, method);
      },
    },
  };
}

/** Query parameters whose values are secrets (a client may put its bearer token in the URL). */
const SECRET_PARAMETER = /token|secret|auth|key|signature|password|session/i;

/** The URL as logged: secret-looking query values replaced, and cut to a bounded length. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf("?");
  if (queryStart === -1) return url.slice(0, LOGGED_URL_MAX_LENGTH);
  const query = url
    .slice(queryStart + 1)
    .split("&")
    .map((pair) => {
      const name = pair.split("=", 1)[0]!;
      return pair.includes("=") && SECRET_PARAMETER.test(safeDecode(name)) ? `${name}=[REDACTED]` : pair;
    })
    .join("&");
  return `${url.slice(0, queryStart)}?${query}`.slice(0, LOGGED_URL_MAX_LENGTH);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

async function registerDocs(app: FastifyInstance): Promise<void> {
  // Before any route is added: every route gets its summary and description (openapi-docs.ts).
  app.addHook("onRoute", documentRoute);
  await app.register(swagger, {
    openapi: {
      // 3.1: a bearer scheme's security requirement may name the scope a route needs (access.ts).
      openapi: "3.1.0",
      info: {
        title: "points-ledger",
        version: "0.1.0",
        description:
          "Self-hostable Points API, compatible with the Blast Points API: a contract's operator signs in, submits batches of point " +
          "transfers that finalize after a cancellable delay, reads balances, events and webhooks. The reference organised by task, " +
          "with a curl example of every route, is docs/api.md in the project's repository; docs/migrating.md covers moving from the Blast Points API.",
      },
      components: {
        securitySchemes: {
          [BEARER_SCHEME]: {
            type: "http",
            scheme: "bearer",
            description:
              "An operator's bearer token (plt_…, every scope), an API key of the contract (plk_…, the scopes it was given), or on /v1/admin the admin token. A contract route lists the scope it needs; `operator` means no API key may use it (an operator's token or, under /v1/admin, the admin token).",
          },
        },
      },
    },
  });
  await app.register(async (docsScope) => {
    // Every answer under /docs, the static files included, gets the console's framing and CSP rules.
    docsScope.addHook("onRequest", async (_request, reply) => {
      reply.headers(DOCS_SECURITY_HEADERS);
    });
    // No validator badge: it would send the spec's URL to validator.swagger.io (and the CSP blocks it).
    await docsScope.register(swaggerUi, { routePrefix: "/docs", uiConfig: { validatorUrl: null } });
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
