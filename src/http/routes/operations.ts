import type { FastifyInstance } from "fastify";
import { unavailable } from "../../domain/errors.js";
import { StoreUnavailableError } from "../../store/errors.js";
import { formatPoints } from "../../domain/points.js";
import { ID_MAX_LENGTH } from "../../domain/batch.js";
import { POINT_DECIMALS } from "../../domain/points.js";
import type { Config } from "../../config.js";
import type { AppContext } from "../context.js";
import { metricsExample } from "../openapi-docs.js";
import { refreshDatabaseGauges } from "../../metrics.js";
import { registerChainGauges } from "../../chain/metrics.js";
import { Responses, parametersResponseSchema, responses, textResponse } from "../schemas.js";

/** `MINIMUM_<TYPE>_TRANSFER_SIZE` of every configured point type, in POINT_TYPES order. */
function minimumTransferSizes(config: Config): Record<string, string> {
  const sizes: Record<string, string> = {};
  for (const pointType of config.pointTypes) {
    sizes[`MINIMUM_${pointType}_TRANSFER_SIZE`] = formatPoints(config.minimumTransferUnits[pointType]!);
  }
  return sizes;
}

/** Parameters, health, readiness and metrics: no authentication. */
export function operationRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { config } = ctx;
  const parameters = {
    MINIMUM_FINALIZE_SECONDS: config.minimumFinalizeSeconds,
    DEFAULT_FINALIZE_SECONDS: config.defaultFinalizeSeconds,
    MAX_TRANSFERS_PER_BATCH: config.maxTransfersPerBatch,
    MAX_TRANSFER_DECIMALS: POINT_DECIMALS,
    POINT_TYPES: config.pointTypes,
    ...minimumTransferSizes(config),
    BATCH_ID_MAX_LENGTH: ID_MAX_LENGTH,
    BEARER_TOKEN_TTL_SECONDS: config.bearerTokenTtlSeconds,
    CHALLENGE_TTL_SECONDS: config.challengeTtlSeconds,
  };

  app.get("/v1/parameters", { schema: { tags: ["parameters"], response: { 200: parametersResponseSchema(parameters) } } }, async () => ({
    success: true,
    parameters,
  }));

  // Operational routes answer while the API sheds load (src/http/app.ts).
  const operational = { operational: true };
  app.get("/healthz", { config: operational, schema: { tags: ["operations"], response: responses(Responses.health) } }, async () => ({
    success: true,
    status: "ok",
  }));

  app.get("/readyz", { config: operational, schema: { tags: ["operations"], response: responses(Responses.ready, 503) } }, async () => {
    try {
      await ctx.store.ping();
    } catch (error) {
      // The store says why (full, read-only, unreachable) and how long to wait; thrown as it is,
      // so the log counts it in the outage (src/http/outage-log.ts) rather than writing each one.
      if (error instanceof StoreUnavailableError) throw error;
      throw unavailable("the database does not answer");
    }
    // The default registry waits for the chain's id (API.md, Operators on chain).
    if (ctx.chain !== null && !ctx.chain.ready)
      throw unavailable("waiting for the chain's id to know its operator registry (CHAIN_RPC_URL)");
    return { success: true, status: "ready" };
  });

  if (ctx.chain !== null) registerChainGauges(ctx.metrics.registry, ctx.chain);
  const metricsResponse = { 200: textResponse("text/plain", "Prometheus text exposition format.", metricsExample) };
  app.get("/metrics", { config: operational, schema: { tags: ["operations"], response: metricsResponse } }, async (_request, reply) => {
    await refreshDatabaseGauges(ctx.metrics, ctx.store, ctx.clock.now());
    reply.header("content-type", ctx.metrics.registry.contentType);
    return ctx.metrics.registry.metrics();
  });
}
