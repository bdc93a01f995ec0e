import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { AddressKey } from "../../domain/address.js";
import { notFound, validationFailed, type ApiError } from "../../domain/errors.js";
import { STREAM_EVENT_TYPES, webhookTest } from "../../domain/events.js";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import { isoTime } from "../../domain/json.js";
import { DELIVERY_LIST_LIMIT_DEFAULT, MAX_RECOVERED_DELIVERIES, MAX_WEBHOOK_ENDPOINTS } from "../../domain/limits.js";
import { INVALID_TIME_MESSAGE } from "../../domain/messages.js";
import type { EndpointOperation, WebhookDelivery, WebhookEndpoint, WebhookEndpointChange } from "../../domain/webhooks.js";
import { newEndpointId } from "../../domain/webhooks.js";
import { newSecret, SECRET_ROTATION_OVERLAP_MS } from "../../outbox/signing.js";
import { RefusedTarget, resolveTarget } from "../../outbox/ssrf.js";
import { actorOf } from "../auth.js";
import type { ApiInstance, AppContext } from "../context.js";
import { DELIVERY_CURSOR } from "../cursor.js";
import { noStore } from "../no-store.js";
import {
  ContractParams,
  CreateWebhookEndpointBody,
  DeliveriesQuery,
  RecoverBody,
  UpdateWebhookEndpointBody,
  WebhookDeliveryParams,
  WebhookEndpointParams,
  WebhookResponses,
  responses,
} from "../schemas.js";

const tags = ["webhooks"];
const security = [{ bearer: [] }];

/** docs/api.md Webhooks: a contract's operator manages its endpoints and reads their deliveries. */
export function webhookRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  endpointRoutes(app, ctx);
  endpointChangeRoutes(app, ctx);
  endpointActionRoutes(app, ctx);
  deliveryRoutes(app, ctx);
}

function endpointJson(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    types: [...(endpoint.types ?? STREAM_EVENT_TYPES)],
    description: endpoint.description,
    disabled: endpoint.disabled,
    disabledReason: endpoint.disabledReason,
    createdAt: isoTime(endpoint.createdAtMs),
  };
}

function deliveryJson(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts.map((attempt) => ({
      at: isoTime(attempt.atMs),
      statusCode: attempt.statusCode,
      error: attempt.error,
      durationMs: attempt.durationMs,
    })),
    nextAttemptAt: delivery.nextAttemptAtMs === null ? null : isoTime(delivery.nextAttemptAtMs),
  };
}

/** The URL's target must be public (unless WEBHOOK_ALLOW_PRIVATE_URLS); the send checks it again. */
async function checkTarget(ctx: AppContext, url: string): Promise<void> {
  try {
    await resolveTarget(url, ctx.config.webhookAllowPrivateUrls);
  } catch (error) {
    if (!(error instanceof RefusedTarget)) throw error;
    // The console shows this message: it names the setting that lifts the refusal for tests and closed networks.
    const hint = error.forAddress ? "; only global unicast addresses are allowed (WEBHOOK_ALLOW_PRIVATE_URLS=true lifts this)" : "";
    throw validationFailed([{ path: "url", message: `${error.message}${hint}` }]);
  }
}

/** Answers that carry a secret are never stored by a cache or a browser. */

const noEndpoint = (endpointId: string) => notFound(`no webhook endpoint ${endpointId} for this contract`);

/** not_found → 404, disabled → 400 (nothing is sent to a disabled endpoint), done → its value. */
function operationValue<T>(operation: EndpointOperation<T>, endpointId: string, missing: () => ApiError = () => noEndpoint(endpointId)): T {
  if (operation.kind === "not_found") throw missing();
  if (operation.kind === "disabled") {
    throw validationFailed([{ path: "endpointId", message: "the endpoint is disabled; enable it first (PATCH with disabled: false)" }]);
  }
  return operation.value;
}

function endpointRoutes(app: ApiInstance, ctx: AppContext): void {
  app.post(
    "/webhook-endpoints",
    {
      config: { scope: "webhooks" },
      onRequest: noStore,
      schema: {
        tags,
        security,
        params: ContractParams,
        body: CreateWebhookEndpointBody,
        response: responses(WebhookResponses.created, 400, 401, 403),
      },
    },
    async (request) => {
      const { url, types, description } = request.body;
      await checkTarget(ctx, url);
      const secret = newSecret();
      const endpoint = {
        id: newEndpointId(),
        contract: request.grant!.contract,
        url,
        types: types ?? null,
        description: description ?? null,
        createdAtMs: ctx.clock.now(),
      };
      const result = await ctx.store.createWebhookEndpoint({ ...endpoint, secret }, MAX_WEBHOOK_ENDPOINTS);
      if (result.kind === "limit_reached") {
        throw validationFailed([{ path: "(body)", message: `a contract may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints` }]);
      }
      return { success: true as const, endpoint: endpointJson(result.endpoint), secret };
    },
  );
  app.get(
    "/webhook-endpoints",
    {
      config: { scope: "read" },
      schema: { tags, security, params: ContractParams, response: responses(WebhookResponses.endpoints, 400, 401, 403) },
    },
    async (request) => ({
      success: true as const,
      endpoints: (await ctx.store.listWebhookEndpoints(request.grant!.contract)).map(endpointJson),
    }),
  );
  app.get(
    "/webhook-endpoints/:endpointId",
    {
      config: { scope: "read" },
      schema: { tags, security, params: WebhookEndpointParams, response: responses(WebhookResponses.endpoint, 400, 401, 403, 404) },
    },
    async (request) => {
      const endpoint = await ctx.store.getWebhookEndpoint(request.grant!.contract, request.params.endpointId);
      if (!endpoint) throw noEndpoint(request.params.endpointId);
      return { success: true as const, endpoint: endpointJson(endpoint) };
    },
  );
}

