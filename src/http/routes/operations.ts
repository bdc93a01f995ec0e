import type { FastifyInstance } from "fastify";
import { unavailable } from "../../domain/errors.js";
import { formatPoints } from "../../domain/points.js";
import { ID_MAX_LENGTH } from "../../domain/batch.js";
import { POINT_DECIMALS } from "../../domain/points.js";
import type { AppContext } from "../context.js";

/** Parameters, health, readiness and metrics: no authentication. */
export function operationRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { config } = ctx;
  const parameters = {
    MINIMUM_FINALIZE_SECONDS: config.minimumFinalizeSeconds,
    DEFAULT_FINALIZE_SECONDS: config.defaultFinalizeSeconds,
    MAX_TRANSFERS_PER_BATCH: config.maxTransfersPerBatch,
    MAX_TRANSFER_DECIMALS: POINT_DECIMALS,
    MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: formatPoints(config.minimumTransferUnits.PHASE2_POINTS),
    MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: formatPoints(config.minimumTransferUnits.PHASE2_GOLD),
    BATCH_ID_MAX_LENGTH: ID_MAX_LENGTH,
    BEARER_TOKEN_TTL_SECONDS: config.bearerTokenTtlSeconds,
    CHALLENGE_TTL_SECONDS: config.challengeTtlSeconds,
  };

  app.get("/v1/parameters", { schema: { tags: ["parameters"] } }, async () => ({ success: true, parameters }));

  app.get("/healthz", { schema: { tags: ["operations"] } }, async () => ({ success: true, status: "ok" }));

  app.get("/readyz", { schema: { tags: ["operations"] } }, async () => {
    try {
      await ctx.store.ping();
    } catch {
      throw unavailable("the database does not answer");
    }
    return { success: true, status: "ready" };
  });

  app.get("/metrics", { schema: { tags: ["operations"] } }, async (_request, reply) => {
    reply.header("content-type", ctx.metrics.registry.contentType);
    return ctx.metrics.registry.metrics();
  });
}
