import type { AddressKey } from "../../domain/address.js";
import type { LedgerEvent } from "../../domain/events.js";
import type {
  AttemptOutcome,
  ClaimableEndpoint,
  ClaimedDelivery,
  DeliveryAfterAttempt,
  DeliveryAttempt,
  DeliveryLease,
  DeliveryStatus,
  DueCandidate,
  EndpointFields,
  EndpointOperation,
  EndpointSends,
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointChange,
} from "../../domain/webhooks.js";
import type { Io, Out } from "./io.js";

/**
 * The webhooks port (docs/api.md, Webhooks): endpoints, their secrets and deliveries. Its
 * operations (WebhooksStore) are flows written once, in src/ledger/webhooks.ts, over the table
 * primitives of WebhooksPort; adapters: sqlite/webhooks.ts and postgres/webhooks.ts, each ending
 * in `satisfies WebhooksPort`. Deliveries are fanned out by each adapter's fanOutDeliveries in the
 * transaction that appends the events (ports/events.ts). The endpoint and delivery types and every
 * rule (limits, claims, backoff, what an attempt leaves) are the domain's (domain/webhooks.ts).
 */

export type {
  EndpointOperation,
  AttemptOutcome,
  ClaimedDelivery,
  DeliveryAttempt,
  DeliveryLease,
  DeliveryStatus,
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointChange,
} from "../../domain/webhooks.js";

export interface DeliveryClaim {
  nowMs: number;
  limit: number;
  /**
   * Sends in flight (live leases, every job's) to one endpoint at most after this claim: one
   * endpoint cannot take every slot. An endpoint whose last attempts timed out gets one.
   */
  perEndpointLimit: number;
  /** Sends in flight (live leases, every job's) to the endpoints of one contract at most: one tenant cannot take every slot. */
  perContractLimit: number;
  leaseMs: number;
  /** Endpoints this job already has enough sends in flight to. */
  excludeEndpointIds: readonly string[];
}

export interface DeliveryQuery {
  status?: DeliveryStatus;
  limit: number;
  /** Exclusive: the listing position of the previous page's last delivery (newest first). */
  before?: string;
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[];
  /** Position of the last delivery when more may follow, else null. */
  next: string | null;
}

export type EndpointCreateResult = { kind: "created"; endpoint: WebhookEndpoint } | { kind: "limit_reached" };

export interface WebhookBacklog {
  pending: number;
  oldestPendingCreatedAtMs: number | null;
}

export interface WebhooksStore {
  /** Refused (limit_reached) when the contract already has `maxPerContract` endpoints. */
  createWebhookEndpoint(endpoint: NewWebhookEndpoint, maxPerContract: number): Promise<EndpointCreateResult>;
  listWebhookEndpoints(contract: AddressKey): Promise<WebhookEndpoint[]>;
  getWebhookEndpoint(contract: AddressKey, endpointId: string): Promise<WebhookEndpoint | null>;
  /** Disabling fails the endpoint's PENDING deliveries (recover queues them again); enabling clears disabledReason. */
  updateWebhookEndpoint(
    contract: AddressKey,
    endpointId: string,
    change: WebhookEndpointChange,
    nowMs: number,
  ): Promise<WebhookEndpoint | null>;
  /** Deletes the endpoint and its deliveries; false when there was none. */
  deleteWebhookEndpoint(contract: AddressKey, endpointId: string): Promise<boolean>;
  /** The new secret signs from now on; the current one keeps signing beside it until nowMs + overlapMs. */
  rotateWebhookSecret(contract: AddressKey, endpointId: string, secret: string, nowMs: number, overlapMs: number): Promise<boolean>;
  /** A delivery of `event` (a webhook.test) to that endpoint only; the event is not on any stream. */
  createTestDelivery(contract: AddressKey, endpointId: string, event: LedgerEvent, nowMs: number): Promise<EndpointOperation<string>>;

