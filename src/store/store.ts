import type { AddressKey } from "../domain/address.js";
import type { CommittedEventsListener } from "./committed-events.js";
import type { EventType, LedgerEvent, StreamEventType } from "../domain/events.js";
import type { PointType } from "../domain/batch.js";
import type { AccountsStore } from "./ports/accounts.js";
import type { AuthStore } from "./ports/auth.js";
import type { BatchesStore } from "./ports/batches.js";
import type { TransfersStore } from "./ports/transfers.js";
import type { Snapshot, SnapshotMeasure } from "../domain/snapshot.js";

/**
 * The LedgerStore port, composed of one port per concern (./ports/). Every operation that touches
 * balances is one flow of src/ledger/, run once for both databases in one transaction over the
 * adapters' table primitives; adapters live in `sqlite/` and `postgres/` with the same file names,
 * and both pass `test/store-contract.ts`.
 */

export { availableOf, type Balance } from "../domain/balance.js";
// The per-concern ports, re-exported so the HTTP layer and the worker keep one import.
export type * from "./ports/accounts.js";
export type * from "./ports/auth.js";
export type * from "./ports/batches.js";
export type * from "./ports/credits.js";
export type * from "./ports/transfers.js";

export interface Violation {
  invariant: 1 | 2 | 3 | 4;
  message: string;
}

/** What GET …/events and the admin listing ask the store (docs/api.md Events). */
export interface EventQuery {
  /** The contract (or credited address) whose stream to read; null: every event, admin ones too. */
  stream: AddressKey | null;
  /** A position the store returned earlier; null: from the oldest retained event. */
  after: string | null;
  /** Only these types; null: all. */
  types: readonly EventType[] | null;
  limit: number;
  /**
   * `after` came from an unauthenticated cursor (the old `ev1:` form): refuse one past the newest
   * event (VALIDATION_FAILED), which the service never gave out and which would hide events.
   */
  verifyAfter?: boolean;
}

export interface StoredEvent {
  /** Where a reader that has seen this event continues (opaque, adapter-specific, ordered). */
  position: string;
  event: LedgerEvent;
}

export type EventPage =
  /** `position`: where the next call starts (the last event's, or `after` when none came). */
  | { kind: "page"; events: StoredEvent[]; position: string; hasMore: boolean }
  /** `after` lies before the retained events: purged ones would be skipped (410 CURSOR_EXPIRED). */
  | { kind: "expired" };

/**
 * The event log. Events are appended by the adapters inside each transition's transaction (an
 * outbox: an event exists iff its change committed). Paging with `after` returns every event
 * exactly once and in one order, also while several processes write: an event that commits late
 * is never skipped (PostgreSQL orders by transaction, see postgres/events.ts).
 */
export interface EventsStore {
  /**
   * Calls `listener` with the events of each transaction this process commits, right after the
   * commit (never for a rolled-back one); returns the unsubscribe function.
   */
  onCommittedEvents(listener: CommittedEventsListener): () => void;
  /** Throws VALIDATION_FAILED (path `after`) for a position this adapter never gave out. */
  listEvents(query: EventQuery): Promise<EventPage>;
  /** Deletes events that occurred before `beforeMs`, oldest first, at most `limit`; returns how many. */
  purgeEvents(beforeMs: number, limit: number): Promise<number>;
}

/**
 * The whole port: one sub-interface per concern, implemented by the adapters' mirrored files
 * (sqlite/<file>.ts beside postgres/<file>.ts), plus the database's own life cycle.
 */
export interface LedgerStore extends AccountsStore, BatchesStore, AuthStore, EventsStore, WebhooksStore, TransfersStore, SnapshotsStore {
  readonly kind: "sqlite" | "postgres";
  /** Brings the schema up to date; safe to run from several processes at once. */
  migrate(): Promise<void>;
  /**
   * Resolves when the database answers and accepts writes (rejects with StoreUnavailableError
   * on a full disk or a read-only database); an adapter may reuse a result for about a second.
   */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Checks every ledger invariant (README, Architecture: Ledger model) over the whole database. */
  verify(): Promise<Violation[]>;
}

// ---------------------------------------------------------------------------------------------
// Webhooks (docs/api.md, Webhooks): endpoints, their secrets and deliveries. Adapters: sqlite/webhooks.ts
// and postgres/webhooks.ts; deliveries are fanned out by each adapter's fanOutDeliveries in the
// transaction that appends the events.

export type DeliveryStatus = "PENDING" | "SUCCEEDED" | "FAILED";

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

