import { ENDPOINT_BACKOFF_BASE_MS, ENDPOINT_BACKOFF_MAX_MS } from "./limits.js";
import { randomBytes } from "node:crypto";
import type { AddressKey } from "./address.js";
import { DELIVERY_SEQ_PART, checkedParts, invalidCursor } from "./cursor.js";
import { STREAM_EVENT_TYPES, type EventType, type LedgerEvent, type StreamEventType } from "./events.js";

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

// ---------------------------------------------------------------------------------------------
// The rules both adapters apply, decided here once; each adapter's webhooks.ts only reads and
// writes rows around them (PostgreSQL's claim and fan-out state the same rules in one statement).

const FAN_OUT_TYPES: ReadonlySet<string> = new Set(STREAM_EVENT_TYPES);

/** The fan-out rule, for an event: it is delivered when it is on a contract's stream and of a stream type (not admin, not webhook.test). */
export function fansOut(event: LedgerEvent): event is LedgerEvent & { stream: AddressKey } {
  return event.stream !== null && FAN_OUT_TYPES.has(event.type);
}

/** The fan-out rule, for an enabled endpoint of the event's contract: it subscribes to every type (null) or names this one. */
export function subscribes(types: readonly string[] | null, eventType: string): boolean {
  return types === null || types.includes(eventType);
}

/** Why an operation on an endpoint's deliveries does nothing: the endpoint is missing (or another contract's), or disabled. */
export type EndpointRefusal = { kind: "not_found" } | { kind: "disabled" };
/** An operation on one endpoint: refused, or done with its result. */
export type EndpointOperation<T> = EndpointRefusal | { kind: "done"; value: T };

/** Tests, retries and recoveries are refused for a missing endpoint and for a disabled one (nothing is sent to it). */
export function refusal(endpoint: WebhookEndpoint | null): EndpointRefusal | null {
  if (!endpoint) return { kind: "not_found" };
  return endpoint.disabled ? { kind: "disabled" } : null;
}

/** The stored fields of an endpoint under a PATCH. */
export type EndpointFields = Omit<WebhookEndpoint, "id" | "contract" | "createdAtMs">;

/**
 * What an endpoint becomes under a change (absent fields kept; enabling clears the reason), and
 * whether its PENDING deliveries fail now: it is being disabled, and recover queues them again.
 */
export function changedEndpoint(
  current: WebhookEndpoint,
  change: WebhookEndpointChange,
): { fields: EndpointFields; failsPending: boolean } {
  const disabled = change.disabled ?? current.disabled;
  const fields: EndpointFields = {
    url: change.url ?? current.url,
    types: change.types !== undefined ? change.types : current.types,
    description: change.description !== undefined ? change.description : current.description,
    disabled,
    disabledReason: disabled ? (change.disabledReason !== undefined ? change.disabledReason : current.disabledReason) : null,
  };
  return { fields, failsPending: disabled && !current.disabled };
}

/** The secrets a claimed delivery is signed with: the current one, and the previous one while its rotation overlap lasts. */
export function liveSecrets(secret: string, previous: string | null, previousExpiresAtMs: number | null, nowMs: number): string[] {
  return previous !== null && previousExpiresAtMs !== null && previousExpiresAtMs > nowMs ? [secret, previous] : [secret];
}

/** What a delivery row becomes after an attempt whose claim is still held. */
export interface DeliveryAfterAttempt {
  status: DeliveryStatus;
  /** Set while PENDING only. */
  nextAttemptAtMs: number | null;
  /** When it finished (SUCCEEDED or FAILED): the retention counts from here (PurgeJob). */
  finishedAtMs: number | null;
}

/** A retry for an endpoint disabled meanwhile (by an operator or by this attempt's 410) fails instead: nothing is sent to a disabled endpoint. */
export function deliveryAfterAttempt(outcome: AttemptOutcome, endpointDisabled: boolean): DeliveryAfterAttempt {
  const status: DeliveryStatus = outcome.status === "PENDING" && endpointDisabled ? "FAILED" : outcome.status;
  if (status === "PENDING") return { status, nextAttemptAtMs: outcome.nextAttemptAtMs, finishedAtMs: null };
  return { status, nextAttemptAtMs: null, finishedAtMs: outcome.attempt.atMs + outcome.attempt.durationMs };
}

/** What an attempt says of its endpoint's health: any answer ends a backoff, a timeout extends it, anything else (a refused address) says nothing. */
export function endpointHealth(outcome: AttemptOutcome): "answered" | "timed_out" | "unchanged" {
  if (outcome.attempt.statusCode !== null) return "answered";
  return outcome.timedOut ? "timed_out" : "unchanged";
}

