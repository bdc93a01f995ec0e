import type { AddressKey } from "../domain/address.js";
import type { Balance } from "../domain/balance.js";
import type { Batch, BatchStatus, BatchWithTransfers, DefaultPointType, NewBatch, PointType } from "../domain/batch.js";
import type { SnapshotsStore } from "./ports/snapshots.js";
import type { EventsStore } from "./ports/events.js";
import type { WebhooksStore } from "./ports/webhooks.js";

/**
 * The LedgerStore port. Every operation that touches balances is one transaction inside the
 * adapter; adapters live in `sqlite/` and `postgres/` with the same file names, and both pass
 * `test/store-contract.ts`.
 */

export { availableOf, type Balance } from "../domain/balance.js";
// Snapshots have their own port; re-exported so the composed LedgerStore keeps one import.
export * from "./ports/snapshots.js";
export type * from "./ports/events.js";
export type * from "./ports/webhooks.js";

/** One balance per point type asked for (getBalances). */
export type Balances<T extends PointType = DefaultPointType> = Record<T, Balance>;

/** The credits of one point type that named one asset: summed, and the highest block they named. */
export interface AssetEarnings {
  pointType: PointType;
  asset: string;
  earnedCumulative: bigint;
  /** 0 when none of them named a block. */
  earnedCumulativeBlock: number;
}

export type SubmitResult =
  | { kind: "accepted"; batch: Batch }
  | { kind: "exists"; status: BatchStatus; matchesRequest: boolean }
  | { kind: "insufficient"; available: bigint; requested: bigint };

export interface NewCredit {
  address: AddressKey;
  creditId: string;
  pointType: PointType;
  amount: bigint;
  createdAtMs: number;
  /** What the points were earned on (feeds getAssetEarnings); absent or null: no asset. */
  asset?: string | null;
  /** Up to which block they were earned; absent or null: none. */
  block?: number | null;
}

export type CreditResult =
  | { kind: "credited" }
  | { kind: "exists"; matchesRequest: boolean }
  /** The credit would take the point type's supply (all its credits together) past MAX_SUPPLY_UNITS. */
  | { kind: "overflow" };

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
  /** No claim takes the batch again before this time (a bounded backoff, ../store/finalize-retry.ts). */
  retryAtMs: number;
  error: unknown;
}

export interface NewToken {
  tokenHash: Buffer;
  contract: AddressKey;
  operator: AddressKey;
  createdAtMs: number;
  expiresAtMs: number;
}

export interface TokenGrant {
  contract: AddressKey;
  operator: AddressKey;
  expiresAtMs: number;
}

export interface Violation {
  invariant: 1 | 2 | 3 | 4;
  message: string;
}

/** Credits and balances (accounts.ts, credits.ts, point-types.ts of each adapter). */
export interface AccountsStore {
  /** Idempotent by (address, creditId): a reuse says whether pointType, amount, asset and block all match. */
  credit(credit: NewCredit): Promise<CreditResult>;
  /**
   * One balance per point type in `pointTypes` (the configured ones; omitted, the default
   * POINT_TYPES), all zero for a type the address holds nothing of. One indexed read.
   */
  getBalances<T extends PointType = DefaultPointType>(address: AddressKey, pointTypes?: readonly T[]): Promise<Balances<T>>;
  /**
   * The address's credits that named an asset, one entry per (pointType, asset), from an
   * aggregate kept in each credit's transaction: one indexed read, however many credits.
   */
  getAssetEarnings(address: AddressKey): Promise<AssetEarnings[]>;
  /**
   * Every point type the database holds balances, batches or credits of (start-up refuses a
   * configuration that drops one: src/store/point-types.ts). Cheap: index lookups, not scans.
   */
  pointTypesInUse(): Promise<PointType[]>;
}

/** Batches: submit, read, cancel, finalize (batches.ts, finalize.ts of each adapter). */
export interface BatchesStore {
  /** Checks available ≥ total, reserves it and stores the batch with its transfers, atomically. */
  submitBatch(batch: NewBatch): Promise<SubmitResult>;
  getBatch(contract: AddressKey, batchId: string): Promise<BatchWithTransfers | null>;
  listBatches(contract: AddressKey, query: BatchQuery): Promise<BatchPage>;
  /** PENDING → CANCELLED while nowMs < finalizeAt; cancelling a CANCELLED batch is a no-op success. */
  cancelBatch(contract: AddressKey, batchId: string, nowMs: number): Promise<CancelResult>;
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
   * backoff (finalize-retry.ts) has passed, so every other due batch goes on however many fail;
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
}