function endpointChangeRoutes(app: ApiInstance, ctx: AppContext): void {
  app.patch(
    "/webhook-endpoints/:endpointId",
    {
      config: { scope: "webhooks" },
      schema: {
        tags,
        security,
        params: WebhookEndpointParams,
        body: UpdateWebhookEndpointBody,
        response: responses(WebhookResponses.endpoint, 400, 401, 403, 404),
      },
    },
    async (request) => {
      const { url, types, description, disabled } = request.body;
      if (url !== undefined) await checkTarget(ctx, url);
      const nowMs = ctx.clock.now();
      const change: WebhookEndpointChange = { url, types, description, disabled };
      if (disabled === true) change.disabledReason = `disabled by the operator at ${isoTime(nowMs)}`;
      const endpoint = await ctx.store.updateWebhookEndpoint(request.grant!.contract, request.params.endpointId, change, nowMs);
      if (!endpoint) throw noEndpoint(request.params.endpointId);
      return { success: true as const, endpoint: endpointJson(endpoint) };
    },
  );
  app.delete(
    "/webhook-endpoints/:endpointId",
    {
      config: { scope: "webhooks" },
      schema: { tags, security, params: WebhookEndpointParams, response: responses(WebhookResponses.deleted, 400, 401, 403, 404) },
    },
    async (request) => {
      if (!(await ctx.store.deleteWebhookEndpoint(request.grant!.contract, request.params.endpointId)))
        throw noEndpoint(request.params.endpointId);
      return { success: true as const };
    },
  );
}

function endpointActionRoutes(app: ApiInstance, ctx: AppContext): void {
  app.post(
    "/webhook-endpoints/:endpointId/rotate-secret",
    {
      config: { scope: "webhooks" },
      onRequest: noStore,
      schema: { tags, security, params: WebhookEndpointParams, response: responses(WebhookResponses.secret, 400, 401, 403, 404) },
    },
    async (request) => {
      const secret = newSecret();
      const { endpointId } = request.params;
      const rotated = await ctx.store.rotateWebhookSecret(
        request.grant!.contract,
        endpointId,
        secret,
        ctx.clock.now(),
        SECRET_ROTATION_OVERLAP_MS,
      );
      if (!rotated) throw noEndpoint(endpointId);
      return { success: true as const, secret };
    },
  );
  app.post(
    "/webhook-endpoints/:endpointId/test",
    {
      config: { scope: "webhooks" },
      schema: { tags, security, params: WebhookEndpointParams, response: responses(WebhookResponses.test, 400, 401, 403, 404) },
    },
    async (request) => {
      const contract: AddressKey = request.grant!.contract;
      const { endpointId } = request.params;
      const nowMs = ctx.clock.now();
      const operation = await ctx.store.createTestDelivery(
        contract,
        endpointId,
        webhookTest(contract, endpointId, nowMs, actorOf(request)),
        nowMs,
      );
      return { success: true as const, deliveryId: operationValue(operation, endpointId) };
    },
  );
  app.post(
    "/webhook-endpoints/:endpointId/recover",
    {
      config: { scope: "webhooks" },
      schema: {
        tags,
        security,
        params: WebhookEndpointParams,
        body: RecoverBody,
        response: responses(WebhookResponses.recovered, 400, 401, 403, 404),
      },
    },
    async (request) => {
      const sinceMs = Date.parse(request.body.since);
      if (Number.isNaN(sinceMs)) throw validationFailed([{ path: "since", message: INVALID_TIME_MESSAGE }]);
      const { endpointId } = request.params;
      const contract = request.grant!.contract;
      const operation = await ctx.store.recoverDeliveries(contract, endpointId, sinceMs, ctx.clock.now(), MAX_RECOVERED_DELIVERIES);
      return { success: true as const, requeued: operationValue(operation, endpointId) };
    },
  );
}

function deliveryRoutes(app: ApiInstance, ctx: AppContext): void {
  app.get(
    "/webhook-endpoints/:endpointId/deliveries",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: WebhookEndpointParams,
        querystring: DeliveriesQuery,
        response: responses(WebhookResponses.deliveries, 400, 401, 403, 404),
      },
    },
    async (request) => {
      const { status, cursor, limit } = request.query;
      const before = cursor === undefined ? undefined : decodeCursor(DELIVERY_CURSOR, cursor);
      const query = { status, before, limit: limit ?? DELIVERY_LIST_LIMIT_DEFAULT };
      const page = await ctx.store.listDeliveries(request.grant!.contract, request.params.endpointId, query);
      if (!page) throw noEndpoint(request.params.endpointId);
      return {
        success: true as const,
        deliveries: page.deliveries.map(deliveryJson),
        cursor: page.next && encodeCursor(DELIVERY_CURSOR, page.next),
      };
    },
  );
  app.post(
    "/webhook-endpoints/:endpointId/deliveries/:deliveryId/retry",
    {
      config: { scope: "webhooks" },
      schema: { tags, security, params: WebhookDeliveryParams, response: responses(WebhookResponses.delivery, 400, 401, 403, 404) },
    },
    async (request) => {
      const { endpointId, deliveryId } = request.params;
      const operation = await ctx.store.retryDelivery(request.grant!.contract, endpointId, deliveryId, ctx.clock.now());
      const delivery = operationValue(operation, endpointId, () => notFound(`no delivery ${deliveryId} of webhook endpoint ${endpointId}`));
      return { success: true as const, delivery: deliveryJson(delivery) };
    },
  );
}