/** What the delivery job decided after an attempt (src/webhooks/schedule.ts). */
export interface AttemptOutcome {
  attempt: DeliveryAttempt;
  status: DeliveryStatus;
  nextAttemptAtMs: number | null;
  /** Set on a 410: the endpoint is disabled at once, with this reason. */
  disableEndpoint: string | null;
  /**
   * No answer within the send timeout: the endpoint's timeouts in a row grow and it is backed off
   * (webhook-rules.ts endpointBackoffMs, one send at a time); any answer ends that.
   */
  timedOut: boolean;
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
/** An operation on one endpoint: missing (or another contract's), disabled (nothing would be sent), or done. */
export type EndpointOperation<T> = { kind: "not_found" } | { kind: "disabled" } | { kind: "done"; value: T };

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

// ---------------------------------------------------------------------------------------------
// Transfers, exports and snapshots (docs/api.md, Transfers and exports; Snapshots). Adapters:
// sqlite/transfers.ts, sqlite/snapshots.ts and their postgres/ twins.

/** Every positive amount of one point type at one consistent moment, by address (columns, for memory). */
export interface SnapshotHoldings {
  addresses: AddressKey[];
  /** In units of 10^-12 point, each > 0. */
  units: bigint[];
}

/** One chunk of leaves (domain/snapshot.ts encodeLeafChunk), LEAVES_PER_CHUNK of them, by address. */
export interface SnapshotLeafChunk {
  firstAddress: AddressKey;
  text: string;
}

/** What makes a built snapshot visible: its row and its event, naming the build whose chunks it reads. */
export interface SnapshotPublication {
  snapshot: Snapshot;
  /** Unique per attempt: keys the chunks, so a lost race or a crash never mixes two builds. */
  buildId: string;
  /** snapshot.created, appended in the transaction that makes the snapshot visible. */
  event: LedgerEvent;
}

export interface NewSnapshot extends SnapshotPublication {
  /** The leaves by address, LEAVES_PER_CHUNK a row. */
  leafChunks: SnapshotLeafChunk[];
  /** The tree's nodes, NODES_PER_CHUNK a row, in tree order. */
  nodeChunks: Buffer[];
}

export type SnapshotCreateResult = { kind: "created" } | { kind: "exists"; snapshot: Snapshot };

/** A write to a build the purge has given up on (no write for SNAPSHOT_BUILD_ABANDONED_AFTER_MS): its chunks are being deleted. */
export class SnapshotBuildAbandonedError extends Error {
  constructor(readonly buildId: string) {
    super(`snapshot build ${buildId} was abandoned (no write for too long) and its chunks purged`);
    this.name = "SnapshotBuildAbandonedError";
  }
}

/**
 * Snapshots and their builds. A build (src/snapshots/snapshots.ts) is registered, writes its
 * chunks a few at a time, then publishes; until it publishes nothing reads its chunks. A build row
 * records its last write: one that stops writing (its process died) or gives up is abandoned,
 * and the purge job deletes its chunks in bounded steps (purgeSnapshotBuilds).
 */
export interface SnapshotsStore {
  /**
   * Every address whose `measure` of the point type is > 0, read in ONE consistent view of the
   * database (no batch half in, half out, however long the read takes), by address, without
   * holding a lock that would stop submissions or finalization.
   */
  readSnapshotHoldings(pointType: PointType, measure: SnapshotMeasure): Promise<SnapshotHoldings>;
  /** Registers a build of `snapshotId`, alive as of nowMs; before any of its chunks is written. */
  beginSnapshotBuild(buildId: string, snapshotId: string, nowMs: number): Promise<void>;
  /**
   * Stores chunks numbered from `firstChunkNo` and records nowMs as the build's last write, in one
   * short transaction. Throws SnapshotBuildAbandonedError for a build that is abandoned or unknown.
   */
  writeSnapshotLeafChunks(buildId: string, firstChunkNo: number, chunks: readonly SnapshotLeafChunk[], nowMs: number): Promise<void>;
  writeSnapshotNodeChunks(buildId: string, firstChunkNo: number, chunks: readonly Buffer[], nowMs: number): Promise<void>;
  /**
   * Stores the snapshot row and its event and forgets the build, in one transaction, unless the
   * id is taken (then: the stored one, and this build is abandoned). Immutable once stored.
   * Throws SnapshotBuildAbandonedError for a build that is abandoned or unknown.
   */
  publishSnapshot(publication: SnapshotPublication): Promise<SnapshotCreateResult>;
  /** Marks a build that will not publish (it failed) abandoned: the next purge deletes its chunks. */
  abandonSnapshotBuild(buildId: string): Promise<void>;
  /**
   * One bounded step of the cleanup, in one short transaction: marks abandoned every build with no
   * write since before `staleBeforeMs`, deletes at most `limit` chunks of abandoned builds, and
   * forgets abandoned builds left with none. Returns how many chunks it deleted (< limit: none
   * is left). Never touches a published snapshot's chunks.
   */
  purgeSnapshotBuilds(staleBeforeMs: number, limit: number): Promise<number>;
  getSnapshot(snapshotId: string): Promise<Snapshot | null>;
  /** The text of the leaf chunk that holds `address` if the snapshot has it; null: no such chunk. */
  findSnapshotLeafChunk(snapshotId: string, address: AddressKey): Promise<string | null>;
  /** The node chunks numbered `chunkNumbers`. */
  getSnapshotNodeChunks(snapshotId: string, chunkNumbers: readonly number[]): Promise<Map<number, Buffer>>;
  /** Chunks from number `from` on, at most `limit`, in order (the streamed dump). */
  listSnapshotLeafChunks(snapshotId: string, from: number, limit: number): Promise<string[]>;
  listSnapshotNodeChunks(snapshotId: string, from: number, limit: number): Promise<Buffer[]>;
}
