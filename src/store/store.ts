import type { AddressKey } from "../domain/address.js";
import type { Batch, BatchStatus, BatchWithTransfers, NewBatch, PointType } from "../domain/batch.js";

/**
 * The LedgerStore port. Every operation that touches balances is one transaction inside the
 * adapter; adapters live in `sqlite/` and `postgres/` with the same file names, and both pass
 * `test/store-contract.ts`.
 */

export interface Balance {
  earnedCumulative: bigint;
  receivedCumulative: bigint;
  finalizedSentCumulative: bigint;
  pendingSent: bigint;
}

export function availableOf(balance: Balance): bigint {
  return balance.earnedCumulative + balance.receivedCumulative - balance.finalizedSentCumulative - balance.pendingSent;
}

export type Balances = Record<PointType, Balance>;

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
}

export type CreditResult =
  | { kind: "credited" }
  | { kind: "exists"; matchesRequest: boolean }
  /** The credit would take the account past MAX_POINTS_UNITS. */
  | { kind: "overflow" };

export type CancelResult =
  /** `changed` is false when the batch was already CANCELLED (a repeated cancel). */
  | { kind: "cancelled"; batch: Batch; changed: boolean }
  | { kind: "not_found" }
  | { kind: "not_cancellable"; batch: Batch };

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

export interface NewChallenge {
  challengeId: string;
  contract: AddressKey;
  operator: AddressKey;
  message: string;
  createdAtMs: number;
  expiresAtMs: number;
}

export interface Challenge extends NewChallenge {}

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

export interface LedgerStore {
  readonly kind: "sqlite" | "postgres";
  /** Brings the schema up to date; safe to run from several processes at once. */
  migrate(): Promise<void>;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  close(): Promise<void>;

  getOperator(contract: AddressKey): Promise<AddressKey | null>;
  /** Registers or changes the operator; a change revokes the contract's tokens. */
  setOperator(contract: AddressKey, operator: AddressKey, nowMs: number): Promise<void>;

  credit(credit: NewCredit): Promise<CreditResult>;
  getBalances(address: AddressKey): Promise<Balances>;

  /** Checks available ≥ total, reserves it and stores the batch with its transfers, atomically. */
  submitBatch(batch: NewBatch): Promise<SubmitResult>;
  getBatch(contract: AddressKey, batchId: string): Promise<BatchWithTransfers | null>;
  listBatches(contract: AddressKey, query: BatchQuery): Promise<BatchPage>;
  /** PENDING → CANCELLED while nowMs < finalizeAt; cancelling a CANCELLED batch is a no-op success. */
  cancelBatch(contract: AddressKey, batchId: string, nowMs: number): Promise<CancelResult>;

  /**
   * Finalizes up to `limit` due batches (finalizeAt ≤ nowMs), oldest first, each exactly once.
   * May finalize fewer while more are due (an adapter may bound its work per call); an empty
   * result means nothing due could be finalized.
   */
  finalizeDue(nowMs: number, limit: number): Promise<FinalizedBatch[]>;
  /** The earliest finalizeAt of a PENDING batch, or null. */
  nextFinalizeAtMs(): Promise<number | null>;

  createChallenge(challenge: NewChallenge): Promise<void>;
  /** Marks the challenge used and returns it, if it exists, is unused and unexpired. */
  consumeChallenge(challengeId: string, nowMs: number): Promise<Challenge | null>;
  createToken(token: NewToken): Promise<void>;
  findToken(tokenHash: Buffer, nowMs: number): Promise<TokenGrant | null>;
  /** Deletes expired challenges and tokens. */
  purgeExpired(nowMs: number): Promise<void>;

  /** Checks every ledger invariant of DESIGN.md over the whole database. */
  verify(): Promise<Violation[]>;
}
