import type { AddressKey } from "../../domain/address.js";
import type { Balance } from "../../domain/balance.js";
import type { PointType } from "../../domain/batch.js";
import type { BoardRow, DayWindow } from "../../domain/leaderboard.js";
import type { StoredBatch } from "./batches.js";
import type { Io, Out } from "./io.js";

/**
 * Leaderboards and history (API.md "Leaderboards and history", `asOf` under Snapshots).
 *
 * Kept in the transaction of the finalization that changes them (src/ledger/history.ts, called by
 * src/ledger/finalize.ts), on both databases, in rows kept small because a finalization writes
 * one of each per transfer and its commit writes every page it touched (SQLite migration 15 /
 * PostgreSQL 13):
 * - boards: an integer per (contract, point type);
 * - board_entries: per (board, address as its 20 bytes) the points the contract's finalized
 *   transfers sent it, with an index in board order (points desc, address);
 * - board_bands: per (board, rank band) how many entries it holds (domain/leaderboard.ts
 *   rankBandOf), so a rank or `participants` never counts the whole board;
 * - received_daily: per (address, point type, UTC day, contract) the points received that day, in
 *   place, with the day's first and last receipt times. An address's receivedCumulative as of a
 *   time is its days whose last receipt was by then, plus, for the one day that straddles the
 *   time (first ≤ asOf < last), its transfers in that day's batches of the contract up to then.
 * Windows are read from the FINALIZED batches of the window (batches_finalized index) and their
 * transfers: nothing more is written per transfer for them.
 * history_backfill lists the batches that were FINALIZED before these tables existed; the
 * history job (src/worker/) adds them in bounded steps through the same flow.
 */

/** Where a page starts: after this (amount, address) in board order. */
export interface BoardAfter {
  units: bigint;
  address: AddressKey;
}

export interface BoardQuery {
  contract: AddressKey;
  pointType: PointType;
  window: DayWindow;
  limit: number;
  after: BoardAfter | null;
}

export interface BoardPage {
  /** Addresses ranked on the whole board (or window). */
  participants: number;
  /** Up to `limit` rows after `after`, in board order (ranks: domain/leaderboard.ts rankPage). */
  rows: BoardRow[];
  /** True when rows after the last one exist. */
  more: boolean;
}

export interface BoardStanding {
  /** The address's points on the board: 0n when it has none. */
  units: bigint;
  /** Entries with strictly more points (its rank is ahead + 1 when units > 0). */
  ahead: number;
  participants: number;
}

/** One address's balance of one point type as the ledger stood at a time. */
export interface BalanceAsOf {
  address: AddressKey;
  pointType: PointType;
  balance: Balance;
}

/** What the HTTP layer, the CLI and snapshots read (each adapter's leaderboards.ts). */
export interface LeaderboardsStore {
  readBoard(query: BoardQuery): Promise<BoardPage>;
  readStanding(contract: AddressKey, pointType: PointType, window: DayWindow, address: AddressKey): Promise<BoardStanding>;
  /** Batches finalized before history existed that the history job has yet to add; reads answer 503 while any is left. */
  historyBackfillRemaining(): Promise<number>;
  /** One bounded step of the history job: adds up to `limit` of those batches, each exactly once; how many it added. */
  backfillHistory(limit: number): Promise<number>;
}

/** Balances as they stood at a time (each adapter's history.ts). */
export interface HistoryStore {
  /**
   * The address's balances as they stood at asOfMs (API.md `asOf`): credits created at or before
   * it; batches created at or before it pending unless cancelled or finalized at or before it;
   * receipts of batches finalized at or before it. One per point type asked, zero before any entry.
   */
  getBalancesAsOf<T extends PointType>(address: AddressKey, pointTypes: readonly T[], asOfMs: number): Promise<Record<T, Balance>>;
}

/** The history tables for the ledger flows (src/ledger/history.ts), inside a finalization's transaction `db`. */
export interface LeaderboardsPort<Db, out M extends Io = Io> {
  /**
   * Adds the batch's transfers (summed per recipient) to its contract's board: the bands of the
   * recipients' old amounts lose them, board_entries grows, the bands of the new amounts
   * gain them. Rows are touched in address order (PostgreSQL: no deadlock between finalizers).
   * Returns the recipients ranked (SQLite counts an address named twice in the batch twice).
   */
  addToBoard(db: Db, batch: StoredBatch): Out<M, number>;
  /** Adds each recipient's points to its received_daily row of finalizedAtMs's UTC day (first and last times widened to it). */
  addReceipts(db: Db, batch: StoredBatch, finalizedAtMs: number): Out<M, void>;
  /**
   * Takes up to `limit` batches off history_backfill (deleted in this transaction; PostgreSQL:
   * rows another instance holds are skipped), each with the time it was finalized.
   */
  takeBackfill(db: Db, limit: number): Out<M, { batch: StoredBatch; finalizedAtMs: number }[]>;
}

/** Reads of history outside the flows: the adapter's own (one consistent view where it matters). */
export interface HistoryReadPort<Db, out M extends Io = Io> {
  /**
   * Balances at asOfMs of every address in (afterAddress, throughAddress] that has any history of
   * `pointType` (a credit, a batch sent, a receipt) — the snapshot reads pages of these. Zero
   * balances may be left out.
   */
  readBalancesAsOf(db: Db, pointType: PointType, afterAddress: string, throughAddress: string, asOfMs: number): Out<M, BalanceAsOf[]>;
}
