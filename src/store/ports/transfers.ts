import type { AddressKey } from "../../domain/address.js";
import type { Balance } from "../../domain/balance.js";
import type { BatchStatus, PointType } from "../../domain/batch.js";
import type { Io, Out } from "./io.js";

// Transfers and exports (docs/api.md, Transfers and exports): reads only, no flow. Adapters:
// sqlite/transfers.ts and postgres/transfers.ts.

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

/** The reads behind TransfersStore, implemented by transfers.ts of each adapter. */
export interface TransfersPort<Db, out M extends Io = Io> {
  listTransfers(db: Db, contract: AddressKey, query: TransferQuery): Out<M, TransferPage>;
  listAccountBalances(db: Db, query: AccountQuery): Out<M, AccountBalance[]>;
}
