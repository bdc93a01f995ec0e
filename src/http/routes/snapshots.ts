import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { ApiError, notFound, validationFailed } from "../../domain/errors.js";
import { alreadyExistsMessage, emptySnapshotMessage, noSnapshotMessage } from "../../domain/messages.js";
import { asOfProblem, SNAPSHOT_DECIMALS_DEFAULT, snapshotJson } from "../../domain/snapshot.js";
import { zonedTimeMs } from "../../domain/times.js";
import { requireAddress } from "../../domain/validate.js";
import { snapshotProof, takeSnapshot, treeDumpText } from "../../snapshots/snapshots.js";
import { authenticateAdmin, type AuthLimits } from "../auth.js";
import type { AppContext } from "../context.js";
import { presentsAdminToken, publicReadLimit } from "../public-reads.js";
import { ExportResponses, SnapshotParams, SnapshotProofParams, responses, snapshotBodySchema } from "../schemas.js";
import { addressBalancesRoute } from "./transfers.js";
import { actorOf } from "../auth.js";

/**
 * Snapshots (docs/api.md, Snapshots): taken by the admin; read (the snapshot, a proof, the tree dump)
 * with the admin token, or by anyone when PUBLIC_READS=true (a claim page fetches proofs).
 */

const tags = ["snapshots"];
const security = [{ bearer: [] }];

/** Admin scope: PUT /v1/admin/snapshots/{snapshotId}. */
export function snapshotAdminRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.put(
    "/snapshots/:snapshotId",
    {
      schema: {
        tags,
        security,
        params: SnapshotParams,
        body: snapshotBodySchema(ctx.config),
        response: responses(ExportResponses.snapshot, 400, 403, "SNAPSHOT_ID_EXISTS", 503),
      },
    },
    async (request) => {
      const { snapshotId } = request.params;
      const { pointType, measure = "available", decimals = SNAPSHOT_DECIMALS_DEFAULT, asOf } = request.body;
      const asOfMs = asOf === undefined ? null : snapshotAsOfMs(asOf, ctx.clock.now());
      const result = await takeSnapshot(
        ctx.store,
        { id: snapshotId, pointType, measure, decimals, asOfMs },
        () => ctx.clock.now(),
        actorOf(request),
      );
      if (result.kind === "exists") {
        throw new ApiError("SNAPSHOT_ID_EXISTS", alreadyExistsMessage("snapshot", snapshotId), {
          snapshotId,
          matchesRequest: result.matchesRequest,
        });
      }
      if (result.kind === "empty") {
        throw validationFailed([{ path: "pointType", message: emptySnapshotMessage(measure, pointType) }]);
      }
      return { success: true as const, snapshot: snapshotJson(result.snapshot) };
    },
  );
}

/** `asOf` in epoch ms: a real moment (the schema checked the form) at least SNAPSHOT_AS_OF_MIN_AGE_MS ago. */
function snapshotAsOfMs(asOf: string, nowMs: number): number {
  const asOfMs = zonedTimeMs(asOf);
  if (asOfMs === null) throw validationFailed([{ path: "asOf", message: `${JSON.stringify(asOf)} is not a real moment` }]);
  const problem = asOfProblem(asOfMs, nowMs);
  if (problem !== null) throw validationFailed([{ path: "asOf", message: `${asOf} ${problem}` }]);
  return asOfMs;
}

/**
 * The read scope under /v1: address balances and snapshot reads. Without PUBLIC_READS it answers
 * like the admin routes (403 without the admin token); with it, no token is needed.
 */
export function publicReadRoutes(scope: FastifyInstance, ctx: AppContext, limits: AuthLimits): void {
  const admin = authenticateAdmin(ctx, limits);
  const perClient = publicReadLimit(scope, ctx);
  scope.addHook("onRequest", async function (this: FastifyInstance, request: FastifyRequest, reply) {
    if (!ctx.config.publicReads) await admin.call(this, request, reply);
    else if (!presentsAdminToken(ctx, request)) await perClient(request);
  });
  addressBalancesRoute(scope, ctx);
  snapshotReadRoutes(scope, ctx);
}

function snapshotReadRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // Snapshots are immutable once taken: every read of one may be a replica's (store/ports/replica.ts).
  const reads = ctx.store.replicaReads;
  const readable = async (snapshotId: string) => {
    const snapshot = await reads.getSnapshot(snapshotId);
    if (!snapshot) throw notFound(noSnapshotMessage(snapshotId));
    return snapshot;
  };
  app.get(
    "/snapshots/:snapshotId",
    { schema: { tags, security, params: SnapshotParams, response: responses(ExportResponses.snapshot, 400, 403, 404) } },
    async (request) => ({ success: true as const, snapshot: snapshotJson(await readable(request.params.snapshotId)) }),
  );
  app.get(
    "/snapshots/:snapshotId/proofs/:address",
    { schema: { tags, security, params: SnapshotProofParams, response: responses(ExportResponses.proof, 400, 403, 404) } },
    async (request) => {
      const address = requireAddress(request.params.address, "address");
      const snapshot = await readable(request.params.snapshotId);
      const proof = await snapshotProof(reads, snapshot, address);
      if (proof === null) throw notFound(`${request.params.address} is not in snapshot ${snapshot.id}`);
      return { success: true as const, ...proof };
    },
  );
  app.get(
    "/snapshots/:snapshotId/tree",
    {
      config: { streamedRead: true },
      schema: { tags, security, params: SnapshotParams, response: responses(ExportResponses.tree, 400, 403, 404) },
    },
    async (request, reply) => {
      const snapshot = await readable(request.params.snapshotId);
      const body = Readable.from(treeDumpText(reads, snapshot.id), { objectMode: false, highWaterMark: 64 * 1024 });
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );
}
