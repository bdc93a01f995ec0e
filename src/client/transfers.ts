import type { Address, BatchStatus, PointType, Points } from "./types.js";

/** One transfer of a batch as GET …/transfers lists it (docs/api.md Transfers and exports). */
export interface ListedTransfer {
  batchId: string;
  toAddress: Address;
  pointType: PointType;
  points: Points;
  /** The status of its batch. */
  status: BatchStatus;
  createdAt: string;
  finalizeAt: string;
  finalizedAt: string | null;
}

export interface TransferPageQuery {
  /** What the contract sent this recipient. */
  toAddress?: string;
  pointType?: PointType;
  status?: BatchStatus;
  /** 1–1000. */
  limit?: number;
  cursor?: string;
}

export interface TransferPage {
  transfers: ListedTransfer[];
  /** null: no more pages. */
  cursor: string | null;
}

/** The query string of GET …/transfers. */
export function transferQueryOf(query: TransferPageQuery): Record<string, string | undefined> {
  return {
    toAddress: query.toAddress,
    pointType: query.pointType,
    status: query.status,
    limit: query.limit === undefined ? undefined : String(query.limit),
    cursor: query.cursor,
  };
}
