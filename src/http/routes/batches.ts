import { PAGE_LIMIT_DEFAULT } from "../../domain/limits.js";
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { ApiError, notFound, validationFailed } from "../../domain/errors.js";
import { alreadyExistsMessage, INVALID_TIME_MESSAGE } from "../../domain/messages.js";
import type { AddressKey } from "../../domain/address.js";
import { formatPoints } from "../../domain/points.js";
import type { ApiInstance, AppContext } from "../context.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { batchJson, batchWithTransfersText } from "../present.js";
import { validatorCompiler } from "../validation.js";
import { BatchParams, ContractParams, Responses, batchBodySchema, listQuerySchema, responses } from "../schemas.js";
import type { Actor } from "../../domain/api-keys.js";
import { actorOf } from "../auth.js";

const tags = ["batches"];
const security = [{ bearer: [] }];

export function batchRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  submitRoutes(app, ctx);
  readRoutes(app, ctx);
  cancelRoute(app, ctx);
}

/**
 * PUT (idempotent, the client names the batch) and POST (the service names it) share one path.
 * Their JSON bodies arrive as bytes (a scope of their own with a raw parser) and go whole to the
 * intake (../batch-intake.ts: parse, schema and ledger rules, in a worker thread beside the writer);
 * Fastify validates only the path parameters here, so the body schema serves the documentation.
 */
function submitRoutes(app: ApiInstance, ctx: AppContext): void {
  void app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    scope.setValidatorCompiler((route) => (route.httpPart === "body" ? () => true : validatorCompiler(route)));
    const body = batchBodySchema(ctx.config);
    scope.put(
      "/batches/:batchId",
      {
        config: { scope: "submit" },
        schema: {
          tags,
          security,
          params: BatchParams,
          body,
          response: responses(Responses.submitted, 400, 401, 403, "BATCH_ID_EXISTS", 413, 415, 422),
        },
      },
      async (request) => submit(ctx, request.grant!.contract, request.params.batchId, request.body, actorOf(request)),
    );
    scope.post(
      "/batches",
      {
        config: { scope: "submit" },
        schema: { tags, security, params: ContractParams, body, response: responses(Responses.submitted, 400, 401, 403, 413, 415, 422) },
      },
      async (request) => submit(ctx, request.grant!.contract, randomUUID(), request.body, actorOf(request)),
    );
  });
}

async function submit(ctx: AppContext, contract: AddressKey, batchId: string, body: unknown, submittedBy: Actor) {
  const answer = await ctx.intake.run({ body: body instanceof Uint8Array ? body : undefined, contract, batchId, nowMs: ctx.clock.now() });
  if (!answer.ok) throw new ApiError("VALIDATION_FAILED", answer.message, answer.details);
  const result = await ctx.store.submitBatch(answer.batch, submittedBy);
  switch (result.kind) {
    case "accepted":
      return { success: true as const, batchId };
    case "exists":
      throw new ApiError("BATCH_ID_EXISTS", alreadyExistsMessage("batch", batchId), {
        batchId,
        status: result.status,
        matchesRequest: result.matchesRequest,
      });
    case "insufficient":
      throw new ApiError("INSUFFICIENT_BALANCE", undefined, {
        available: formatPoints(result.available),
        requested: formatPoints(result.requested),
      });
  }
}

function readRoutes(app: ApiInstance, ctx: AppContext): void {
  app.get(
    "/batches",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: listQuerySchema(ctx.config),
        response: responses(Responses.batchList, 400, 401, 403),
      },
    },
    async (request) => {
      const query = request.query;
      const page = await ctx.store.listBatches(request.grant!.contract, {
        pointType: query.pointType,
        status: query.status,
        createdBeforeMs: parseTime(query.createdBefore, "createdBefore"),
        createdAfterMs: parseTime(query.createdAfter, "createdAfter"),
        sort: query.sort ?? "DESC",
        limit: query.limit ?? PAGE_LIMIT_DEFAULT,
        after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
      });
      return { success: true as const, batches: page.batches.map(batchJson), cursor: page.next && encodeCursor(page.next) };
    },
  );

  app.get(
    "/batches/:batchId",
    {
      config: { scope: "read" },
      schema: { tags, security, params: BatchParams, response: responses(Responses.batchWithTransfers, 400, 401, 403, 404) },
    },
    async (request, reply) => {
      const batch = await ctx.store.getBatch(request.grant!.contract, request.params.batchId);
      if (!batch) throw notFound(`no batch ${request.params.batchId} for this contract`);
      // Already JSON text (see batchWithTransfersText): with this type Fastify sends it as is.
      return reply.type("application/json; charset=utf-8").send(await batchWithTransfersText(batch));
    },
  );
}

function cancelRoute(app: ApiInstance, ctx: AppContext): void {
  app.delete(
    "/batches/:batchId",
    {
      config: { scope: "cancel" },
      schema: { tags, security, params: BatchParams, response: responses(Responses.batch, 400, 401, 403, 404, "BATCH_NOT_CANCELLABLE") },
    },
    async (request) => {
      const { batchId } = request.params;
      const result = await ctx.store.cancelBatch(request.grant!.contract, batchId, ctx.clock.now(), actorOf(request));
      if (result.kind === "not_found") throw notFound(`no batch ${batchId} for this contract`);
      if (result.kind === "not_cancellable") {
        throw new ApiError(
          "BATCH_NOT_CANCELLABLE",
          `batch ${batchId} can no longer be cancelled (status ${result.batch.status}, finalizeAt passed or finalizing)`,
          {
            batchId,
            status: result.batch.status,
          },
        );
      }
      return { success: true as const, batch: batchJson(result.batch) };
    },
  );
}

/** createdBefore/createdAfter: the schema checked the shape; a shape can still name no real day. */
function parseTime(value: string | undefined, path: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value.slice(0, 10)) {
    throw validationFailed([{ path, message: INVALID_TIME_MESSAGE }]);
  }
  return ms;
}
