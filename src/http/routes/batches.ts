import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Static } from "@sinclair/typebox";
import { ApiError, notFound, validationFailed } from "../../domain/errors.js";
import type { AddressKey } from "../../domain/address.js";
import { formatPoints } from "../../domain/points.js";
import { toNewBatch, type BatchBody } from "../../domain/validate.js";
import { contractRateLimit, type AppContext } from "../context.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { batchJson, batchWithTransfersJson } from "../present.js";
import { fieldErrorsOf } from "../validation.js";
import {
  BatchParams,
  ContractParams,
  LIST_LIMIT_DEFAULT,
  ListQuery,
  Responses,
  batchBodySchema,
  responses,
} from "../schemas.js";

const tags = ["batches"];
const security = [{ bearer: [] }];

export function batchRoutes(app: FastifyInstance, ctx: AppContext): void {
  const body = batchBodySchema(ctx.config);
  const submit = async (contract: AddressKey, batchId: string, request: FastifyRequest<{ Body: BatchBody }>) => {
    // The schema's findings are attached, not thrown, so the ledger-rule checks can add theirs to the same answer.
    const schemaErrors = request.validationError ? fieldErrorsOf(request.validationError.validation) : [];
    const batch = toNewBatch(contract, batchId, request.body, ctx.config, ctx.clock.now(), schemaErrors);
    const result = await ctx.store.submitBatch(batch);
    switch (result.kind) {
      case "accepted":
        ctx.metrics.batchesAccepted.inc();
        ctx.metrics.transfersAccepted.inc(batch.transfers.length);
        return { success: true as const, batchId };
      case "exists":
        throw new ApiError("BATCH_ID_EXISTS", `batch ${batchId} already exists`, {
          batchId,
          status: result.status,
          matchesRequest: result.matchesRequest,
        });
      case "insufficient":
        throw new ApiError("INSUFFICIENT_BALANCE", "the batch total exceeds the available balance", {
          available: formatPoints(result.available),
          requested: formatPoints(result.requested),
        });
    }
  };

  app.put<{ Params: Static<typeof BatchParams>; Body: BatchBody }>(
    "/batches/:batchId",
    { config: contractRateLimit(ctx), attachValidation: true, schema: { tags, security, params: BatchParams, body, response: responses(Responses.submitted, 400, 401, 403, 409, 413, 415, 422) } },
    async (request) => submit(request.grant!.contract, request.params.batchId, request),
  );

  app.post<{ Params: Static<typeof ContractParams>; Body: BatchBody }>(
    "/batches",
    { config: contractRateLimit(ctx), attachValidation: true, schema: { tags, security, params: ContractParams, body, response: responses(Responses.submitted, 400, 401, 403, 413, 415, 422) } },
    async (request) => submit(request.grant!.contract, randomUUID(), request),
  );

  app.get<{ Params: Static<typeof ContractParams>; Querystring: Static<typeof ListQuery> }>(
    "/batches",
    { config: contractRateLimit(ctx), schema: { tags, security, params: ContractParams, querystring: ListQuery, response: responses(Responses.batchList, 400, 401, 403) } },
    async (request) => {
      const query = request.query;
      const page = await ctx.store.listBatches(request.grant!.contract, {
        pointType: query.pointType,
        status: query.status,
        createdBeforeMs: parseTime(query.createdBefore, "createdBefore"),
        createdAfterMs: parseTime(query.createdAfter, "createdAfter"),
        sort: query.sort ?? "DESC",
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
      });
      return { success: true as const, batches: page.batches.map(batchJson), cursor: page.next && encodeCursor(page.next) };
    },
  );

  app.get<{ Params: Static<typeof BatchParams> }>(
    "/batches/:batchId",
    { config: contractRateLimit(ctx), schema: { tags, security, params: BatchParams, response: responses(Responses.batchWithTransfers, 400, 401, 403, 404) } },
    async (request) => {
      const batch = await ctx.store.getBatch(request.grant!.contract, request.params.batchId);
      if (!batch) throw notFound(`no batch ${request.params.batchId} for this contract`);
      return { success: true as const, batch: batchWithTransfersJson(batch) };
    },
  );

  app.delete<{ Params: Static<typeof BatchParams> }>(
    "/batches/:batchId",
    { config: contractRateLimit(ctx), schema: { tags, security, params: BatchParams, response: responses(Responses.batch, 400, 401, 403, 404, 409) } },
    async (request) => {
      const { batchId } = request.params;
      const result = await ctx.store.cancelBatch(request.grant!.contract, batchId, ctx.clock.now());
      if (result.kind === "not_found") throw notFound(`no batch ${batchId} for this contract`);
      if (result.kind === "not_cancellable") {
        throw new ApiError("BATCH_NOT_CANCELLABLE", `batch ${batchId} can no longer be cancelled (status ${result.batch.status}, finalizeAt passed or finalizing)`, {
          batchId,
          status: result.batch.status,
        });
      }
      if (result.changed) ctx.metrics.batchesCancelled.inc();
      return { success: true as const, batch: batchJson(result.batch) };
    },
  );
}

/** createdBefore/createdAfter: the schema checked the shape; a shape can still name no real day. */
function parseTime(value: string | undefined, path: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value.slice(0, 10)) {
    throw validationFailed([{ path, message: "is not a valid ISO 8601 time" }]);
  }
  return ms;
}
