import {
  API_KEY_NAME_MAX_LENGTH,
  BOARD_CURSOR_MAX_LENGTH,
  CURSOR_MAX_LENGTH,
  DELIVERY_LIST_LIMIT_MAX,
  EVENT_TYPES_MAX_LENGTH,
  PAGE_LIMIT_MAX,
  WEBHOOK_DESCRIPTION_MAX_LENGTH,
  WEBHOOK_URL_MAX_LENGTH,
} from "../domain/limits.js";
import { Type, type TSchema } from "@sinclair/typebox";
import type { Config } from "../config.js";
import { ADDRESS_PATTERN } from "../domain/address.js";
import { API_KEY_SCOPES } from "../domain/api-keys.js";
import { ASSET_PATTERN, BATCH_STATUSES, ID_MAX_LENGTH, ID_PATTERN, MAX_BLOCK, type PointType } from "../domain/batch.js";
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from "../domain/errors.js";
import { POINTS_PATTERN, POINTS_STRING_MAX_LENGTH } from "../domain/points.js";
import type { InputKind } from "../domain/messages.js";
import { INPUT_KIND_KEYWORD, MESSAGE_KEYWORD } from "./validation.js";
import * as docs from "./openapi-docs.js";
import { STREAM_EVENT_TYPES } from "../domain/events.js";
import { DELIVERY_ID_PATTERN, DELIVERY_STATUSES, ENDPOINT_ID_PATTERN } from "../domain/webhooks.js";
import { SNAPSHOT_DECIMALS_MAX, SNAPSHOT_DECIMALS_MIN, SNAPSHOT_MEASURES } from "../domain/snapshot.js";
import { ZONED_TIME_PATTERN } from "../domain/times.js";

/**
 * One set of TypeBox schemas drives request validation, TypeScript types and the OpenAPI
 * document. Bodies are closed objects (extra fields rejected) and are never coerced.
 */

/** ISO 8601 UTC with optional milliseconds, as printed by the service. */
export const ISO_TIME_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$";
/**
 * Every string that enters has a pattern, so text a database cannot store (a NUL byte, invalid
 * UTF-16) is refused as 400 where it enters, never reaching SQL.
 */
const CURSOR_PATTERN = "^[A-Za-z0-9_-]+$";
/**
 * challengeData and signature: printable ASCII. A wrong value of that form is still the 401 of
 * docs/api.md ("a bad challenge or signature"); control characters and NUL are malformed input (400).
 */
const PRINTABLE_PATTERN = "^[\\x20-\\x7e]+$";

/** Marks what a field holds, so its refusal quotes the value with the message the client gives too (src/domain/messages.ts). */
const input = (kind: InputKind) => ({ [INPUT_KIND_KEYWORD]: kind });

/** A time a client writes in a query or body (createdBefore, since). */
const IsoTime = Type.String({ ...input("time"), pattern: ISO_TIME_PATTERN });
/** A listing cursor, passed back as the service gave it. */
const Cursor = Type.String({ ...input("cursor"), pattern: CURSOR_PATTERN, maxLength: CURSOR_MAX_LENGTH });

export const Address = Type.String({
  ...input("address"),
  pattern: ADDRESS_PATTERN,
  description: "0x + 40 hex digits; EIP-55 checksum checked when mixed case",
});
export const Points = Type.String({
  ...input("points"),
  pattern: POINTS_PATTERN,
  maxLength: POINTS_STRING_MAX_LENGTH,
  description: "decimal points, up to 12 fractional digits",
});
export const Id = Type.String({ ...input("id"), pattern: ID_PATTERN, maxLength: ID_MAX_LENGTH, minLength: 1 });
/** One of the configured point types (POINT_TYPES); an enum, so a refusal names the allowed ones. */
export function pointTypeSchema(config: Pick<Config, "pointTypes">) {
  return Type.Unsafe<PointType>({ type: "string", enum: [...config.pointTypes], description: "a configured point type (POINT_TYPES)" });
}
export const StatusSchema = Type.Union(BATCH_STATUSES.map((s) => Type.Literal(s)));
const Time = Type.String({ format: "date-time", description: "ISO 8601 UTC with milliseconds" });
const NullableTime = Type.Union([Time, Type.Null()]);

const closed = { additionalProperties: false } as const;

