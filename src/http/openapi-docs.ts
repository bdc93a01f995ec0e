import type { RouteOptions } from "fastify";
import type { Config } from "../config.js";
import { ERROR_CATALOGUE, type ErrorCode, type ErrorDetailsByCode } from "../domain/errors.js";
import { formatPoints, parsePoints } from "../domain/points.js";
import { MAX_TRANSFERS_SCANNED_PER_PAGE } from "../domain/limits.js";
import { pageSecurityHeaders } from "./security-headers.js";

/**
 * What makes `/docs` readable on its own: the summary and description of every route, and an
 * example of every request body and answer. Annotations only: nothing here validates (the
 * schemas in schemas.ts do), and Ajv runs with `strict: false`, so `examples` and `description`
 * pass through to the OpenAPI document. docs/api.md says the same in prose, with curl examples.
 */

/** OpenAPI annotations of a schema. */
export interface SchemaDocs {
  description?: string;
  examples?: unknown[];
}

// ---------------------------------------------------------------------------------------------
// Example values, the same ones docs/api.md uses.

const CONTRACT = "0x4300000000000000000000000000000000000004";
const OPERATOR = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const RECIPIENT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const RECIPIENT_2 = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const CREATED_AT = "2026-11-21T10:00:00.000Z";
const FINALIZE_AT = "2026-11-21T11:00:00.000Z";
const BATCH_ID = "2026-11-21-rewards";
const ENDPOINT_ID = "we_420d6e81948da720c8dc22cc";
const DELIVERY_ID = "wd_ec7cf056171c236fb03bc90829a4377f";
const EVENT_ID = "evt_fcd44532252f47608c341c1d16f730ec";
const SECRET = "whsec_Zxtx0dxHrA12A8PlqRp6F4S3+jq8R0IhkfvK1j4Sb6I=";
const WEBHOOK_URL = "https://hooks.example.com/points";

const exampleBatch = {
  id: BATCH_ID,
  contractAddress: CONTRACT,
  pointType: "PHASE2_POINTS",
  status: "PENDING",
  points: "12.75",
  transferCount: 2,
  secondsToFinalize: 3600,
  createdAt: CREATED_AT,
  finalizeAt: FINALIZE_AT,
  updatedAt: null,
  finalizedAt: null,
  cancelledAt: null,
  submittedBy: { type: "operator", address: OPERATOR },
  cancelledBy: null,
};
const exampleTransfers = [
  { toAddress: RECIPIENT, points: "12.5" },
  { toAddress: RECIPIENT_2, points: "0.25" },
];
const exampleEndpoint = {
  id: ENDPOINT_ID,
  url: WEBHOOK_URL,
  types: ["batch.finalized", "batch.cancelled"],
  description: "payout service",
  disabled: false,
  disabledReason: null,
  createdAt: CREATED_AT,
};
/** Well-formed (its checksum holds), and in no database. */
const API_KEY_SECRET = "plk_ZXhhbXBsZS1zZWNyZXQtZm9yLXRoZS1vcGVuYXBpLWRuaSIEi";
const exampleApiKey = {
  id: "key_5b1f0c2e9d8a4f7e8c6b3a2d1e0f9a8b",
  name: "nightly payouts",
  scopes: ["read", "submit"],
  prefix: API_KEY_SECRET.slice(0, 12),
  createdAt: CREATED_AT,
  createdBy: { type: "operator", address: OPERATOR },
  expiresAt: null,
  lastUsedAt: null,
  revokedAt: null,
  revokedReason: null,
};

const exampleDelivery = {
  id: DELIVERY_ID,
  eventId: EVENT_ID,
  eventType: "batch.finalized",
  status: "SUCCEEDED",
  attempts: [{ at: FINALIZE_AT, statusCode: 204, error: null, durationMs: 41 }],
  nextAttemptAt: null,
};

// ---------------------------------------------------------------------------------------------
// Errors: one example per code, with the `details` the code carries.

const EXAMPLE_DETAILS: { [C in ErrorCode]?: ErrorDetailsByCode[C] } = {
  VALIDATION_FAILED: [{ path: "transfers[0].points", message: "is below the minimum transfer size 0.01" }],
  BATCH_ID_EXISTS: { batchId: BATCH_ID, status: "PENDING", matchesRequest: true },
  BATCH_NOT_CANCELLABLE: { batchId: BATCH_ID, status: "FINALIZED" },
  CREDIT_ID_EXISTS: { creditId: "eth-liquidity-2026-11", matchesRequest: true },
  INSUFFICIENT_BALANCE: { available: "987.25", requested: "1000000" },
};

