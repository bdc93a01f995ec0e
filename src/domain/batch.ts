import type { AddressKey } from "./address.js";

export const POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
export type PointType = (typeof POINT_TYPES)[number];

export const BATCH_STATUSES = ["PENDING", "FINALIZING", "FINALIZED", "CANCELLED"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** batchId and creditId: 1 to 64 characters of `A-Z a-z 0-9 . _ : -`. */
export const ID_MAX_LENGTH = 64;
export const ID_PATTERN = "^[A-Za-z0-9._:-]{1,64}$";

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