export const ContractParams = Type.Object({ contractAddress: Address }, closed);
export const BatchParams = Type.Object({ contractAddress: Address, batchId: Id }, closed);
export const CreditParams = Type.Object({ contractAddress: Address, creditId: Id }, closed);

export function batchBodySchema(config: Config) {
  return Type.Object(
    {
      pointType: pointTypeSchema(config),
      transfers: Type.Array(Type.Object({ toAddress: Address, points: Points }, closed), {
        ...input("transfers"),
        minItems: 1,
        maxItems: config.maxTransfersPerBatch,
      }),
      secondsToFinalize: Type.Optional(
        Type.Union([Type.Integer({ minimum: config.minimumFinalizeSeconds, maximum: config.defaultFinalizeSeconds }), Type.Null()], {
          [MESSAGE_KEYWORD]: `must be an integer from ${config.minimumFinalizeSeconds} to ${config.defaultFinalizeSeconds} (seconds), or null for the default`,
        }),
      ),
    },
    { ...closed, ...docs.batchBodyDocs(config) },
  );
}

export function listQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    {
      pointType: Type.Optional(pointTypeSchema(config)),
      status: Type.Optional(StatusSchema),
      createdBefore: Type.Optional(IsoTime),
      createdAfter: Type.Optional(IsoTime),
      sort: Type.Optional(Type.Union([Type.Literal("ASC"), Type.Literal("DESC")])),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
      cursor: Type.Optional(Cursor),
    },
    closed,
  );
}

// --- Events (docs/api.md Events): the pull API, the admin listing and the stream. ---------------------

/** Comma-separated event type names; the route checks each against the types the listing allows. */
const EVENT_TYPES_PATTERN = "^[a-z_.,]+$";

const eventTypesQuery = Type.String({
  pattern: EVENT_TYPES_PATTERN,
  maxLength: EVENT_TYPES_MAX_LENGTH,
  description: "comma-separated event types",
});
const eventCursorQuery = Type.String({
  ...input("cursor"),
  pattern: CURSOR_PATTERN,
  maxLength: CURSOR_MAX_LENGTH,
  description: "a cursor from an earlier answer",
});

export const EventsQuery = Type.Object(
  {
    after: Type.Optional(eventCursorQuery),
    types: Type.Optional(eventTypesQuery),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
  },
  closed,
);
/** The stream also resumes after the Last-Event-ID header, which wins over `after`. */
export const EventStreamQuery = Type.Object({ after: Type.Optional(eventCursorQuery), types: Type.Optional(eventTypesQuery) }, closed);

/**
 * Who caused a change (API.md Events, actor; src/domain/actors.ts). One object with optional
 * fields rather than a union of four: a union makes the response serializer try each branch for
 * every batch of a 1,000-batch page, and the fields say it as clearly.
 */
export const ActorJson = Type.Object(
  {
    type: Type.Union([
      Type.Literal("operator"),
      Type.Literal("api_key"),
      Type.Literal("admin"),
      Type.Literal("system"),
      Type.Literal("chain"),
    ]),
    address: Type.Optional(Type.String({ description: "operator: its address, EIP-55" })),
    id: Type.Optional(Type.String({ description: "api_key: the key's id" })),
    name: Type.Optional(Type.String({ description: "api_key: the key's name" })),
    chainId: Type.Optional(Type.Integer({ description: "chain: the chain's id" })),
    blockNumber: Type.Optional(Type.Integer({ description: "chain: the block of the change, or the block read at" })),
    transactionHash: Type.Optional(
      Type.Union([Type.String(), Type.Null()], { description: "chain: the change's transaction; null when found by a read" }),
    ),
  },
  {
    description:
      'who caused it: {type: "operator", address}, {type: "api_key", id, name}, {type: "admin"}, {type: "system"} (the service itself, e.g. finalization) or {type: "chain", chainId, blockNumber, transactionHash} (a change read from the operator registry)',
  },
);

/** The Event object; `data` depends on `type` (src/domain/events.ts EventDataByType). */
const EventJson = Type.Object({
  id: Type.String(),
  type: Type.String(),
  contractAddress: Type.Union([Type.String(), Type.Null()]),
  occurredAt: Time,
  actor: ActorJson,
  data: Type.Unknown(),
  logIndex: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: "its place in the transparency log once logged (about a second after its commit), null before",
  }),
});
export const EventResponses = {
  page: Type.Object(
    { success: Type.Literal(true), events: Type.Array(EventJson), cursor: Type.String(), hasMore: Type.Boolean() },
    docs.responseDocs.eventPage,
  ),
};