  /**
   * Claims due deliveries (PENDING, nextAttemptAt ≤ now, no live lease) of enabled endpoints not
   * backed off, within the claim's per-endpoint and per-contract caps on sends in flight:
   * round-robin by endpoint, oldest due first, each leased until nowMs + leaseMs so no other job
   * sends the same attempt meanwhile (PostgreSQL: FOR UPDATE SKIP LOCKED); a lease that runs out
   * (its job died) makes the delivery due again.
   */
  claimDueDeliveries(claim: DeliveryClaim): Promise<ClaimedDelivery[]>;
  /**
   * Extends the leases still held (same claim token) to claimedUntilMs, while their attempts run;
   * returns the ids renewed (one missing lost its lease: another job may be sending it).
   */
  renewDeliveryLeases(leases: readonly DeliveryLease[], claimedUntilMs: number): Promise<string[]>;
  /** Stores the attempt's outcome if the claim is still this job's; false when it is not (the lease ran out). */
  recordDeliveryAttempt(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean>;
  /** Newest first; null when the endpoint is not the contract's. */
  listDeliveries(contract: AddressKey, endpointId: string, query: DeliveryQuery): Promise<DeliveryPage | null>;
  getDelivery(contract: AddressKey, endpointId: string, deliveryId: string): Promise<WebhookDelivery | null>;
  /** Makes the delivery due now (one more attempt for a FAILED one; a SUCCEEDED one is sent again). */
  retryDelivery(contract: AddressKey, endpointId: string, deliveryId: string, nowMs: number): Promise<EndpointOperation<WebhookDelivery>>;
  /** Queues again, with a fresh retry schedule, up to `limit` FAILED deliveries created at or after sinceMs; returns how many. */
  recoverDeliveries(
    contract: AddressKey,
    endpointId: string,
    sinceMs: number,
    nowMs: number,
    limit: number,
  ): Promise<EndpointOperation<number>>;
  /** Deletes up to `limit` SUCCEEDED or FAILED deliveries that finished before the time; returns how many. */
  purgeDeliveries(finishedBeforeMs: number, limit: number): Promise<number>;
  /** PENDING deliveries of the whole database and the creation time of the oldest (metrics). */
  webhookBacklog(): Promise<WebhookBacklog>;
}

/** How many due deliveries a claim asks of one endpoint (domain/webhooks.ts endpointRoom). */
export interface EndpointRoom {
  endpoint: ClaimableEndpoint;
  room: number;
}

/** The two rows an attempt may leave, for the endpoint enabled and disabled (domain/webhooks.ts deliveryAfterAttempt). */
export interface AttemptRows {
  enabled: DeliveryAfterAttempt;
  disabled: DeliveryAfterAttempt;
}

/**
 * The webhook tables' primitives, as the flows of src/ledger/webhooks.ts use them: each reads or
 * writes rows and decides nothing (the flows decide with domain/webhooks.ts). Each runs in the
 * caller's transaction or pass (ports/ledger.ts), and answers in mode M (./io.ts).
 */
export interface WebhooksPort<Db, out M extends Io = Io> {
  /** The contract's endpoints, counted under a lock held until the transaction ends: two creations for one contract take turns. */
  lockAndCountEndpoints(db: Db, contract: AddressKey): Out<M, number>;
  insertEndpoint(db: Db, endpoint: NewWebhookEndpoint): Out<M, void>;
  readEndpoint(db: Db, contract: AddressKey, endpointId: string): Out<M, WebhookEndpoint | null>;
  /** readEndpoint, the row held until the transaction ends (an endpoint is locked before its deliveries). */
  lockEndpoint(db: Db, contract: AddressKey, endpointId: string): Out<M, WebhookEndpoint | null>;
  listEndpoints(db: Db, contract: AddressKey): Out<M, WebhookEndpoint[]>;
  writeEndpoint(db: Db, endpointId: string, fields: EndpointFields): Out<M, void>;
  /** Deletes the endpoint and its deliveries; false when the contract has no such endpoint. */
  deleteEndpoint(db: Db, contract: AddressKey, endpointId: string): Out<M, boolean>;
  /** The current secret becomes the previous one until previousExpiresAtMs; false when there is no such endpoint. */
  rotateSecret(db: Db, contract: AddressKey, endpointId: string, secret: string, previousExpiresAtMs: number): Out<M, boolean>;
  disableEndpoint(db: Db, endpointId: string, reason: string): Out<M, void>;
  /** Ends the endpoint's backoff (timeouts in a row kept). */
  endBackoff(db: Db, endpointId: string): Out<M, void>;
  /** The endpoint answered: no timeouts in a row, no backoff. */
  clearTimeouts(db: Db, endpointId: string): Out<M, void>;
  /** One more timeout in a row; the count now, undefined when the endpoint is gone. */
  countTimeout(db: Db, endpointId: string): Out<M, number | undefined>;
  /** Holds the endpoint back until untilMs, or longer if it already was. */
  holdBack(db: Db, endpointId: string, untilMs: number): Out<M, void>;

