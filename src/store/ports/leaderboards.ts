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
 *   time (first ≤ asOf < last), its transfers in that day's batches of the contract up to then
 *   (read on the shorter side: the day's amount less those after then, when that reads fewer).
 * A window (whole UTC days, ended or still open) is read from its window board once one is kept
 * for it (SQLite migration 16 / PostgreSQL 14): window_boards (one per board and window, with how
 * many batches it holds), window_batches (which ones: a row per batch, not per transfer),
 * window_entries, window_ranking and window_bands (the board tables' shape, read by the same
 * code). The window job (src/worker/window-boards.ts, the flow src/ledger/history.ts
 * buildWindowBoards) builds one in bounded steps after a read asked for it, and then adds each
 * FINALIZED batch of the window that it does not hold yet (a window still open gains one with
 * every finalization inside it); WINDOW_BOARDS_PER_BOARD are kept per board (the oldest asked is
 * dropped, in steps too). A finalization writes nothing for windows but one more finalized batch
 * on its board's row (boards.finalized_batches).
 * A window board holds only FINALIZED batches of its window, each once, and a batch never leaves
 * that state: so it misses a batch exactly when it holds fewer than the window's FINALIZED
 * batches (one count over batches_finalized); and it misses none while its board has finalized
 * no batch since the job last found it complete (boards.finalized_batches against
 * window_boards.seen_finalized: no count at all, so an idle board costs its readers and the job
 * nothing). A read uses it when it misses none, or only batches finalized less than
 * WINDOW_BOARD_LAG_MS before the reader's now (API.md: a batch shows within 1 s of its
 * finalizedAt); otherwise (still building, the job behind, or a batch finalized inside an ended
 * window by a clock set back) it sums the window's batches and their transfers, so a window
 * board can be late but a read is never wrong.
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
  /** The reader's time: what a window board may lag behind (none: windows are always read from their batches). */
  nowMs?: number;
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
  readStanding(contract: AddressKey, pointType: PointType, window: DayWindow, address: AddressKey, nowMs?: number): Promise<BoardStanding>;
  /** Batches finalized before history existed that the history job has yet to add; reads answer 503 while any is left. */
  historyBackfillRemaining(): Promise<number>;
  /** One bounded step of the history job: adds up to `limit` of those batches, each exactly once; how many it added. */
  backfillHistory(limit: number): Promise<number>;
  /**
   * One bounded step of the window job: adds up to `limit` batches to a window board being built
   * (or drops up to `limit` × WINDOW_DROP_ENTRIES_PER_BATCH entries of one being dropped). 0 when
   * there was nothing to do; otherwise `limit` (the job goes on to the next step).
   */
  buildWindowBoards(limit: number): Promise<number>;
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
   * gain them, and the board counts one more finalized batch (boards.finalized_batches). Rows are touched in address order (PostgreSQL: no deadlock between finalizers).
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

/** A window board the window job builds or drops (window_boards), locked for this step (PostgreSQL: FOR UPDATE SKIP LOCKED). */
export interface WindowBoardWork {
  window: number;
  contract: AddressKey;
  pointType: PointType;
  fromMs: number;
  toMs: number;
  state: "building" | "ready" | "dropping";
  /** The board's count of finalized batches (boards.finalized_batches) as this step read it. */
  boardFinalized: number;
}

/** The window boards for the window job's flow (src/ledger/history.ts buildWindowBoards), inside its transaction `db`. */
export interface WindowBoardsPort<Db, out M extends Io = Io> {
  /**
   * A window board to drop (first), or one that misses FINALIZED batches of its window (being
   * built, or behind), locked for this transaction; null when none is. Ready ones whose board
   * finalized batches since they were seen, but none of their window, are recorded as seen.
   */
  takeWindowWork(db: Db): Out<M, WindowBoardWork | null>;
  /** Up to `limit` FINALIZED batches of the work's window (finalized in [fromMs, toMs)) that its window board does not hold, in seq order. */
  windowBatches(db: Db, work: WindowBoardWork, limit: number): Out<M, StoredBatch[]>;
  /** Adds the batch to the window board: its transfers as addToBoard adds them to the board, and the batch to window_batches; the recipients ranked. */
  addToWindow(db: Db, window: number, batch: StoredBatch): Out<M, number>;
  /**
   * Counts `added` more batches held; `caughtUp` (none left to add) makes it ready, so reads use
   * it, and records work.boardFinalized as seen: until the board finalizes another batch, it
   * misses none, with nothing counted.
   */
  advanceWindow(db: Db, work: WindowBoardWork, added: number, caughtUp: boolean): Out<M, void>;
  /** Deletes up to `limit` entries of a dropped window board, and the board itself (batches, bands, row) once none is left; how many entries it deleted. */
  dropWindowEntries(db: Db, window: number, limit: number): Out<M, number>;
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