export const ChallengeBody = Type.Object({ contractAddress: Address, operatorAddress: Address }, { ...closed, ...docs.challengeBodyDocs });
export const SolveBody = Type.Object(
  {
    challengeData: Type.String({ pattern: PRINTABLE_PATTERN, maxLength: 256 }),
    signature: Type.String({ pattern: PRINTABLE_PATTERN, maxLength: 4096, description: "0x hex ERC-191 signature" }),
  },
  { ...closed, ...docs.solveBodyDocs },
);
export const OperatorBody = Type.Object({ operatorAddress: Address }, { ...closed, ...docs.operatorBodyDocs });
/** GET /v1/admin/contracts: cursor paging only, with the listings' limit bounds. */
export const ContractsQuery = Type.Object(
  {
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
  },
  closed,
);
/** `asset` and `block` say what the credited points were earned on; they feed byAsset. */
export function creditBodySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    {
      pointType: pointTypeSchema(config),
      points: Points,
      asset: Type.Optional(Type.Union([Type.String({ pattern: ASSET_PATTERN, maxLength: 16 }), Type.Null()])),
      block: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_BLOCK }), Type.Null()])),
    },
    { ...closed, ...docs.creditBodyDocs(config) },
  );
}

export const BatchJson = Type.Object({
  id: Type.String(),
  contractAddress: Type.String(),
  pointType: Type.String(),
  status: Type.String(),
  points: Type.String(),
  transferCount: Type.Integer(),
  secondsToFinalize: Type.Integer(),
  createdAt: Time,
  finalizeAt: Time,
  updatedAt: NullableTime,
  finalizedAt: NullableTime,
  cancelledAt: NullableTime,
  submittedBy: ActorJson,
  cancelledBy: Type.Union([ActorJson, Type.Null()]),
});

const TransferJson = Type.Object({ toAddress: Type.String(), points: Type.String() });
const AssetEarningsJson = Type.Object({ earnedCumulative: Type.String(), earnedCumulativeBlock: Type.Integer() });

/**
 * A balance: every configured asset in byAsset, and any other asset a credit named. An answer with
 * `asOf` leaves byAsset out (API.md "Leaderboards and history"), so it is optional here.
 */
function balanceJsonSchema(config: Pick<Config, "balanceAssets">) {
  return Type.Object({
    available: Type.String(),
    pendingSent: Type.String(),
    earnedCumulative: Type.String(),
    receivedCumulative: Type.String(),
    finalizedSentCumulative: Type.String(),
    byAsset: Type.Optional(
      Type.Object(Object.fromEntries(config.balanceAssets.map((asset) => [asset, AssetEarningsJson])), {
        additionalProperties: AssetEarningsJson,
        description: "absent in an answer with asOf",
      }),
    ),
  });
}

/** One key per configured point type. */
export function balancesResponseSchema(config: Pick<Config, "pointTypes" | "balanceAssets">) {
  const balance = balanceJsonSchema(config);
  return ok(
    { balancesByPointType: Type.Object(Object.fromEntries(config.pointTypes.map((pointType) => [pointType, balance]))) },
    docs.balancesDocs(config),
  );
}

/** A 200 answer; `annotations` are its OpenAPI description and examples (openapi-docs.ts). */
const ok = <T extends Record<string, TSchema>>(fields: T, annotations: docs.SchemaDocs = {}) =>
  Type.Object({ success: Type.Literal(true), ...fields }, annotations);

export const ErrorJson = Type.Object({
  success: Type.Literal(false),
  error: Type.Object({
    code: Type.Union(Object.keys(ERROR_STATUS).map((code) => Type.Literal(code))),
    message: Type.String(),
    details: Type.Optional(Type.Unknown()),
  }),
});