/** A contract with a registered operator: one row of the operators table. */
export interface RegisteredOperator {
  contract: AddressKey;
  operator: AddressKey;
  /** When the operator was registered or last changed. */
  updatedAtMs: number;
}

export interface OperatorQuery {
  limit: number;
  /** Exclusive: the previous page's last contract. */
  after?: AddressKey;
}

export interface OperatorPage {
  operators: RegisteredOperator[];
  /** The last contract of this page when more follow, else null. */
  next: AddressKey | null;
}

/**
 * Operators, sign-in challenges and bearer tokens (auth.ts of each adapter). A challenge is not
 * stored when issued (src/auth/challenge-data.ts): only the key that seals challenges, and the
 * nonces of the challenges someone tried to solve, until they expire.
 */
export interface AuthStore {
  getOperator(contract: AddressKey): Promise<AddressKey | null>;
  /** Registers or changes the operator; a change revokes the contract's tokens. */
  setOperator(contract: AddressKey, operator: AddressKey, nowMs: number): Promise<void>;
  /** Every registered contract by address, one keyset page (on the operators primary key). */
  listOperators(query: OperatorQuery): Promise<OperatorPage>;
  /**
   * The service's own key stored under `name` (server_keys): the stored one, or `candidate` stored
   * now if there is none. Read first, so a read-only database that holds one still serves it;
   * instances racing to store theirs all get the same one back (the first insert wins). The same
   * in every process of a deployment and after restarts (sign-in challenges, events cursors).
   */
  serverKey(name: string, candidate: Buffer): Promise<Buffer>;
  /**
   * Records a challenge's nonce as used until `expiresAtMs`; true when it was not used before.
   * Atomic across every process on the database: of concurrent calls for one nonce, one gets true.
   */
  useChallengeNonce(nonce: string, expiresAtMs: number): Promise<boolean>;
  createToken(token: NewToken): Promise<void>;
  findToken(tokenHash: Buffer, nowMs: number): Promise<TokenGrant | null>;
  /** Deletes expired tokens, and used challenge nonces past their expiry (at most PURGE_USED_NONCES_LIMIT a call). */
  purgeExpired(nowMs: number): Promise<void>;
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
// Transfers and exports (docs/api.md, Transfers and exports). Adapters: sqlite/transfers.ts and
// its postgres/ twin. Snapshots have their own port: ports/snapshots.ts.

/** A transfer's place in the listing (newest first): its batch's (createdAtMs, seq), then its index. */
export interface TransferPosition {
  createdAtMs: number;
  seq: string;
  index: number;
}

export interface TransferQuery {
  toAddress?: AddressKey;
  pointType?: PointType;
  status?: BatchStatus;
  limit: number;
  /** Exclusive: where the previous page ended (its `next`). */
  after?: TransferPosition;
  /**
   * With any filter, the transfers after `after` a page examines at most, matching or not
   * (MAX_TRANSFERS_SCANNED_PER_PAGE; tests pass a small one). Without a filter a page reads `limit`.
   */
  scanLimit: number;
}

export interface TransferRow {
  batchId: string;
  toAddress: AddressKey;
  pointType: PointType;
  amount: bigint;
  status: BatchStatus;
  createdAtMs: number;
  finalizeAtMs: number;
  finalizedAtMs: number | null;
}

export interface TransferPage {
  /** At most `limit`; fewer, even none, when the scan reached `scanLimit` first. */
  transfers: TransferRow[];
  /**
   * Where the next page resumes when more may follow, else null: the last transfer returned (a
   * full page), or the last one examined (a page cut short by `scanLimit`).
   */
  next: TransferPosition | null;
}

/** One account row of the balances export, in (address, pointType) order. */
export interface AccountBalance {
  address: AddressKey;
  pointType: PointType;
  balance: Balance;
}

export interface AccountQuery {
  pointType?: PointType;
  limit: number;
  /** Exclusive: the previous page's last (address, pointType). */
  after?: { address: AddressKey; pointType: PointType };
}

export interface TransfersStore {
  /** A contract's transfers, newest first, one keyset page (a full export pages through them in constant memory). */
  listTransfers(contract: AddressKey, query: TransferQuery): Promise<TransferPage>;
  /** Every account row, by (address, pointType), one keyset page. */
  listAccountBalances(query: AccountQuery): Promise<AccountBalance[]>;
}