/** Until when an endpoint is held back after its `timeoutsInRow`-th attempt in a row without an answer (this one). */
export function backoffUntilMs(attempt: DeliveryAttempt, timeoutsInRow: number): number {
  return attempt.atMs + attempt.durationMs + endpointBackoffMs(timeoutsInRow);
}

/** An endpoint with PENDING deliveries, as a claim sees it. */
export interface ClaimableEndpoint {
  id: string;
  contract: string;
  timeoutsInRow: number;
  backoffUntilMs: number | null;
}

/** What a claim asks (DeliveryClaim of the webhooks port). */
export interface ClaimCaps {
  nowMs: number;
  limit: number;
  perEndpointLimit: number;
  perContractLimit: number;
  excludeEndpointIds: readonly string[];
}

/**
 * How many more sends an endpoint may take now: none while excluded (the job's own cap) or backed
 * off, one at a time while it times out, else perEndpointLimit; less its sends in flight.
 */
export function endpointRoom(endpoint: ClaimableEndpoint, sendsInFlight: number, caps: ClaimCaps): number {
  if (caps.excludeEndpointIds.includes(endpoint.id)) return 0;
  if (endpoint.backoffUntilMs !== null && endpoint.backoffUntilMs > caps.nowMs) return 0;
  const cap = endpoint.timeoutsInRow > 0 ? 1 : caps.perEndpointLimit;
  return Math.max(0, cap - sendsInFlight);
}

/** A delivery as the claim reads it. */
export interface DeliveryLeaseState {
  status: DeliveryStatus;
  nextAttemptAtMs: number | null;
  /** The lease's end; null when never leased or released. */
  claimedUntilMs: number | null;
}

/** A send in flight: a PENDING delivery whose lease has not run out (its job may be sending it). */
export function leaseIsLive(delivery: DeliveryLeaseState, nowMs: number): boolean {
  return delivery.status === "PENDING" && delivery.claimedUntilMs !== null && delivery.claimedUntilMs > nowMs;
}

/** Due: PENDING, its next attempt's time come, and no live lease (a lease whose job died runs out). */
export function isDue(delivery: DeliveryLeaseState, nowMs: number): boolean {
  return (
    delivery.status === "PENDING" &&
    delivery.nextAttemptAtMs !== null &&
    delivery.nextAttemptAtMs <= nowMs &&
    (delivery.claimedUntilMs === null || delivery.claimedUntilMs <= nowMs)
  );
}

/**
 * The order due deliveries are taken in: oldest due first, then oldest created (the row's `seq`);
 * within an endpoint it says which deliveries fill its room, across endpoints (after the turn) which
 * a claim takes first.
 */
export function dueOrder(a: { dueAtMs: number; seq: bigint }, b: { dueAtMs: number; seq: bigint }): number {
  return a.dueAtMs - b.dueAtMs || (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0);
}

/** A contract holds at most `maxPerContract` endpoints. */
export function endpointLimitReached(endpointCount: number, maxPerContract: number): boolean {
  return endpointCount >= maxPerContract;
}

/** Live leases of one endpoint (leaseIsLive), as the claim counts them. */
export interface EndpointSends {
  endpointId: string;
  contract: string;
  sends: number;
}

/** Sends in flight per endpoint and per contract (the sum of its endpoints'): what endpointRoom and chooseDue are given. */
export function sendsInFlightOf(endpoints: readonly EndpointSends[]): { byEndpoint: Map<string, number>; byContract: Map<string, number> } {
  const byEndpoint = new Map<string, number>();
  const byContract = new Map<string, number>();
  for (const { endpointId, contract, sends } of endpoints) {
    byEndpoint.set(endpointId, sends);
    byContract.set(contract, (byContract.get(contract) ?? 0) + sends);
  }
  return { byEndpoint, byContract };
}

/** A due delivery an endpoint offers: its `turn`-th in dueOrder (0 first); `seq` is its row's position. */
export interface DueCandidate {
  contract: string;
  turn: number;
  dueAtMs: number;
  seq: bigint;
}

/**
 * Which due deliveries a claim takes: round-robin by endpoint (every endpoint's first turn before
 * any second), in dueOrder within a turn, each contract up to perContractLimit sends in
 * flight (`contractSends`: its live leases), at most `limit`.
 */
export function chooseDue<T extends DueCandidate>(
  candidates: readonly T[],
  contractSends: ReadonlyMap<string, number>,
  caps: ClaimCaps,
): T[] {
  const sends = new Map(contractSends);
  const chosen: T[] = [];
  for (const candidate of [...candidates].sort((a, b) => a.turn - b.turn || dueOrder(a, b))) {
    if (chosen.length >= caps.limit) break;
    const taken = sends.get(candidate.contract) ?? 0;
    if (taken >= caps.perContractLimit) continue;
    sends.set(candidate.contract, taken + 1);
    chosen.push(candidate);
  }
  return chosen;
}