export const Responses = {
  submitted: ok({ batchId: Type.String() }, docs.responseDocs.submitted),
  batch: ok({ batch: BatchJson }, docs.responseDocs.batch),
  batchWithTransfers: ok(
    { batch: Type.Intersect([BatchJson, Type.Object({ transfers: Type.Array(TransferJson) })]) },
    docs.responseDocs.batchWithTransfers,
  ),
  batchList: ok({ batches: Type.Array(BatchJson), cursor: Type.Union([Type.String(), Type.Null()]) }, docs.responseDocs.batchList),
  challenge: ok({ challengeData: Type.String(), message: Type.String() }, docs.responseDocs.challenge),
  solved: ok({ bearerToken: Type.String(), expiresAt: Time }, docs.responseDocs.solved),
  operator: ok({ contractAddress: Type.String(), operatorAddress: Type.String() }, docs.responseDocs.operator),
  contractList: ok(
    {
      contracts: Type.Array(Type.Object({ contractAddress: Type.String(), operatorAddress: Type.String(), updatedAt: Time })),
      cursor: Type.Union([Type.String(), Type.Null()]),
    },
    docs.responseDocs.contractList,
  ),
  credited: ok({ creditId: Type.String() }, docs.responseDocs.credited),
  health: ok({ status: Type.String() }, docs.responseDocs.health),
  ready: ok({ status: Type.String() }, docs.responseDocs.ready),
  chain: ok(
    {
      chainId: Type.Union([Type.Integer(), Type.Null()]),
      registry: Type.Union([Type.String(), Type.Null()]),
      blockTag: Type.String(),
      blockNumber: Type.Union([Type.Integer(), Type.Null()]),
      readAt: Type.Union([Type.String(), Type.Null()]),
      state: Type.Union([Type.Literal("ok"), Type.Literal("unavailable")]),
    },
    docs.responseDocs.chain,
  ),
};

/** GET /v1/parameters: the values in force, which are also its example. */
export function parametersResponseSchema(parameters: Record<string, unknown>) {
  return ok(
    { parameters: Type.Object({}, { additionalProperties: true }) },
    { description: "The parameters in force.", examples: [{ success: true, parameters }] },
  );
}

/** A 200 that is not JSON (the event stream, metrics): documented by media type, sent as it is. */
interface TextResponse {
  description: string;
  content: Record<string, unknown>;
}
export function textResponse(mediaType: string, description: string, example: string): TextResponse {
  return { description, content: { [mediaType]: { schema: Type.String(), example } } };
}

/**
 * Response schemas for a route: its 200 shape plus the error body of each error it can answer,
 * named by status (every catalogue code of that status) or by code (a route that answers only one
 * of a status's codes, e.g. one 409). Each error answer carries its codes' description and examples.
 */
export function responses(success: TSchema | TextResponse, ...errors: (number | ErrorCode)[]): Record<number, TSchema | TextResponse> {
  const result: Record<number, TSchema | TextResponse> = { 200: success };
  const codesByStatus = new Map<number, ErrorCode[]>();
  for (const error of errors) {
    const status = typeof error === "number" ? error : ERROR_STATUS[error];
    const codes = typeof error === "number" ? ERROR_CODES.filter((code) => ERROR_STATUS[code] === error) : [error];
    codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), ...codes]);
  }
  for (const [status, codes] of codesByStatus) result[status] = Type.Object(ErrorJson.properties, docs.errorDocs(codes));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Webhooks (docs/api.md Webhooks; routes/webhooks.ts).

/** Printable ASCII without spaces (an international host name is sent in its xn-- form); the target checks follow in the route. */
const WebhookUrl = Type.String({
  ...input("webhookUrl"),
  pattern: "^https?://[\\x21-\\x7e]+$",
  maxLength: WEBHOOK_URL_MAX_LENGTH,
  description: "http:// or https:// URL",
});
const WebhookDescription = Type.String({ pattern: "^[^\\x00-\\x1f\\x7f]*$", maxLength: WEBHOOK_DESCRIPTION_MAX_LENGTH });
const WebhookEventTypes = Type.Array(Type.Union(STREAM_EVENT_TYPES.map((type) => Type.Literal(type))), {
  minItems: 1,
  maxItems: STREAM_EVENT_TYPES.length,
  uniqueItems: true,
});
const EndpointId = Type.String({ pattern: ENDPOINT_ID_PATTERN });
const DeliveryStatusSchema = Type.Union(DELIVERY_STATUSES.map((status) => Type.Literal(status)));

