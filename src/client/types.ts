/** The JSON shapes of docs/api.md, as the client receives and sends them. */

import type { EventDataByType as DomainEventData, StreamEventType } from "../domain/events.js";
import type { ApiKey } from "./api-keys.js";

/**
 * A point type is the service's configuration (POINT_TYPES): the client learns the names from
 * GET /v1/parameters, never from a list of its own.
 */
export type PointType = string;

export const BATCH_STATUSES = ["PENDING", "FINALIZING", "FINALIZED", "CANCELLED"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** `0x` + 40 hex digits; responses give the EIP-55 spelling. */
export type Address = `0x${string}`;

/** Points are decimal strings ("1.05", "2000"), never floats. */
export type Points = string;

export interface Transfer {
  toAddress: string;
  points: Points;
}

export interface Parameters {
  MINIMUM_FINALIZE_SECONDS: number;
  DEFAULT_FINALIZE_SECONDS: number;
  MAX_TRANSFERS_PER_BATCH: number;
  MAX_TRANSFER_DECIMALS: number;
  /** The configured point types, in the service's order. */
  POINT_TYPES: PointType[];
  BATCH_ID_MAX_LENGTH: number;
  BEARER_TOKEN_TTL_SECONDS: number;
  CHALLENGE_TTL_SECONDS: number;
  /** One per point type of POINT_TYPES (read them with minimumUnitsOf). */
  [minimumTransferSize: `MINIMUM_${string}_TRANSFER_SIZE`]: Points;
}

export interface Balance {
  available: Points;
  pendingSent: Points;
  earnedCumulative: Points;
  receivedCumulative: Points;
  finalizedSentCumulative: Points;
  /** Credits that named an asset, per asset; the service's BALANCE_ASSETS are always present. */
  byAsset: Record<string, { earnedCumulative: Points; earnedCumulativeBlock: number }>;
}

/** One key per configured point type. */
export type Balances = Record<PointType, Balance>;

export interface Batch {
  id: string;
  contractAddress: Address;
  pointType: PointType;
  status: BatchStatus;
  /** The batch total. */
  points: Points;
  transferCount: number;
  secondsToFinalize: number;
  createdAt: string;
  finalizeAt: string;
  updatedAt: string | null;
  finalizedAt: string | null;
  cancelledAt: string | null;
  /** Who submitted it. */
  submittedBy: Actor;
  /** Who cancelled it; null until it is cancelled. */
  cancelledBy: Actor | null;
}

/**
 * Who caused a change (docs/api.md Events, actor): an operator signed in with its key, an API key,
 * the administrator, the service itself (finalization), or the operator registry on chain.
 */
export type Actor =
  | { type: "operator"; address: Address }
  | { type: "api_key"; id: string; name: string }
  | { type: "admin" }
  | { type: "system" }
  | { type: "chain"; chainId: number; blockNumber: number; transactionHash: string | null };

export interface BatchWithTransfers extends Batch {
  transfers: { toAddress: Address; points: Points }[];
}

export interface BatchRequest {
  pointType: PointType;
  transfers: Transfer[];
  /** Absent means the server's DEFAULT_FINALIZE_SECONDS. */
  secondsToFinalize?: number;
}

export interface BatchFilter {
  pointType?: PointType;
  status?: BatchStatus;
  /** Exclusive bounds: ISO 8601 strings or Dates. */
  createdBefore?: string | Date;
  createdAfter?: string | Date;
  sort?: "ASC" | "DESC";
}

export interface BatchPageQuery extends BatchFilter {
  /** 1–1000; the server's default is 100. */
  limit?: number;
  cursor?: string;
}

export interface BatchPage {
  batches: Batch[];
  cursor: string | null;
}

export interface SubmitResult {
  batchId: string;
  /**
   * false when the service already had this batchId with the same content: an earlier attempt
   * (whose answer was lost, or an earlier run) stored it. `status` is then its current status.
   */
  created: boolean;
  status?: BatchStatus;
}

export interface Challenge {
  challengeData: string;
  message: string;
}

export interface Session {
  bearerToken: string;
  /** Server time, ISO 8601. */
  expiresAt: string;
}

/** Event types of a contract's stream (docs/api.md Events); the admin listing also has `snapshot.created`. */
export type EventType =
  | "batch.accepted"
  | "batch.cancelled"
  | "batch.finalized"
  | "credit.created"
  | "operator.changed"
  | "snapshot.created"
  | "api_key.created"
  | "api_key.revoked";

/** The `data` of each event type; batch events carry the Batch object as GET returns it (no transfers). */
export interface EventDataByType {
  "batch.accepted": { batch: Batch };
  "batch.cancelled": { batch: Batch };
  "batch.finalized": { batch: Batch };
  "credit.created": DomainEventData["credit.created"];
  "operator.changed": DomainEventData["operator.changed"];
  "snapshot.created": DomainEventData["snapshot.created"];
  "api_key.created": { apiKey: ApiKey };
  "api_key.revoked": { apiKey: ApiKey };
}

/** One event as the service returns it; switch on `type` to narrow `data`. */
export type LedgerEvent = {
  [T in EventType]: {
    /** `evt_…`: unique and stable (also the `webhook-id` of its webhook deliveries). */
    id: string;
    type: T;
    /** The stream's address (the contract, or the credited address); null for admin-only events. */
    contractAddress: Address | null;
    occurredAt: string;
    /** Who caused it. */
    actor: Actor;
    data: EventDataByType[T];
    /** Its place in the transparency log once logged (about a second after its commit); null before (and in webhook bodies, sent at commit). */
    logIndex: number | null;
  };
}[EventType];

export interface EventPage {
  events: LedgerEvent[];
  /** Where the next call starts; never null (keep it and ask again later). */
  cursor: string;
  /** More events are there now. */
  hasMore: boolean;
}

export interface EventPageQuery {
  /** A cursor from an earlier answer; absent: from the oldest retained event. */
  after?: string;
  /** Only these types; absent: all of the stream's. */
  types?: readonly EventType[];
  /** 1–1000 per page; the server's default is 100. */
  limit?: number;
}

/** Types a webhook endpoint can subscribe to (docs/api.md Webhooks); `webhook.test` goes only to the endpoint tested. */
export type WebhookEventType = StreamEventType;

export const WEBHOOK_DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED"] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

export interface WebhookEndpoint {
  /** `we_…` */
  id: string;
  url: string;
  /** The subscribed types; every type when the endpoint was created without `types`. */
  types: WebhookEventType[];
  description: string | null;
  disabled: boolean;
  /** Why it is disabled: by the operator, or the receiver answered 410. */
  disabledReason: string | null;
  createdAt: string;
}

export interface NewWebhookEndpoint {
  /** `http(s)://`; a private, loopback or link-local target is refused unless the service allows it. */
  url: string;
  /** Absent: every type. */
  types?: readonly WebhookEventType[];
  description?: string | null;
}

/** Only the fields given change; `types: null` subscribes to every type again. */
export interface WebhookEndpointChange {
  url?: string;
  types?: readonly WebhookEventType[] | null;
  description?: string | null;
  disabled?: boolean;
}

export interface CreatedWebhookEndpoint {
  endpoint: WebhookEndpoint;
  /** `whsec_…`: shown only now (and on rotation); keep it to verify signatures. */
  secret: string;
}

export interface WebhookDeliveryAttempt {
  at: string;
  /** null when no answer came (timeout, refused connection, refused target); `error` says why. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface WebhookDelivery {
  /** `wd_…` */
  id: string;
  /** The event's id, also the `webhook-id` header of every attempt. */
  eventId: string;
  eventType: WebhookEventType | "webhook.test";
  status: WebhookDeliveryStatus;
  attempts: WebhookDeliveryAttempt[];
  /** null once SUCCEEDED or FAILED. */
  nextAttemptAt: string | null;
}

export interface WebhookDeliveryQuery {
  status?: WebhookDeliveryStatus;
  /** 1–250 per page; the server's default is 50. */
  limit?: number;
  cursor?: string;
}

export interface WebhookDeliveryPage {
  /** Newest first. */
  deliveries: WebhookDelivery[];
  /** null on the last page. */
  cursor: string | null;
}

/**
 * Where operators come from when the service reads them from the chain (GET /v1/chain): the
 * chain, its operator registry, and the last successful read at the block tag.
 */
export interface ChainInfo {
  chainId: number | null;
  registry: Address | null;
  blockTag: "finalized" | "safe" | "latest";
  blockNumber: number | null;
  readAt: string | null;
  state: "ok" | "unavailable";
}
