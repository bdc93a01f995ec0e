import type { AddressKey } from "./address.js";
import type { Actor } from "./api-keys.js";

/**
 * A point type is configuration (POINT_TYPES, src/config.ts): the service knows no names of its
 * own. DEFAULT_POINT_TYPES is only the setting's default, the two types of the Blast API.
 */
export type PointType = string;
export const POINT_TYPE_PATTERN = "^[A-Z][A-Z0-9_]{0,31}$";
export const DEFAULT_POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
export type DefaultPointType = (typeof DEFAULT_POINT_TYPES)[number];

/** An asset a credit can name (`asset`), listed per asset in a balance's `byAsset`. */
export const ASSET_PATTERN = "^[A-Z][A-Z0-9_]{0,15}$";
export const DEFAULT_BALANCE_ASSETS = ["ETH", "WETH", "USDB", "BLAST"] as const;
/** A credit's `block`: an integer ≥ 0 that JSON and a JavaScript number carry exactly. */
export const MAX_BLOCK = Number.MAX_SAFE_INTEGER;

export const BATCH_STATUSES = ["PENDING", "FINALIZING", "FINALIZED", "CANCELLED"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/**
 * batchId and creditId: 1 to 64 characters of `A-Z a-z 0-9 . _ : -`, but not `.` or `..`: URL
 * resolution (fetch, browsers, the project's own client) turns those path segments into the
 * parent path, so such a batch could never be read or cancelled.
 */
export const ID_MAX_LENGTH = 64;
export const ID_PATTERN = "^(?!\\.{1,2}$)[A-Za-z0-9._:-]{1,64}$";

export interface Transfer {
  toAddress: AddressKey;
  amount: bigint;
}

/** A validated batch ready for the store: addresses normalized, points parsed, total computed. */
export interface NewBatch {
  contract: AddressKey;
  batchId: string;
  pointType: PointType;
  transfers: Transfer[];
  total: bigint;
  secondsToFinalize: number;
  createdAtMs: number;
}

export interface Batch {
  contract: AddressKey;
  batchId: string;
  pointType: PointType;
  status: BatchStatus;
  total: bigint;
  transferCount: number;
  secondsToFinalize: number;
  createdAtMs: number;
  finalizeAtMs: number;
  updatedAtMs: number | null;
  finalizedAtMs: number | null;
  cancelledAtMs: number | null;
  /** Who submitted it (API.md Events, actor). */
  submittedBy: Actor;
  /** Who cancelled it; null until it is cancelled. */
  cancelledBy: Actor | null;
}

export interface BatchWithTransfers extends Batch {
  transfers: Transfer[];
}

/** Does a stored batch say the same as a new request? (pointType, transfers in order, delay) */
export function batchMatchesRequest(stored: BatchWithTransfers, request: NewBatch): boolean {
  if (stored.pointType !== request.pointType) return false;
  if (stored.secondsToFinalize !== request.secondsToFinalize) return false;
  if (stored.transfers.length !== request.transfers.length) return false;
  for (let i = 0; i < stored.transfers.length; i++) {
    const a = stored.transfers[i]!;
    const b = request.transfers[i]!;
    if (a.toAddress !== b.toAddress || a.amount !== b.amount) return false;
  }
  return true;
}