export const WebhookEndpointParams = Type.Object({ contractAddress: Address, endpointId: EndpointId }, closed);
export const WebhookDeliveryParams = Type.Object(
  { contractAddress: Address, endpointId: EndpointId, deliveryId: Type.String({ pattern: DELIVERY_ID_PATTERN }) },
  closed,
);
export const CreateWebhookEndpointBody = Type.Object(
  { url: WebhookUrl, types: Type.Optional(WebhookEventTypes), description: Type.Optional(Type.Union([WebhookDescription, Type.Null()])) },
  { ...closed, ...docs.createWebhookBodyDocs },
);
/** `types: null` subscribes to every type again. */
export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    types: Type.Optional(Type.Union([WebhookEventTypes, Type.Null()])),
    description: Type.Optional(Type.Union([WebhookDescription, Type.Null()])),
    disabled: Type.Optional(Type.Boolean()),
  },
  { ...closed, ...docs.updateWebhookBodyDocs },
);
export const DeliveriesQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatusSchema),
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DELIVERY_LIST_LIMIT_MAX })),
  },
  closed,
);
export const RecoverBody = Type.Object({ since: IsoTime }, { ...closed, ...docs.recoverBodyDocs });

const WebhookEndpointJson = Type.Object({
  id: Type.String(),
  url: Type.String(),
  types: Type.Array(Type.String()),
  description: Type.Union([Type.String(), Type.Null()]),
  disabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  createdAt: Time,
});
const DeliveryJson = Type.Object({
  id: Type.String(),
  eventId: Type.String(),
  eventType: Type.String(),
  status: Type.String(),
  attempts: Type.Array(
    Type.Object({
      at: Time,
      statusCode: Type.Union([Type.Integer(), Type.Null()]),
      error: Type.Union([Type.String(), Type.Null()]),
      durationMs: Type.Integer(),
    }),
  ),
  nextAttemptAt: NullableTime,
});

export const WebhookResponses = {
  created: ok({ endpoint: WebhookEndpointJson, secret: Type.String() }, docs.responseDocs.webhookCreated),
  endpoint: ok({ endpoint: WebhookEndpointJson }, docs.responseDocs.webhookEndpoint),
  endpoints: ok({ endpoints: Type.Array(WebhookEndpointJson) }, docs.responseDocs.webhookEndpoints),
  deleted: ok({}, docs.responseDocs.webhookDeleted),
  secret: ok({ secret: Type.String() }, docs.responseDocs.webhookSecret),
  test: ok({ deliveryId: Type.String() }, docs.responseDocs.webhookTest),
  deliveries: ok(
    { deliveries: Type.Array(DeliveryJson), cursor: Type.Union([Type.String(), Type.Null()]) },
    docs.responseDocs.webhookDeliveries,
  ),
  delivery: ok({ delivery: DeliveryJson }, docs.responseDocs.webhookDelivery),
  recovered: ok({ requeued: Type.Integer() }, docs.responseDocs.webhookRecovered),
};

// ---------------------------------------------------------------------------------------------
// API keys (API.md "API keys (backends)"; routes/api-keys.ts). The body's rules beyond its shape
// (a future expiresAt) are checked by domain/api-keys.ts toApiKeyRequest.

const ApiKeyId = Type.String({ pattern: "^[A-Za-z0-9_]+$", maxLength: 64 });
export const ApiKeyParams = Type.Object({ contractAddress: Address, keyId: ApiKeyId }, closed);
export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: API_KEY_NAME_MAX_LENGTH, pattern: "^[^\\x00-\\x1f\\x7f-\\x9f]+$" }),
    scopes: Type.Array(Type.Union(API_KEY_SCOPES.map((scope) => Type.Literal(scope))), {
      minItems: 1,
      maxItems: API_KEY_SCOPES.length,
      uniqueItems: true,
    }),
    expiresAt: Type.Optional(Type.Union([IsoTime, Type.Null()])),
  },
  { ...closed, ...docs.createApiKeyBodyDocs },
);
const ApiKeyJson = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  prefix: Type.String(),
  createdAt: Time,
  createdBy: ActorJson,
  expiresAt: NullableTime,
  lastUsedAt: NullableTime,
  revokedAt: NullableTime,
  revokedReason: Type.Union([Type.String(), Type.Null()]),
});
export const ApiKeyResponses = {
  created: ok({ apiKey: ApiKeyJson, secret: Type.String() }, docs.responseDocs.apiKeyCreated),
  apiKey: ok({ apiKey: ApiKeyJson }, docs.responseDocs.apiKey),
  apiKeys: ok({ apiKeys: Type.Array(ApiKeyJson) }, docs.responseDocs.apiKeys),
  revoked: ok({ apiKey: ApiKeyJson }, docs.responseDocs.apiKeyRevoked),
};

