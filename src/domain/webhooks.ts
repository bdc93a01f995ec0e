import { randomBytes } from "node:crypto";
import type { AddressKey } from "./address.js";
import { DELIVERY_SEQ_PART, checkedParts, invalidCursor } from "./cursor.js";
import type { EventType, StreamEventType } from "./events.js";

/**
 * Webhooks (docs/api.md, Webhooks) as the domain sees them: endpoints, deliveries and their
 * attempts, the ids and status names, and the rules both adapters' webhooks.ts apply (limits,
 * backoff); no SQL and no sending (those are store/<adapter>/webhooks.ts and src/outbox/).
 */

/** What a delivery is: still to be sent (or retried), sent, or given up on. */
export const DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookEndpoint {
  id: string;
  contract: AddressKey;
  url: string;
  /** Subscribed event types; null: every type, present and future. */
  types: readonly StreamEventType[] | null;
  description: string | null;
  disabled: boolean;
  disabledReason: string | null;
  createdAtMs: number;
}

export interface NewWebhookEndpoint extends Omit<WebhookEndpoint, "disabled" | "disabledReason"> {
  /** `whsec_…`: kept retrievable (it signs), never logged. */
  secret: string;
}

/** PATCH: absent fields are left as they are. */
export interface WebhookEndpointChange {
  url?: string;
  types?: readonly StreamEventType[] | null;
  description?: string | null;
  disabled?: boolean;
  disabledReason?: string | null;
}

export interface DeliveryAttempt {
  atMs: number;
  /** null: no answer (timeout, refused connection, refused address); `error` says why. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** null once SUCCEEDED or FAILED. */
  nextAttemptAtMs: number | null;
  createdAtMs: number;
}

/** A delivery taken by one delivery job for one attempt, until `claimedUntilMs` (its lease). */
export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  url: string;
  eventId: string;
  /** The Event JSON text, sent as is. */
  payload: string;
  /** Attempts made before this one in the current round (the retry schedule's position). */
  tries: number;
  /** The endpoint's live secrets, newest first: two during a rotation's overlap. */
  secrets: string[];
  claimToken: string;
  claimedUntilMs: number;
}

/** A claim held on one delivery, as renewDeliveryLeases names it. */
export interface DeliveryLease {
  id: string;
  claimToken: string;
}

/** What the delivery job decided after an attempt (src/outbox/retry-schedule.ts). */
export interface AttemptOutcome {
  attempt: DeliveryAttempt;
  status: DeliveryStatus;
  nextAttemptAtMs: number | null;
  /** Set on a 410: the endpoint is disabled at once, with this reason. */
  disableEndpoint: string | null;
  /**
   * No answer within the send timeout: the endpoint's timeouts in a row grow and it is backed off
   * (endpointBackoffMs, one send at a time); any answer ends that.
   */
  timedOut: boolean;
}

/** Attempts a delivery keeps in its `attempts` list (the latest ones): a delivery retried by hand for ever stays bounded. */
export const MAX_ATTEMPTS_KEPT = 50;

/** Endpoints with pending deliveries one claim walks at most: bounds the claim's work however many endpoints exist. */
export const MAX_ENDPOINTS_WALKED_PER_CLAIM = 10_000;

/** The first timeout of an endpoint holds its deliveries back this long; each further one in a row doubles it. */
export const ENDPOINT_BACKOFF_BASE_MS = 1000;
/** The longest an endpoint that keeps timing out is held back between attempts. */
export const ENDPOINT_BACKOFF_MAX_MS = 60_000;

/**
 * How long an endpoint is held back after its `timeoutsInRow`-th attempt in a row without an
 * answer: a receiver that holds connections open is tried less and less often (and one send at a
 * time), so its sends stop filling the job's slots; the first answer ends it.
 */
export function endpointBackoffMs(timeoutsInRow: number): number {
  if (timeoutsInRow <= 0) return 0;
  return Math.min(ENDPOINT_BACKOFF_MAX_MS, ENDPOINT_BACKOFF_BASE_MS * 2 ** Math.min(timeoutsInRow - 1, 30));
}

/** `we_` + 24 hex digits. */
export const ENDPOINT_ID_PATTERN = "^we_[0-9a-f]{24}$";
/** `wd_` + 32 hex digits. */
export const DELIVERY_ID_PATTERN = "^wd_[0-9a-f]{32}$";

export function newEndpointId(): string {
  return `we_${randomBytes(12).toString("hex")}`;
}

export function newDeliveryId(): string {
  return `wd_${randomBytes(16).toString("hex")}`;
}

/** A deliveries listing position (the seq of the previous page's last delivery), by the deliveries cursor's part schema; anything else is 400. */
export function parseDeliveryPosition(position: string): string {
  if (checkedParts(position, [DELIVERY_SEQ_PART]) === null || position.startsWith("0")) throw invalidCursor("cursor", position);
  return position;
}
