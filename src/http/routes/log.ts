import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { logSigningOf } from "../../auth/log-signing-key.js";
import type { AddressKey } from "../../domain/address.js";
import { ApiError, notFound, unavailable, validationFailed } from "../../domain/errors.js";
import { toBase64, verifierKey } from "../../domain/signed-note.js";
import type { LogStatus } from "../../store/ports/tlog.js";
import type { ApiInstance, AppContext } from "../context.js";
import { publicReadLimit } from "../public-reads.js";
import {
  AdminEventProofParams,
  ConsistencyQuery,
  EventProofParams,
  EventProofQuery,
  LogResponses,
  responses,
  textResponse,
} from "../schemas.js";

/**
 * The transparency log (docs/api.md, Transparency log): its latest signed checkpoint, its
 * verifier key and consistency proofs for anyone (no token, each client rate-limited like the
 * public reads); an event's inclusion proof for whoever may read the event.
 */

const tags = ["transparency log"];
/** How an event id looks (domain/events.ts newEventId, older forms included); anything else is no event. */
const EVENT_ID = /^evt_[A-Za-z0-9_-]{1,96}$/;

const CHECKPOINT_EXAMPLE =
  "points.example.com/points-ledger\n41208\nq1OXhAW6uYPEt6LOZl0wTZgXZ7NAg7ynSkVyv3DHUfk=\n\n— points.example.com/points-ledger 9Gq0ZmKV1D…\n";
const KEY_EXAMPLE = "points.example.com/points-ledger+f46ab466+AXdvY2tlZC1leGFtcGxlLWtleS1ub3QtYS1yZWFsLW9uZQ==\n";

/** GET /v1/log/checkpoint, /v1/log/status, /v1/log/epochs, /v1/log/key and /v1/log/proofs/consistency: no token. */
export function logRoutes(scope: FastifyInstance, ctx: AppContext): void {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const perClient = publicReadLimit(scope, ctx);
  scope.addHook("onRequest", async (request) => perClient(request));
  const signing = logSigningOf(ctx.store, ctx.config);

  app.get(
    "/checkpoint",
    {
      schema: {
        tags,
        response: responses(
          textResponse("text/plain", "The latest signed checkpoint (C2SP tlog-checkpoint).", CHECKPOINT_EXAMPLE),
          429,
          503,
        ),
      },
    },
    async (_request, reply) => {
      const checkpoint = await ctx.store.logCheckpoint();
      if (checkpoint === null) throw unavailable("the transparency log has not signed its first checkpoint yet");
      // When it was signed (the note itself carries no time): the console shows it. Not covered by the signature.
      reply
        .header("content-type", "text/plain; charset=utf-8")
        .header("cache-control", "no-store")
        .header("last-modified", new Date(checkpoint.signedAtMs).toUTCString());
      return checkpoint.note;
    },
  );

  logProgressRoutes(app, ctx);

  app.get(
    "/key",
    {
      schema: {
        tags,
        response: responses(textResponse("text/plain", "The checkpoints' verifier key (C2SP signed-note).", KEY_EXAMPLE), 429, 503),
      },
    },
    async (_request, reply) => {
      const { signer } = await signing.signing();
      reply.header("content-type", "text/plain; charset=utf-8");
      return `${verifierKey(signer)}\n`;
    },
  );

  app.get(
    "/proofs/consistency",
    { schema: { tags, querystring: ConsistencyQuery, response: responses(LogResponses.consistency, 400, 429, 503) } },
    async (request) => {
      const { from, to } = request.query;
      if (from > to) throw validationFailed([{ path: "from", message: `must be ≤ to (${to})` }]);
      const answer = await ctx.store.logConsistencyProof(from, to);
      if (answer.kind === "too_large") {
        throw validationFailed([{ path: "to", message: `must be ≤ the latest checkpoint's size (${answer.checkpointSize})` }]);
      }
      return { success: true as const, from, to, proof: answer.proof.map(toBase64) };
    },
  );
}

/** GET /v1/log/status and /v1/log/epochs: how far the log has got, and the epochs it has begun. */
function logProgressRoutes(app: ApiInstance, ctx: AppContext): void {
  app.get("/status", { schema: { tags, response: responses(LogResponses.status, 429, 503) } }, async (_request, reply) => {
    const status = await ctx.store.logStatus();
    reply.header("cache-control", "no-store");
    return { success: true as const, ...logLag(status, ctx.clock.now()) };
  });

  app.get("/epochs", { schema: { tags, response: responses(LogResponses.epochs, 429, 503) } }, async (_request, reply) => {
    const epochs = await ctx.store.logEpochs();
    reply.header("cache-control", "no-store");
    return {
      success: true as const,
      epochs: epochs.map((epoch) => ({
        epoch: epoch.epoch,
        origin: epoch.origin,
        startedAt: new Date(epoch.startedAtMs).toISOString(),
        note: epoch.note,
      })),
    };
  });
}

/** The log's progress as GET /v1/log/status says it (and the console shows it). */
export function logLag(status: LogStatus, nowMs: number) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    treeSize: status.size,
    checkpointSize: status.checkpoint?.size ?? null,
    checkpointSignedAt: iso(status.checkpoint?.signedAtMs ?? null),
    oldestUnloggedAt: iso(status.oldestUnloggedAtMs),
    lagSeconds: status.oldestUnloggedAtMs === null ? 0 : Math.max(0, nowMs - status.oldestUnloggedAtMs) / 1000,
  };
}

async function inclusionProof(ctx: AppContext, eventId: string, stream: AddressKey | null, treeSize: number | undefined) {
  if (!EVENT_ID.test(eventId)) throw notFound(`no event ${JSON.stringify(eventId)}`);
  const answer = await ctx.store.logInclusionProof(eventId, stream, treeSize ?? null);
  if (answer.kind === "not_found") throw notFound(`no event ${eventId}`);
  if (answer.kind === "too_large") {
    throw validationFailed([{ path: "treeSize", message: `must be ≤ the latest checkpoint's size (${answer.checkpointSize})` }]);
  }
  if (answer.kind === "not_yet_logged") {
    throw new ApiError(
      "NOT_YET_LOGGED",
      treeSize === undefined
        ? `event ${eventId} is not in the latest checkpoint yet (events are logged within about a second of their commit)`
        : `event ${eventId} is not in the checkpoint of size ${treeSize}`,
    );
  }
  return {
    success: true as const,
    eventId,
    logIndex: answer.logIndex,
    treeSize: answer.treeSize,
    leafHash: toBase64(answer.leafHash),
    proof: answer.proof.map(toBase64),
  };
}

/** GET /v1/contracts/{c}/events/{eventId}/proof; registered in the contract scope (scope `read`). */
export function eventProofRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/events/:eventId/proof",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security: [{ bearer: [] }],
        params: EventProofParams,
        querystring: EventProofQuery,
        response: responses(LogResponses.inclusion, 400, 401, 403, 404, "NOT_YET_LOGGED"),
      },
    },
    async (request) => inclusionProof(ctx, request.params.eventId, request.grant!.contract, request.query.treeSize),
  );
}

/** GET /v1/admin/events/{eventId}/proof: any event, the admin stream's included; registered in the admin scope. */
export function adminEventProofRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/events/:eventId/proof",
    {
      schema: {
        tags: ["admin"],
        security: [{ bearer: [] }],
        params: AdminEventProofParams,
        querystring: EventProofQuery,
        response: responses(LogResponses.inclusion, 400, 403, 404, "NOT_YET_LOGGED"),
      },
    },
    async (request) => inclusionProof(ctx, request.params.eventId, null, request.query.treeSize),
  );
}