// ---------------------------------------------------------------------------------------------
// Transfers, exports and snapshots (docs/api.md; routes/transfers.ts, routes/snapshots.ts).

export function transfersQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    {
      toAddress: Type.Optional(Address),
      pointType: Type.Optional(pointTypeSchema(config)),
      status: Type.Optional(StatusSchema),
      cursor: Type.Optional(Cursor),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
    },
    closed,
  );
}
/** The CSV export takes the same filters, without paging. */
export function transfersCsvQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    { toAddress: Type.Optional(Address), pointType: Type.Optional(pointTypeSchema(config)), status: Type.Optional(StatusSchema) },
    closed,
  );
}
export function balancesCsvQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object({ pointType: Type.Optional(pointTypeSchema(config)) }, closed);
}
export const AddressParams = Type.Object({ address: Address }, closed);
export const SnapshotParams = Type.Object({ snapshotId: Id }, closed);
export const SnapshotProofParams = Type.Object({ snapshotId: Id, address: Address }, closed);
export function snapshotBodySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    {
      pointType: pointTypeSchema(config),
      measure: Type.Optional(Type.Union(SNAPSHOT_MEASURES.map((measure) => Type.Literal(measure)))),
      decimals: Type.Optional(Type.Integer({ minimum: SNAPSHOT_DECIMALS_MIN, maximum: SNAPSHOT_DECIMALS_MAX })),
      asOf: Type.Optional(
        Type.String({
          ...input("time"),
          pattern: ZONED_TIME_PATTERN,
          description: "ISO 8601 time with a zone (Z or ±hh:mm), at least 60 s in the past: the balances as they stood then",
        }),
      ),
    },
    { ...closed, ...docs.snapshotBodyDocs(config) },
  );
}

const TransferRowJson = Type.Object({
  batchId: Type.String(),
  toAddress: Type.String(),
  pointType: Type.String(),
  points: Type.String(),
  status: Type.String(),
  createdAt: Time,
  finalizeAt: Time,
  finalizedAt: NullableTime,
});
const SnapshotJson = Type.Object({
  id: Type.String(),
  pointType: Type.String(),
  measure: Type.String(),
  decimals: Type.Integer(),
  asOf: NullableTime,
  takenAt: Time,
  root: Type.String(),
  leafCount: Type.Integer(),
  total: Type.String(),
});

export const ExportResponses = {
  transfers: ok({ transfers: Type.Array(TransferRowJson), cursor: Type.Union([Type.String(), Type.Null()]) }, docs.payoutDocs.transfers),
  /** A streamed text/csv body (documented, not serialized by a schema). */
  csv: textResponse("text/csv", "text/csv with a header row, streamed", docs.csvExample),
  addressBalances(config: Pick<Config, "pointTypes" | "balanceAssets">) {
    const balances = balancesResponseSchema(config);
    return ok({ address: Type.String(), balancesByPointType: balances.properties.balancesByPointType }, docs.addressBalancesDocs(config));
  },
  snapshot: ok({ snapshot: SnapshotJson }, docs.payoutDocs.snapshot),
  proof: ok(
    { address: Type.String(), amount: Type.String(), points: Type.String(), proof: Type.Array(Type.String()) },
    docs.payoutDocs.proof,
  ),
  tree: Type.Unknown({ description: "the StandardMerkleTree dump (format standard-v1) as JSON, streamed", examples: [docs.treeExample] }),
};

// ---------------------------------------------------------------------------------------------
// Leaderboards and history (API.md "Leaderboards and history"; routes/leaderboards.ts, and the
// `asOf` of the balance routes). The rules beyond the form (a day that exists, to after from, a
// time not in the future, a cursor of this board) are the routes'.

/** A whole UTC day, `YYYY-MM-DD`. */
const day = (description: string) => Type.String({ ...input("day"), pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description });
/** A time with its zone (`Z` or an offset); milliseconds optional. */
const ZonedTime = Type.String({
  ...input("zonedTime"),
  pattern: ZONED_TIME_PATTERN,
  description: "ISO 8601 time with a zone (Z or ±hh:mm), milliseconds optional; not in the future",
});

