import type { AddressKey } from "../../domain/address.js";
import type { Actor } from "../../domain/api-keys.js";
import type { Batch, BatchStatus, BatchWithTransfers, NewBatch, PointType, Transfer } from "../../domain/batch.js";
import type { Io, Out } from "./io.js";

export type SubmitResult =
  | { kind: "accepted"; batch: Batch }
  | { kind: "exists"; status: BatchStatus; matchesRequest: boolean }
  | { kind: "insufficient"; available: bigint; requested: bigint };

export type CancelResult =
  /** `changed` is false when the batch was already CANCELLED (a repeated cancel). */
  { kind: "cancelled"; batch: Batch; changed: boolean } | { kind: "not_found" } | { kind: "not_cancellable"; batch: Batch };

export interface BatchQuery {
  pointType?: PointType;
  status?: BatchStatus;
  /** Exclusive bounds, epoch milliseconds. */
  createdBeforeMs?: number;
  createdAfterMs?: number;
  sort: "ASC" | "DESC";
  limit: number;
  /** Position after which the page starts (from the previous page's last batch). */
  after?: BatchPosition;
}

/** A batch's place in the listing order: (createdAtMs, seq). */
export interface BatchPosition {
  createdAtMs: number;
  seq: string;
}

export interface BatchPage {
  batches: Batch[];
  /** Position of the last batch when more may follow, else null. */
  next: BatchPosition | null;
}

export interface FinalizedBatch {
  contract: AddressKey;
  batchId: string;
  transferCount: number;
  finalizeAtMs: number;
  finalizedAtMs: number;
}

/** A batch whose finalization failed; the failure is stored on the batch, which stays PENDING. */
export interface FinalizeFailure {
  contract: AddressKey;
  batchId: string;
  /** Failed attempts so far, this one included. */
  failures: number;
  /** No claim takes the batch again before this time (a bounded backoff, domain/finalize-retry.ts). */
  retryAtMs: number;
  error: unknown;
}

/** Batches: submit, read, cancel, finalize (flows in src/ledger/, primitives in batches.ts of each adapter). */
export interface BatchesStore {
  /** Checks available ≥ total, reserves it and stores the batch with its transfers, atomically. */
  /** `submittedBy`: who submits it; absent, the service itself (tools and tests that act as no one). */
  submitBatch(batch: NewBatch, submittedBy?: Actor): Promise<SubmitResult>;
  getBatch(contract: AddressKey, batchId: string): Promise<BatchWithTransfers | null>;
  listBatches(contract: AddressKey, query: BatchQuery): Promise<BatchPage>;
  /** PENDING → CANCELLED while nowMs < finalizeAt; cancelling a CANCELLED batch is a no-op success. */
  cancelBatch(contract: AddressKey, batchId: string, nowMs: number, cancelledBy?: Actor): Promise<CancelResult>;
  /**
   * Finalizes due batches (finalizeAt ≤ nowMs), each exactly once, attempting at most `limit`.
   *
   * Fair across contracts: due batches are claimed round-robin by contract (every contract's
   * oldest due batch, by finalizeAt then submission, before any contract's second), so one
   * sender's backlog cannot starve another's; within a contract, oldest first.
   *
   * Isolated failures: a batch whose finalization fails (a broken invariant, a statement that
   * fails or times out) is rolled back alone: it never undoes another batch's finalization. The
   * failure is stored on the batch, which stays PENDING and is not claimed again before a bounded
   * backoff (domain/finalize-retry.ts) has passed, so every other due batch goes on however many fail;
   * then it is retried, and a failure that healed finalizes. Each failure is passed to
   * `onFailure` once stored. Only a database that cannot be reached or written fails the call.
   *
   * May finalize fewer while more are due (an adapter may bound its work per call); an empty
   * result with no failure reported means nothing due could be attempted.
   */
  finalizeDue(nowMs: number, limit: number, onFailure?: (failure: FinalizeFailure) => void): Promise<FinalizedBatch[]>;
  /**
   * The earliest time a claim can find a PENDING batch: its finalizeAt, or for a batch whose
   * finalization failed, the time of its next attempt; null when nothing is PENDING.
   */
  nextFinalizeAtMs(): Promise<number | null>;
  /** PENDING batches whose last finalization attempt failed (the whole database, cheap: a partial index). */
  countFailingBatches(): Promise<number>;
  /**
   * PENDING batches whose finalizeAt is before `dueBeforeMs` (the whole database), counted up to
   * `limit`: a range of the batches_due index, bounded so a huge backlog costs one bounded scan.
   */
  countOverdueBatches(dueBeforeMs: number, limit: number): Promise<number>;
}