/** When each code is answered, for the description of an error response. */
const ERROR_MEANINGS: Partial<Record<string, string>> = {
  VALIDATION_FAILED: "a malformed or missing field, or a bad value; `details` names each offending field",
  UNAUTHORIZED: "no valid bearer token or API key (unknown, malformed, revoked or expired; or, at solve, a bad challenge or signature)",
  FORBIDDEN:
    "a token or API key of another contract, an API key without the route's scope (`details.requiredScope` names it) or on a route only an operator may use, an address that is not the operator, or no admin token",
  NOT_FOUND: "no such resource for this contract",
  BATCH_ID_EXISTS: "this contract already used the batchId; `details.matchesRequest` says whether it is the same batch",
  BATCH_NOT_CANCELLABLE: "the batch is FINALIZING or FINALIZED, or its finalizeAt has passed",
  CREDIT_ID_EXISTS: "the creditId is already used; `details.matchesRequest` says whether it is the same credit",
  NOT_YET_LOGGED:
    "the event is not yet in a transparency log checkpoint of the size asked (events are logged about a second after their commit): ask again",
  SNAPSHOT_ID_EXISTS: "the snapshotId is already used; `details.matchesRequest` says whether it is the same snapshot",
  CURSOR_EXPIRED: "the cursor is older than the retained events: start again without `after`",
  PAYLOAD_TOO_LARGE: "the body is over the size limit",
  UNSUPPORTED_MEDIA_TYPE: "the body is not application/json",
  INSUFFICIENT_BALANCE: "the batch total exceeds the available balance",
  RATE_LIMITED: "too many requests: wait Retry-After seconds",
  INTERNAL: "a bug in the service",
  UNAVAILABLE: "the database or the service is unavailable: wait Retry-After seconds",
};