export const BalancesAsOfQuery = Type.Object({ asOf: Type.Optional(ZonedTime) }, closed);

export const LeaderboardStandingParams = Type.Object({ contractAddress: Address, address: Address }, closed);

function boardWindowFields(config: Pick<Config, "pointTypes">) {
  return {
    pointType: pointTypeSchema(config),
    from: Type.Optional(day("the first day counted, YYYY-MM-DD (UTC, inclusive); absent: from the start")),
    to: Type.Optional(day("the day after the last one counted, YYYY-MM-DD (UTC, exclusive); absent: up to now")),
  };
}

export function leaderboardQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(
    {
      ...boardWindowFields(config),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
      cursor: Type.Optional(Type.String({ ...input("cursor"), pattern: CURSOR_PATTERN, maxLength: BOARD_CURSOR_MAX_LENGTH })),
    },
    closed,
  );
}

export function leaderboardStandingQuerySchema(config: Pick<Config, "pointTypes">) {
  return Type.Object(boardWindowFields(config), closed);
}

const NullableDay = Type.Union([Type.String(), Type.Null()]);

export const LeaderboardResponses = {
  page: ok(
    {
      pointType: Type.String(),
      from: NullableDay,
      to: NullableDay,
      participants: Type.Integer(),
      through: Type.String({ format: "date-time" }),
      entries: Type.Array(Type.Object({ rank: Type.Integer(), address: Type.String(), points: Type.String() })),
      cursor: Type.Union([Type.String(), Type.Null()]),
    },
    docs.leaderboardDocs.page,
  ),
  standing: ok(
    {
      address: Type.String(),
      rank: Type.Union([Type.Integer(), Type.Null()]),
      points: Type.String(),
      participants: Type.Integer(),
      through: Type.String({ format: "date-time" }),
    },
    docs.leaderboardDocs.standing,
  ),
};

// ---------------------------------------------------------------------------------------------
// Transparency log (docs/api.md Transparency log; routes/log.ts).

/** A tree size or leaf count: a whole number below 2^53 (domain/tlog.ts MAX_TREE_SIZE). */
const TreeSize = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Base64Hash = Type.String({ description: "a SHA-256 hash, base64" });

export const EventProofParams = Type.Object({ contractAddress: Address, eventId: Type.String({ minLength: 1, maxLength: 100 }) }, closed);
export const AdminEventProofParams = Type.Object({ eventId: Type.String({ minLength: 1, maxLength: 100 }) }, closed);
export const EventProofQuery = Type.Object(
  { treeSize: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })) },
  closed,
);
export const ConsistencyQuery = Type.Object({ from: TreeSize, to: TreeSize }, closed);

export const LogResponses = {
  inclusion: Type.Object(
    {
      success: Type.Literal(true),
      eventId: Type.String(),
      logIndex: TreeSize,
      treeSize: TreeSize,
      leafHash: Base64Hash,
      proof: Type.Array(Base64Hash, { description: "RFC 9162 §2.1.3 inclusion proof, leaf to root" }),
    },
    docs.logResponseDocs.inclusion,
  ),
  status: Type.Object(
    {
      success: Type.Literal(true),
      treeSize: TreeSize,
      checkpointSize: Type.Union([TreeSize, Type.Null()]),
      checkpointSignedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
      oldestUnloggedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
      lagSeconds: Type.Number({ minimum: 0, description: "age of oldestUnloggedAt in seconds, to the millisecond (0 when none)" }),
    },
    docs.logResponseDocs.status,
  ),
  epochs: Type.Object(
    {
      success: Type.Literal(true),
      epochs: Type.Array(
        Type.Object({
          epoch: Type.Integer({ minimum: 1 }),
          origin: Type.String(),
          startedAt: Type.String({ format: "date-time" }),
          note: Type.String({ description: "the announcement, a C2SP signed note (points-ledger log epoch)" }),
        }),
      ),
    },
    docs.logResponseDocs.epochs,
  ),
  consistency: Type.Object(
    {
      success: Type.Literal(true),
      from: TreeSize,
      to: TreeSize,
      proof: Type.Array(Base64Hash, { description: "RFC 9162 §2.1.4 consistency proof" }),
    },
    docs.logResponseDocs.consistency,
  ),
};