/** A batch row as the flows see it: the batch, and its row's key (`seq`, decimal). */
export interface StoredBatch extends Batch {
  seq: string;
}

/** A claimable batch in the fair order, and the contract it counts against. */
export interface DueBatch {
  seq: string;
  contract: string;
}

/** What recordFinalizeFailure stored: failed attempts so far, and when the batch may be claimed again. */
export interface StoredFinalizeFailure {
  contract: AddressKey;
  batchId: string;
  failures: number;
  retryAtMs: number;
}

/** The batches and transfers tables, as the ledger flows (src/ledger/) use them inside a transaction `db`. */
export interface BatchesPort<Db, out M extends Io = Io> {
  /**
   * Inserts the batch row (PENDING, finalizing at `finalizeAtMs`: the domain's acceptedBatch
   * decides it) unless (contract, batchId) is taken; its seq, or undefined
   * when taken. A concurrent insert of the same batchId waits for the other transaction, so
   * exactly one submission of a batchId is accepted.
   */
  insertBatch(db: Db, batch: NewBatch, finalizeAtMs: number, submittedBy: Actor): Out<M, string | undefined>;
  insertTransfers(db: Db, seq: string, transfers: readonly Transfer[]): Out<M, void>;
  findBatch(db: Db, contract: AddressKey, batchId: string): Out<M, StoredBatch | undefined>;
  /** findBatch, holding the row's lock until the transaction ends where the database has row locks (cancel vs. finalize). */
  lockBatch(db: Db, contract: AddressKey, batchId: string): Out<M, StoredBatch | undefined>;
  readTransfers(db: Db, seq: string): Out<M, Transfer[]>;
  /** Changes the status only if it still is `from`, storing `cancelledBy` (null unless `to` is CANCELLED); true when it did. */
  setStatus(db: Db, seq: string, from: BatchStatus, to: BatchStatus, nowMs: number, cancelledBy: Actor | null): Out<M, boolean>;
  /** Up to `limit` claimable batches in fair order (round-robin by contract, starting after `afterContract`); a plain read. */
  fairDueBatches(db: Db, nowMs: number, limit: number, afterContract: string): Out<M, DueBatch[]>;
  /**
   * Batch `seq` if it is still claimable at nowMs (PENDING, due, not backing off), else
   * undefined; where several processes finalize, locked, skipping one another holds.
   */
  claimBatch(db: Db, seq: string, nowMs: number): Out<M, StoredBatch | undefined>;
  /**
   * Stores a failed finalization on a PENDING batch: one more failure, the error, and the time
   * before which no claim takes it again (domain/finalize-retry.ts). Undefined if it is no longer PENDING.
   */
  recordFinalizeFailure(db: Db, seq: string, nowMs: number, errorText: string): Out<M, StoredFinalizeFailure | undefined>;
  /** BatchesStore.getBatch: the batch with its transfers, read consistently, or null. */
  readBatch(db: Db, contract: AddressKey, batchId: string): Out<M, BatchWithTransfers | null>;
  listBatches(db: Db, contract: AddressKey, query: BatchQuery): Out<M, BatchPage>;
  nextFinalizeAtMs(db: Db): Out<M, number | null>;
  countFailingBatches(db: Db): Out<M, number>;
  countOverdueBatches(db: Db, dueBeforeMs: number, limit: number): Out<M, number>;
}