/** The description and examples of an error answer that carries `codes` (all of one status). */
export function errorDocs(codes: readonly ErrorCode[]): SchemaDocs {
  return {
    description: codes.map((code) => `${code}: ${ERROR_MEANINGS[code] ?? ERROR_CATALOGUE[code].message}`).join(". "),
    examples: codes.map((code) => {
      const details = EXAMPLE_DETAILS[code];
      return { success: false, error: { code, message: ERROR_CATALOGUE[code].message, ...(details === undefined ? {} : { details }) } };
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// Request bodies.

export const challengeBodyDocs: SchemaDocs = { examples: [{ contractAddress: CONTRACT, operatorAddress: OPERATOR }] };
export const solveBodyDocs: SchemaDocs = {
  examples: [
    {
      challengeData: "AUMAAAAAAAAAAAAAAAAAAAAAAAAE85_W5RqtiPb0zmq4gnJ5z_-5Imb_MtJ4-L8TuAouf-13lAUyAaITBfRoAaITCohIUmyk3GGsbhz-04MVwWfFbQ",
      signature: `0x${"5f".repeat(64)}1b`,
    },
  ],
};
export const operatorBodyDocs: SchemaDocs = { examples: [{ operatorAddress: OPERATOR }] };

/** An example transfer of `points`, or of the point type's minimum when that is larger. */
function examplePoints(config: Pick<Config, "minimumTransferUnits">, pointType: string, points: string): string {
  const minimum = config.minimumTransferUnits[pointType] ?? 0n;
  return minimum > (parsePoints(points) ?? 0n) ? formatPoints(minimum) : points;
}

export function batchBodyDocs(config: Pick<Config, "pointTypes" | "minimumTransferUnits" | "minimumFinalizeSeconds">): SchemaDocs {
  const pointType = config.pointTypes[0]!;
  return {
    examples: [
      {
        pointType,
        transfers: exampleTransfers.map((transfer) => ({ ...transfer, points: examplePoints(config, pointType, transfer.points) })),
        secondsToFinalize: config.minimumFinalizeSeconds,
      },
    ],
  };
}

export function creditBodyDocs(config: Pick<Config, "pointTypes">): SchemaDocs {
  const pointType = config.pointTypes[0]!;
  return {
    examples: [
      { pointType, points: "250", asset: "ETH", block: 12345678 },
      { pointType, points: "1000" },
    ],
  };
}

export const createWebhookBodyDocs: SchemaDocs = {
  examples: [{ url: WEBHOOK_URL, types: ["batch.finalized", "batch.cancelled"], description: "payout service" }],
};
export const updateWebhookBodyDocs: SchemaDocs = {
  examples: [{ types: null, description: "payout service, every event" }, { disabled: false }],
};
export const createApiKeyBodyDocs: SchemaDocs = {
  examples: [
    { name: "nightly payouts", scopes: ["submit", "read"] },
    { name: "reporting", scopes: ["read"], expiresAt: "2027-06-30T00:00:00.000Z" },
  ],
};
export const recoverBodyDocs: SchemaDocs = { examples: [{ since: "2026-11-20T00:00:00.000Z" }] };

// ---------------------------------------------------------------------------------------------
// Answers.

const ok = (description: string, example: Record<string, unknown>): SchemaDocs => ({
  description,
  examples: [{ success: true, ...example }],
});

export const responseDocs = {
  submitted: ok("The batch was accepted: its total is reserved in pendingSent.", { batchId: BATCH_ID }),
  batch: ok("The batch, now CANCELLED (or already CANCELLED: a repeated cancel answers the same).", {
    batch: {
      ...exampleBatch,
      status: "CANCELLED",
      updatedAt: "2026-11-21T10:05:00.000Z",
      cancelledAt: "2026-11-21T10:05:00.000Z",
      cancelledBy: { type: "operator", address: OPERATOR },
    },
  }),
  batchWithTransfers: ok("The batch with its transfers, in the submitted order.", {
    batch: { ...exampleBatch, transfers: exampleTransfers },
  }),
  batchList: ok("One page of batches; `cursor` is null on the last page.", { batches: [exampleBatch], cursor: "MTc5NTQ4MzY1NDI3NS4y" }),
  challenge: ok("A challenge: sign `message` (ERC-191 personal_sign) with the operator key.", {
    challengeData: "AUMAAAAAAAAAAAAAAAAAAAAAAAAE85_W5RqtiPb0zmq4gnJ5z_-5Imb_MtJ4-L8TuAouf-13lAUyAaITBfRoAaITCohIUmyk3GGsbhz-04MVwWfFbQ",
    message: `points-ledger wants you to sign in as the operator of a contract.\n\nContract: ${CONTRACT}\nOperator: ${OPERATOR}\nNonce: da669bb6844ab47665353cd6b6fac39a\nIssued At: ${CREATED_AT}\nExpires At: 2026-11-21T10:05:00.000Z`,
  }),
  solved: ok("A bearer token for this contract's routes.", {
    bearerToken: "plt_zFZCgLqxfEs8-HTw6QfMIm5OlbxxHkNBJSN7UuIRrjo",
    expiresAt: FINALIZE_AT,
  }),
  operator: ok("The operator now registered for the contract (EIP-55 form).", { contractAddress: CONTRACT, operatorAddress: OPERATOR }),
  contractList: ok("One page of registered contracts and their operators, by contract address; `cursor` is null on the last page.", {
    contracts: [{ contractAddress: CONTRACT, operatorAddress: OPERATOR, updatedAt: CREATED_AT }],
    cursor: null,
  }),
  credited: ok("The credit was added to the address's earnedCumulative.", { creditId: "eth-liquidity-2026-11" }),
  eventPage: ok("One page of events, oldest first; keep `cursor` and pass it as `after` next time.", {
    events: [
      {
        id: EVENT_ID,
        type: "batch.accepted",
        contractAddress: CONTRACT,
        occurredAt: CREATED_AT,
        actor: { type: "operator", address: OPERATOR },
        data: { batch: exampleBatch },
        logIndex: 41_207,
      },
    ],
    cursor: "Ahgzn1uXPW1nGJsDWnz7DcibhmYR_ILiLoP1ayAGoHgEMKGFKjUbZo9TSfe3K5eKQGRXxLzqhQy93LikiZQ",
    hasMore: false,
  }),
  webhookCreated: ok("The endpoint, and its signing secret (shown only here and on rotation).", {
    endpoint: exampleEndpoint,
    secret: SECRET,
  }),
  webhookEndpoint: ok("The endpoint.", { endpoint: exampleEndpoint }),
  webhookEndpoints: ok("The contract's endpoints.", { endpoints: [exampleEndpoint] }),
  webhookDeleted: ok("The endpoint is deleted; nothing more is sent to it.", {}),
  webhookSecret: ok("The new secret; the old one keeps signing beside it for 24 hours.", { secret: SECRET }),
  webhookTest: ok("A webhook.test delivery was queued for this endpoint.", { deliveryId: DELIVERY_ID }),
  webhookDeliveries: ok("One page of deliveries, newest first; `cursor` is null on the last page.", {
    deliveries: [exampleDelivery],
    cursor: null,
  }),
  webhookDelivery: ok("The delivery, queued to be sent again now.", {
    delivery: { ...exampleDelivery, status: "PENDING", nextAttemptAt: "2026-11-21T11:00:05.000Z" },
  }),
  webhookRecovered: ok("How many FAILED deliveries were queued again.", { requeued: 3 }),
  apiKeyCreated: ok("The key, and its secret: shown only in this answer (the server keeps only a hash).", {
    apiKey: exampleApiKey,
    secret: API_KEY_SECRET,
  }),
  apiKey: ok("The key (never its secret).", { apiKey: exampleApiKey }),
  apiKeys: ok("The contract's keys, revoked ones included, oldest first.", { apiKeys: [exampleApiKey] }),
  apiKeyRevoked: ok("The key, revoked; a key already revoked is answered as it is.", {
    apiKey: { ...exampleApiKey, revokedAt: FINALIZE_AT, revokedReason: "revoked" },
  }),
  health: ok("The process runs.", { status: "ok" }),
  ready: ok("The database answers and accepts writes.", { status: "ready" }),
  chain: ok(
    "Where operators come from under CHAIN_RPC_URL: the chain, its operator registry, and the last successful read at the block tag.",
    {
      chainId: 81457,
      registry: "0x2536FE9ab3F511540F2f9e2eC2A805005C3Dd800",
      blockTag: "finalized",
      blockNumber: 12345678,
      readAt: CREATED_AT,
      state: "ok",
    },
  ),
};

const exampleSnapshot = {
  id: "season-1",
  pointType: "PHASE2_POINTS",
  measure: "available",
  decimals: 18,
  asOf: null,
  takenAt: CREATED_AT,
  root: "0x91dc5800ba1486ff40928cf678133b3ca90fa52ed9e942d1eb9869d7487a9ee6",
  leafCount: 2,
  total: "1290",
};

/** Payouts (transfers, exports, snapshots). */
export const payoutDocs = {
  transfers: ok(
    "One page of the contract's transfers, newest first; a filtered page may be short with a cursor; `cursor` is null on the last page.",
    {
      transfers: [
        {
          batchId: BATCH_ID,
          toAddress: RECIPIENT,
          pointType: "PHASE2_POINTS",
          points: "12.5",
          status: "FINALIZED",
          createdAt: CREATED_AT,
          finalizeAt: FINALIZE_AT,
          finalizedAt: "2026-11-21T11:00:00.412Z",
        },
      ],
      cursor: null,
    },
  ),
  snapshot: ok("The snapshot: its Merkle root, leaf count and total (in points).", { snapshot: exampleSnapshot }),
  proof: ok("The address's leaf amount (points × 10^decimals) and its Merkle proof.", {
    address: RECIPIENT,
    amount: "40000000000000000000",
    points: "40",
    proof: ["0x0a04030605ebaadb6c4e80b569c956763c87838358c9b20709532150b3943aad"],
  }),
};

export const csvExample = [
  "batchId,toAddress,pointType,points,status,createdAt,finalizeAt,finalizedAt",
  `${BATCH_ID},${RECIPIENT},PHASE2_POINTS,12.5,FINALIZED,${CREATED_AT},${FINALIZE_AT},2026-11-21T11:00:00.412Z`,
  "",
].join("\n");

export const treeExample = {
  format: "standard-v1",
  leafEncoding: ["address", "uint256"],
  tree: [
    "0x91dc5800ba1486ff40928cf678133b3ca90fa52ed9e942d1eb9869d7487a9ee6",
    "0xb66313b282e7085949c4c83b752864149f94b031d7837ac710a8e4ba4ef6b161",
    "0x0a04030605ebaadb6c4e80b569c956763c87838358c9b20709532150b3943aad",
  ],
  values: [
    { value: [RECIPIENT, "40000000000000000000"], treeIndex: 1 },
    { value: [CONTRACT, "1250000000000000000000"], treeIndex: 2 },
  ],
};

/** Leaderboards (API.md "Leaderboards and history"). */
export const leaderboardDocs = {
  page: ok(
    "One page of the board: the addresses this contract's finalized transfers of pointType reached (in the window, when given), most points first; equal points share a rank (1, 2, 2, 4), ordered by address. `through`: every batch finalized at or before it is counted, each whole, and none after it (boards are kept after the finalization: within 1 s of it under normal load). `cursor` is null on the last page.",
    {
      pointType: "PHASE2_POINTS",
      from: "2026-11-01",
      to: "2026-12-01",
      participants: 3,
      through: "2026-11-28T12:00:03.120Z",
      entries: [
        { rank: 1, address: RECIPIENT_2, points: "40" },
        { rank: 2, address: RECIPIENT, points: "12.5" },
      ],
      cursor:
        "djIubGIuUEhBU0UyX1BPSU5UUy4yMDI2LTExLTAxLjIwMjYtMTItMDEuMTI1MDAwMDAwMDAwMDAuMHg3MDk5Nzk3MGM1MTgxMmRjM2EwMTBjN2QwMWI1MGUwZDE3ZGM3OWM4LjIuMg",
    },
  ),
  standing: ok(
    "The address's place on the board: rank null and points \"0\" when the contract sent it nothing in the window; `through` as on the board's pages.",
    {
      address: RECIPIENT,
      rank: 2,
      points: "12.5",
      participants: 3,
      through: "2026-11-28T12:00:03.120Z",
    },
  ),
};

export function snapshotBodyDocs(config: Pick<Config, "pointTypes">): SchemaDocs {
  return { examples: [{ pointType: config.pointTypes[0]!, measure: "available", decimals: 18 }] };
}

/** Any address's balances: the contract balances' example, with the address. */
export function addressBalancesDocs(config: Pick<Config, "pointTypes" | "balanceAssets">): SchemaDocs {
  const [example] = balancesDocs(config).examples as Record<string, unknown>[];
  return { description: "The address's balance of every configured point type.", examples: [{ ...example, address: RECIPIENT }] };
}

/** Balances of every configured point type, every BALANCE_ASSETS asset in byAsset. */
export function balancesDocs(config: Pick<Config, "pointTypes" | "balanceAssets">): SchemaDocs {
  const byAsset = Object.fromEntries(
    config.balanceAssets.map((asset, index) => [
      asset,
      index === 0 ? { earnedCumulative: "250", earnedCumulativeBlock: 12345678 } : { earnedCumulative: "0", earnedCumulativeBlock: 0 },
    ]),
  );
  const balance = {
    available: "987.25",
    pendingSent: "12.75",
    earnedCumulative: "1000",
    receivedCumulative: "0",
    finalizedSentCumulative: "0",
    byAsset,
  };
  return ok("The contract's balance of every configured point type (available = earned + received − finalizedSent − pendingSent).", {
    balancesByPointType: Object.fromEntries(config.pointTypes.map((pointType) => [pointType, balance])),
  });
}

export const streamExample = [
  "retry: 1000",
  "",
  "id: Ahgzn1uXPW1nGJsDWnz7DcibhmYR_ILiLoP1ayAGoHgEMKGFKjUbZo9TSfe3K5eKQGRXxLzqhQy93LikiZQ",
  "event: batch.accepted",
  `data: {"id":"${EVENT_ID}","type":"batch.accepted","contractAddress":"${CONTRACT}","occurredAt":"${CREATED_AT}","actor":{"type":"operator","address":"${OPERATOR}"},"data":{"batch":{"id":"${BATCH_ID}",…}},"logIndex":null}`,
  "",
  ": keep-alive",
  "",
].join("\n");

export const metricsExample = [
  "# HELP points_batches_accepted_total batches accepted",
  "# TYPE points_batches_accepted_total counter",
  "points_batches_accepted_total 2",
  "",
].join("\n");

// ---------------------------------------------------------------------------------------------
// Routes: summary and description, keyed by method and URL as registered (prefix included).

interface RouteDocs {
  summary: string;
  description: string;
}

const CONTRACT_ROUTES = "/v1/contracts/:contractAddress";
const ADMIN_KEY_ROUTES = "/v1/admin/contracts/:contractAddress/api-keys";
const ENDPOINT_ROUTES = `${CONTRACT_ROUTES}/webhook-endpoints/:endpointId`;
const SEE = "See docs/api.md";

export const ROUTE_DOCS: Record<string, RouteDocs> = {
  "POST /v1/dapp-auth/challenge": {
    summary: "Ask for a sign-in challenge",
    description: `The operator of a contract asks for a challenge; sign its \`message\` with the operator key (ERC-191 personal_sign) and trade the signature for a token at /v1/dapp-auth/solve. ${SEE}, 1. Sign in.`,
  },
  "POST /v1/dapp-auth/solve": {
    summary: "Trade a signed challenge for a bearer token",
    description: `Returns a bearer token valid for BEARER_TOKEN_TTL_SECONDS on this contract's routes only. A challenge is consumed by its first attempt. ${SEE}, 1. Sign in.`,
  },
  [`PUT ${CONTRACT_ROUTES}/batches/:batchId`]: {
    summary: "Submit a batch under your own batchId (idempotent)",
    description: `Reserves the batch total at once; the batch finalizes after secondsToFinalize unless cancelled. Repeating the same PUT answers 409 BATCH_ID_EXISTS with matchesRequest: true, so a retry never sends twice. ${SEE}, 2. Submit a batch.`,
  },
  [`POST ${CONTRACT_ROUTES}/batches`]: {
    summary: "Submit a batch (the service chooses the batchId)",
    description: `Same body and rules as PUT; the answer names the new batchId (a UUID). ${SEE}, 2. Submit a batch.`,
  },
  [`GET ${CONTRACT_ROUTES}/batches`]: {
    summary: "List the contract's batches",
    description: `Filter by pointType, status and creation time; page with the returned cursor (null on the last page). ${SEE}, 3. Follow a batch.`,
  },
  [`GET ${CONTRACT_ROUTES}/batches/:batchId`]: {
    summary: "Read one batch with its transfers",
    description: `Status PENDING, FINALIZING, FINALIZED or CANCELLED, and the transfers in submitted order. ${SEE}, 3. Follow a batch.`,
  },
  [`DELETE ${CONTRACT_ROUTES}/batches/:batchId`]: {
    summary: "Cancel a pending batch",
    description: `Allowed while the batch is PENDING and before finalizeAt; its total is available again. A repeated cancel answers the same 200. ${SEE}, 4. Cancel a batch.`,
  },
  [`GET ${CONTRACT_ROUTES}/point-balances`]: {
    summary: "Read the contract's balances",
    description: `One balance per configured point type, with byAsset for every BALANCE_ASSETS asset. With asOf (an ISO time with a zone, not in the future), the balances as they stood then, without byAsset. ${SEE}, 5. Read balances.`,
  },
  [`GET ${CONTRACT_ROUTES}/leaderboard`]: {
    summary: "Read the contract's leaderboard",
    description: `The addresses its finalized transfers of pointType reached, ranked by the points it sent them; from/to (YYYY-MM-DD, to exclusive) count one window of UTC days. Page with the returned cursor. Readable with the operator's token, an API key with read, the admin token, or without authentication when PUBLIC_READS=true. ${SEE}, Leaderboards and history.`,
  },
  [`GET ${CONTRACT_ROUTES}/leaderboard/:address`]: {
    summary: "Read one address's rank on the contract's leaderboard",
    description: `Its rank, points and the number of participants; rank null and points "0" when it has nothing on the board. Same credentials as the leaderboard. ${SEE}, Leaderboards and history.`,
  },
  "GET /v1/parameters": {
    summary: "Read the parameters in force",
    description: `Finalize delays, batch size, decimals, point types and their minimum transfer sizes, id length and token lifetimes. No authentication. ${SEE}, 6. Parameters.`,
  },
  "PUT /v1/admin/contracts/:contractAddress/operator": {
    summary: "Register or change a contract's operator (admin)",
    description: `Changing the operator revokes the contract's tokens at once. Needs the admin token. ${SEE}, 7. Administration.`,
  },
  "GET /v1/admin/contracts": {
    summary: "List the registered contracts and their operators (admin)",
    description: `Every contract with an operator, by contract address, with when its operator was set; page with the returned cursor (null on the last page). Needs the admin token. ${SEE}, 7. Administration.`,
  },
  "PUT /v1/admin/contracts/:contractAddress/credits/:creditId": {
    summary: "Credit points to an address (admin)",
    description: `Adds points to earnedCumulative; asset and block feed byAsset. Idempotent by creditId (409 CREDIT_ID_EXISTS on reuse). Needs the admin token. ${SEE}, 7. Administration.`,
  },
  [`GET ${CONTRACT_ROUTES}/events`]: {
    summary: "Page through the contract's events",
    description: `Every change of the ledger is an event, oldest first; keep the cursor and ask again with after=<cursor>. A cursor older than EVENT_RETENTION_DAYS is 410 CURSOR_EXPIRED. ${SEE}, 8. Events.`,
  },
  [`GET ${CONTRACT_ROUTES}/events/stream`]: {
    summary: "Stream the contract's events (server-sent events)",
    description: `text/event-stream; resumes after Last-Event-ID or ?after=, sends a keep-alive comment every EVENT_STREAM_KEEPALIVE_MS. Errors are answered as JSON before the stream starts. ${SEE}, 8. Events.`,
  },
  "GET /v1/admin/events": {
    summary: "Page through every event of the ledger (admin)",
    description: `Every stream plus the administrator-only events: the audit trail. Same query and cursor rules as a contract's events. ${SEE}, 8. Events.`,
  },
  "GET /v1/admin/publishers": {
    summary: "The publishers of the event log to NATS JetStream and RabbitMQ (admin)",
    description: `Each publisher configured (EVENTS_NATS_URL, EVENTS_AMQP_URL): its broker, the last event the broker acknowledged, its lag and its state (ok, retrying, stopped). ${SEE}, 8. Events.`,
  },
  [`POST ${CONTRACT_ROUTES}/webhook-endpoints`]: {
    summary: "Create a webhook endpoint",
    description: `Events of the chosen types are POSTed to the URL, signed per Standard Webhooks; the secret is shown only here and on rotation. At most 10 endpoints per contract. ${SEE}, 9. Webhooks.`,
  },
  [`GET ${CONTRACT_ROUTES}/webhook-endpoints`]: {
    summary: "List the webhook endpoints",
    description: `The contract's endpoints. ${SEE}, 9. Webhooks.`,
  },
  [`GET ${ENDPOINT_ROUTES}`]: { summary: "Read a webhook endpoint", description: `One endpoint of the contract. ${SEE}, 9. Webhooks.` },
  [`PATCH ${ENDPOINT_ROUTES}`]: {
    summary: "Change a webhook endpoint",
    description: `Change url, types (null: every type), description or disabled. ${SEE}, 9. Webhooks.`,
  },
  [`DELETE ${ENDPOINT_ROUTES}`]: { summary: "Delete a webhook endpoint", description: `Nothing more is sent to it. ${SEE}, 9. Webhooks.` },
  [`POST ${ENDPOINT_ROUTES}/rotate-secret`]: {
    summary: "Rotate a webhook endpoint's secret",
    description: `Returns the new secret; the old one keeps signing beside it for 24 hours. ${SEE}, 9. Webhooks.`,
  },
  [`POST ${ENDPOINT_ROUTES}/test`]: {
    summary: "Send a test event to a webhook endpoint",
    description: `Queues a webhook.test delivery to this endpoint only. ${SEE}, 9. Webhooks.`,
  },
  [`GET ${ENDPOINT_ROUTES}/deliveries`]: {
    summary: "List a webhook endpoint's deliveries",
    description: `Newest first, with every attempt; filter by status. ${SEE}, 9. Webhooks.`,
  },
  [`POST ${ENDPOINT_ROUTES}/deliveries/:deliveryId/retry`]: {
    summary: "Send a delivery again now",
    description: `Whatever its status, e.g. after fixing the receiver. ${SEE}, 9. Webhooks.`,
  },
  [`POST ${ENDPOINT_ROUTES}/recover`]: {
    summary: "Queue again the failed deliveries since a time",
    description: `After an outage of the receiver: every FAILED delivery since \`since\` is sent again. ${SEE}, 9. Webhooks.`,
  },
  [`GET ${CONTRACT_ROUTES}/transfers`]: {
    summary: "List the contract's transfers",
    description: `Newest first; with toAddress, what the contract sent that recipient. With a filter, a page examines at most ${MAX_TRANSFERS_SCANNED_PER_PAGE.toLocaleString("en")} transfers, so it can be shorter than \`limit\` (even empty) with a non-null \`cursor\`: follow the cursor until it is null. ${SEE}, 10. Payouts.`,
  },
  [`GET ${CONTRACT_ROUTES}/transfers.csv`]: {
    summary: "Export the contract's transfers as CSV",
    description: `Same filters as the listing, streamed as text/csv with a header row. ${SEE}, 10. Payouts.`,
  },
  "GET /v1/admin/balances.csv": {
    summary: "Export every address's balances as CSV (admin)",
    description: `Streamed as text/csv with a header row; ?pointType= narrows it. ${SEE}, 10. Payouts.`,
  },
  "GET /v1/addresses/:address/point-balances": {
    summary: "Read any address's balances",
    description: `With the admin token, or without authentication when PUBLIC_READS=true. With asOf (an ISO time with a zone, not in the future), the balances as they stood then, without byAsset. ${SEE}, 10. Payouts.`,
  },
  "PUT /v1/admin/snapshots/:snapshotId": {
    summary: "Take a Merkle snapshot of one point type (admin)",
    description: `Freezes every address's balance and commits to it with an OpenZeppelin StandardMerkleTree root. ${SEE}, 10. Payouts.`,
  },
  "GET /v1/snapshots/:snapshotId": { summary: "Read a snapshot", description: `Its root, leaf count and total. ${SEE}, 10. Payouts.` },
  "GET /v1/snapshots/:snapshotId/proofs/:address": {
    summary: "Read an address's Merkle proof",
    description: `The amount and proof to claim on chain; 404 when the address is not in the snapshot. ${SEE}, 10. Payouts.`,
  },
  "GET /v1/snapshots/:snapshotId/tree": {
    summary: "Download a snapshot's whole tree",
    description: `The JSON dump of @openzeppelin/merkle-tree (standard-v1), streamed. ${SEE}, 10. Payouts.`,
  },
  [`POST ${CONTRACT_ROUTES}/api-keys`]: {
    summary: "Create an API key",
    description: `A key for a backend, limited to the scopes it needs; the secret (plk_…) is shown only in this answer. At most 100 unrevoked keys per contract. Only an operator's bearer token manages keys. ${SEE}, API keys.`,
  },
  [`GET ${CONTRACT_ROUTES}/api-keys`]: {
    summary: "List the API keys",
    description: `Every key of the contract, revoked ones included; never a secret. lastUsedAt may lag by up to a minute. ${SEE}, API keys.`,
  },
  [`GET ${CONTRACT_ROUTES}/api-keys/:keyId`]: { summary: "Read an API key", description: `One key of the contract. ${SEE}, API keys.` },
  [`DELETE ${CONTRACT_ROUTES}/api-keys/:keyId`]: {
    summary: "Revoke an API key",
    description: `Refused by every instance within a second of this answer; a second DELETE answers the key as it is. ${SEE}, API keys.`,
  },
  [`POST ${ADMIN_KEY_ROUTES}`]: {
    summary: "Create an API key for a contract (admin)",
    description: `Same body and answer as the operator's route; a key the admin creates survives an operator change. Needs the admin token. ${SEE}, API keys.`,
  },
  [`GET ${ADMIN_KEY_ROUTES}`]: { summary: "List a contract's API keys (admin)", description: `Needs the admin token. ${SEE}, API keys.` },
  [`GET ${ADMIN_KEY_ROUTES}/:keyId`]: {
    summary: "Read a contract's API key (admin)",
    description: `Needs the admin token. ${SEE}, API keys.`,
  },
  [`DELETE ${ADMIN_KEY_ROUTES}/:keyId`]: {
    summary: "Revoke a contract's API key (admin)",
    description: `Needs the admin token. ${SEE}, API keys.`,
  },
  "GET /healthz": { summary: "Liveness", description: `200 while the process runs. ${SEE}, 11. Operations.` },
  "GET /readyz": {
    summary: "Readiness",
    description: `200 when the database answers and accepts writes, else 503 UNAVAILABLE with Retry-After. ${SEE}, 11. Operations.`,
  },
  "GET /v1/chain": {
    summary: "Where operators come from (operators on chain)",
    description: `Under CHAIN_RPC_URL: the chain, its operator registry, the block tag, and the last successful read at it; state \`unavailable\` while the RPC endpoint fails. 404 when an administrator sets the operators. ${SEE}, 11. Operations.`,
  },
  "GET /metrics": {
    summary: "Prometheus metrics",
    description: `Requests, batches, finalizer lag, webhook deliveries. ${SEE}, 11. Operations.`,
  },
  "GET /v1/log/checkpoint": {
    summary: "The transparency log's latest signed checkpoint",
    description: `A C2SP tlog-checkpoint signed note: origin, size, root hash, Ed25519 signature. No token. ${SEE}, 14. Transparency log.`,
  },
  "GET /v1/log/status": {
    summary: "How far the transparency log has got, and its lag",
    description: `The tree's size, the latest checkpoint's size and signing time, and the oldest committed event not logged yet with its age in seconds. No token. ${SEE}, 14. Transparency log.`,
  },
  "GET /v1/log/epochs": {
    summary: "The transparency log's epochs (restores, key rotations)",
    description: `Each epoch after the first with its origin and its announcement, a note signed by the key of the epoch before: the log it follows, where it forked, the key that signs it. No token. ${SEE}, 14. Transparency log.`,
  },
  "GET /v1/log/key": {
    summary: "The transparency log's verifier key",
    description: `The C2SP signed-note verifier key of the checkpoints. No token. ${SEE}, 14. Transparency log.`,
  },
  "GET /v1/log/proofs/consistency": {
    summary: "Prove the log of `to` events extends the log of `from` events",
    description: `An RFC 9162 consistency proof; from ≤ to ≤ the latest checkpoint's size. No token. ${SEE}, 14. Transparency log.`,
  },
  [`GET ${CONTRACT_ROUTES}/events/:eventId/proof`]: {
    summary: "Prove one of the contract's events is in the transparency log",
    description: `An RFC 9162 inclusion proof in the checkpoint of treeSize events (default the latest); 409 NOT_YET_LOGGED before it is in one. ${SEE}, 14. Transparency log.`,
  },
  "GET /v1/admin/events/:eventId/proof": {
    summary: "Prove any event is in the transparency log (admin)",
    description: `As the contract's route, for any event, the administrator-only ones included. ${SEE}, 14. Transparency log.`,
  },
};

export const logResponseDocs = {
  inclusion: ok("The event's inclusion proof (RFC 9162 §2.1.3), hashes in base64.", {
    eventId: EVENT_ID,
    logIndex: 41_207,
    treeSize: 41_300,
    leafHash: "9yJjJYl0k5sVf8mZ9u0bqk9R0kq5j3r1XwL8mU1m2Vc=",
    proof: ["s9r0pFv3Wc0m1mO3T7tC3Yj0m1fQ0mHk2dV1s8V9lJY="],
  }),
  status: ok(
    "How far the log has got: the leaves in its tree, the latest checkpoint's size and signing time, and the oldest committed event it has not logged yet (null when none) with its age in seconds, the log's lag.",
    { treeSize: 41_300, checkpointSize: 41_300, checkpointSignedAt: "2026-12-06T05:40:00.000Z", oldestUnloggedAt: null, lagSeconds: 0 },
  ),
  epochs: ok(
    "The log's epochs after its first (a restored copy or a key rotation begins one), oldest first: each one's checkpoint origin and its announcement, a signed note by the key of the epoch before that says which log it follows, where it forked and which key signs it.",
    {
      epochs: [
        {
          epoch: 1,
          origin: "points.example.com/points-ledger/epoch-1",
          startedAt: "2026-12-06T06:00:00.000Z",
          note: "points-ledger log epoch\norigin points.example.com/points-ledger/epoch-1\nfollows points.example.com/points-ledger\nfork 408 q1OXhAW6uYPEt6LOZl0wTZgXZ7NAg7ynSkVyv3DHUfk=\nkey points.example.com/points-ledger+f46ab466+AXdvY2tlZC1leGFtcGxlLWtleS1ub3QtYS1yZWFsLW9uZQ==\n\n— points.example.com/points-ledger 9Gq0ZmKV1D…\n",
        },
      ],
    },
  ),
  consistency: ok("The consistency proof (RFC 9162 §2.1.4), hashes in base64.", {
    from: 41_000,
    to: 41_300,
    proof: ["Lx4Q0mKf1c9mJ0m0b3s7v2a1G8rT0p2Vt5nA0q1M6hE="],
  }),
};

/**
 * onRoute hook: gives a route its summary and description from ROUTE_DOCS unless the route
 * declares its own. Kept in one table so every route's documentation can be read (and checked,
 * test/docs.test.ts) in one place.
 */
export function documentRoute(route: RouteOptions): void {
  if (typeof route.method !== "string" || route.schema === undefined) return;
  const docs = ROUTE_DOCS[`${route.method} ${route.url}`];
  if (docs === undefined) return;
  route.schema = { summary: docs.summary, description: docs.description, ...route.schema };
}

/**
 * The headers of every answer under /docs (the page, its scripts and styles, /docs/json). Like the
 * console's (routes/console.ts), no other site may frame the page (clickjacking) and it may load
 * and call this origin only; Swagger UI runs under it: its page has no inline script (the
 * initializer is /docs/static/swagger-initializer.js), it fetches /docs/json, its icons are data:
 * images, and its one inline <style> (the logo's SVG in swagger-ui-standalone-preset.js) is allowed
 * by its hash rather than by 'unsafe-inline'. A Swagger UI upgrade that changes it fails
 * test/docs-csp.test.ts, which loads /docs in a real browser and refuses any CSP violation.
 */
/** sha256 of `.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}`. */
const SWAGGER_LOGO_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";
export const DOCS_SECURITY_HEADERS = pageSecurityHeaders([SWAGGER_LOGO_STYLE_HASH]);