  /** A PENDING delivery of `event`, due at nowMs (none when the endpoint already has one of that event). */
  insertDelivery(db: Db, deliveryId: string, endpointId: string, event: LedgerEvent, nowMs: number): Out<M, void>;
  readDelivery(db: Db, contract: AddressKey, endpointId: string, deliveryId: string): Out<M, WebhookDelivery | null>;
  listDeliveries(db: Db, endpointId: string, query: DeliveryQuery): Out<M, DeliveryPage>;
  /** Fails the endpoint's PENDING deliveries, finished at nowMs. */
  failPending(db: Db, endpointId: string, nowMs: number): Out<M, void>;
  /** Makes the delivery PENDING and due at nowMs, unless it is being sent (a live lease). */
  requeueDelivery(db: Db, deliveryId: string, nowMs: number): Out<M, void>;
  /** Queues again, tries reset, up to `limit` of the endpoint's FAILED deliveries created at or after sinceMs, oldest first; how many. */
  requeueFailed(db: Db, endpointId: string, sinceMs: number, nowMs: number, limit: number): Out<M, number>;
  purgeDeliveries(db: Db, finishedBeforeMs: number, limit: number): Out<M, number>;
  webhookBacklog(db: Db): Out<M, WebhookBacklog>;

  /** Enabled endpoints with PENDING deliveries, at most MAX_ENDPOINTS_WALKED_PER_CLAIM (walked through the pending index). */
  endpointsWithPending(db: Db): Out<M, ClaimableEndpoint[]>;
  /** Each endpoint's live leases (sends in flight, every job's: domain/webhooks.ts leaseIsLive), endpoints with none left out. */
  sendsInFlight(db: Db, nowMs: number): Out<M, EndpointSends[]>;
  /**
   * Each endpoint's due deliveries (domain/webhooks.ts isDue), oldest due first (dueOrder), up to
   * its room; `turn` is the place in that order (0 first).
   */
  dueDeliveries(db: Db, rooms: readonly EndpointRoom[], nowMs: number): Out<M, DueCandidate[]>;
  /**
   * Leases the deliveries at `seqs` that are still due (another job may have taken one meanwhile:
   * PostgreSQL re-checks each row under its lock and skips locked ones) until claimedUntilMs.
   */
  leaseDeliveries(db: Db, seqs: readonly bigint[], nowMs: number, claimedUntilMs: number): Out<M, ClaimedDelivery[]>;
  /** The ids whose lease (same claim token, still PENDING) now runs to claimedUntilMs. */
  renewLeases(db: Db, leases: readonly DeliveryLease[], claimedUntilMs: number): Out<M, string[]>;
  /** Whether the claim is still this job's (its token on the delivery). */
  claimHeld(db: Db, lease: DeliveryLease): Out<M, boolean>;
  /**
   * Stores the attempt (the latest MAX_ATTEMPTS_KEPT kept) and the row `rows` gives for the
   * endpoint as this write reads it, if the claim is still held; the endpoint's state, or null when
   * the claim is not held.
   */
  storeAttempt(
    db: Db,
    lease: DeliveryLease & { endpointId: string },
    attempt: DeliveryAttempt,
    rows: AttemptRows,
  ): Out<M, { endpointDisabled: boolean } | null>;
}
