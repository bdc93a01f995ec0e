import type { AddressKey } from "../../domain/address.js";
import type { Balance } from "../../domain/balance.js";
import type { PointType } from "../../domain/batch.js";
import type { BoardRow, DayWindow, WindowBounds } from "../../domain/leaderboard.js";
import type { StoredBatch } from "./batches.js";
import type { Io, Out } from "./io.js";

/**
 * Leaderboards and history (API.md "Leaderboards and history", `asOf` under Snapshots): read
 * models, applied after the finalization by the projection (domain/projection.ts, the flow
 * src/ledger/projection.ts, the job src/worker/projection.ts), never inside it. The finalization
 * writes one projection_queue row per batch (its finalizedAt and seq) and nothing else for them;
 * a pass takes the queue's head, applies it, deletes it and moves projection_state.through_ms,
 * all in one transaction, so a crash loses and doubles nothing. What a pass writes, in rows kept
 * small (SQLite migration 15 / PostgreSQL 13):
 * - boards: an integer per (contract, point type), with the count of batches applied to it;
 * - board_entries: per (board, address as its 20 bytes) the points the contract's finalized
 *   transfers sent it, with an index in board order (points desc, address);
 * - board_bands: per (board, rank band) how many entries it holds (domain/leaderboard.ts
 *   rankBandOf), so a rank or `participants` never counts the whole board;
 * - received_daily: per (address, point type, UTC day, contract) the points received that day, in
 *   place, with the day's first and last receipt times. An address's receivedCumulative as of a
 *   time is its days whose last receipt was by then, plus, for the one day that straddles the
 *   time (first ≤ asOf < last), its transfers in that day's batches of the contract up to then
 *   (read on the shorter side: the day's amount less those after then, when that reads fewer),
 *   plus its transfers in the queued batches finalized by then (not applied yet);
 * - window boards (SQLite migration 16 / PostgreSQL 14): window_boards (one per board and window,
 *   with how many batches it holds), window_batches (which ones: a row per batch), window_entries
 *   and window_bands (the board tables' shape, read by the same code). A read of a window asks for
 *   one; it starts at the projection's through then (built_through_ms): the window job adds the
 *   window's batches finalized by then in bounded steps, and every pass after adds its own batches
 *   to every kept window board of their window. Once the job is done (ready) a window board is
 *   exact at the projection's through, like the board; until then a read sums the window's
 *   batches finalized by through and their transfers. WINDOW_BOARDS_PER_BOARD are kept per board
 *   (the oldest asked is dropped, in steps too).
 * Every answer carries the projection's through (API.md): it counts every batch finalized at or
 * before it, each whole, and none after it.
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
  /** The projection's through (epoch ms): the page counts exactly the batches finalized at or before it. */
  throughMs: number;
  /** Addresses ranked on the whole board (or window). */
  participants: number;
  /** Up to `limit` rows after `after`, in board order (ranks: domain/leaderboard.ts rankPage). */
  rows: BoardRow[];
  /** True when rows after the last one exist. */
  more: boolean;
}

export interface BoardStanding {
  /** The projection's through (epoch ms), as BoardPage's. */
  throughMs: number;
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

/** What the HTTP layer, the CLI and snapshots read (each adapter's leaderboards.ts), and the projection's steps. */
export interface LeaderboardsStore {
  readBoard(query: BoardQuery): Promise<BoardPage>;
  readStanding(contract: AddressKey, pointType: PointType, window: DayWindow, address: AddressKey, nowMs?: number): Promise<BoardStanding>;
  /** The projection's through (epoch ms) and how many finalized batches are queued for it. */
  projectionState(): Promise<ProjectionState>;
  /**
   * One bounded step of the projection (src/ledger/projection.ts): applies up to `limit` queued
   * batches (more when a tie of finalization times is larger), each exactly once, as of `nowMs`;
   * how many it applied (on PostgreSQL 0 also when another instance is applying).
   */
  applyProjection(limit: number, nowMs: number): Promise<ProjectionStep>;
  /**
   * True when the projection's writes run beside the ledger's writer, on another thread
   * (src/ledger/sqlite-projection.ts): a pass then takes none of the finalizer's time, and the
   * projection job need not step aside for a backlog (src/worker/projection.ts).
   */
  readonly projectionAside: boolean;
  /**
   * One bounded step of the window job: adds up to `limit` batches to a window board being built
   * (or drops up to `limit` × WINDOW_DROP_ENTRIES_PER_BATCH entries of one being dropped). 0 when
   * there was nothing to do; otherwise `limit` (the job goes on to the next step).
   */
  buildWindowBoards(limit: number): Promise<number>;
}

export interface ProjectionState {
  throughMs: number;
  queued: number;
  /** The earliest finalization time still queued; null when the queue is empty. */
  oldestQueuedMs: number | null;
}

/** Where a pass applies to (its through), and whether batches past it are queued already (src/ledger/projection.ts cutProjection). */
export interface ProjectionCut {
  cutMs: number;
  more: boolean;
}

/**
 * Where an adapter runs the projection's writes (src/ledger/projection.ts): a cut's pass and the
 * window job's steps. By default on the ledger's own database; SQLite runs them on the projection
 * file's connection, in a worker thread (src/ledger/sqlite-projection.ts).
 */
export interface ProjectionRunner {
  pass(cut: ProjectionCut): Promise<ProjectionStep>;
  buildWindowBoards(limit: number): Promise<number>;
}

export interface ProjectionStep {
  /** Batches applied. */
  applied: number;
  /** Transfers in them. */
  transfers: number;
  /** The through after the step; null when the step changed nothing. */
  throughMs: number | null;
  /** The finalization times of the batches applied (for the lag histogram). */
  finalizedAtMs: number[];
  /** Batches finalized after the step's through were queued when it cut: another step has work. */
  more: boolean;
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

/** A queued batch as a pass applies it: the batch, and when it finalized. */
export interface QueuedBatch {
  batch: StoredBatch;
  finalizedAtMs: number;
}

/** The projection's tables for the flows: the finalization's two calls, and a pass's (src/ledger/projection.ts). */
export interface ProjectionPort<Db, out M extends Io = Io> {
  /** Inside a finalization: the fence (PostgreSQL: read FOR SHARE, so a pass raising it waits for this transaction). */
  readFence(db: Db): Out<M, number>;
  /** Inside a finalization: the batch queued for the projection (one row). */
  enqueue(db: Db, seq: string, finalizedAtMs: number): Out<M, void>;
  /**
   * A pass's first transaction: locks the projection's state (PostgreSQL: FOR UPDATE, which waits
   * for the finalizations in flight), and reads its through and the finalization times of up to
   * `limit` queued batches, in (finalizedAt, seq) order.
   */
  queueHead(db: Db, limit: number): Out<M, { throughMs: number; head: number[] }>;
  /** Raises the fence to `fenceMs` (never lowers it). */
  raiseFence(db: Db, fenceMs: number): Out<M, void>;
  /**
   * A step's first transaction, before it cuts: false while another instance's pass holds the
   * applier's lock (PostgreSQL: the same advisory lock, tried, so the cut of a step that could not
   * apply neither raises the fence nor waits for the finalizations in flight; SQLite: one process).
   */
  applierFree(db: Db): Out<M, boolean>;
  /** A pass's second transaction: whether this one may apply (PostgreSQL: a transaction advisory lock, tried; SQLite: the one writer). */
  claimApplier(db: Db): Out<M, boolean>;
  /** Takes the queued batches finalized at or before throughMs off the queue (deleted in this transaction), in (finalizedAt, seq) order. */
  takeQueued(db: Db, throughMs: number): Out<M, QueuedBatch[]>;
  /**
   * Applies the batches of one UTC day (`dayMs`): each recipient's sum on its board (bands moved),
   * in received_daily (first and last times widened), and on every kept window board of that
   * board whose window holds the day and that started before them; the boards count the batches.
   * Returns how many (board, address) entries it touched.
   */
  applyBatches(db: Db, batches: readonly QueuedBatch[], dayMs: number): Out<M, number>;
  /** Moves through_ms to throughMs (never back). */
  advanceThrough(db: Db, throughMs: number): Out<M, void>;
}

/** A window board the window job builds or drops (window_boards), locked for this step (PostgreSQL: FOR UPDATE SKIP LOCKED). */
export interface WindowBoardWork {
  window: number;
  contract: AddressKey;
  pointType: PointType;
  fromMs: number;
  toMs: number;
  state: "building" | "dropping";
  /** Where the projection stood when the window board was asked for: the job adds the window's batches finalized by then, passes add the later ones. */
  builtThroughMs: number;
}

/** The window boards for the window job's flow (src/ledger/projection.ts buildWindowBoards), inside its transaction `db`. */
export interface WindowBoardsPort<Db, out M extends Io = Io> {
  /** A window board to drop (first), or one being built, locked for this transaction; null when none is. */
  takeWindowWork(db: Db): Out<M, WindowBoardWork | null>;
  /**
   * Up to `limit` FINALIZED batches of the work's window (finalized in [fromMs, toMs)) finalized
   * at or before builtThroughMs that its window board does not hold, in seq order.
   */
  windowBatches(db: Db, work: WindowBoardWork, limit: number): Out<M, StoredBatch[]>;
  /** Adds the batch to the window board: its transfers summed per recipient, and the batch to window_batches; the recipients ranked. */
  addToWindow(db: Db, window: number, batch: StoredBatch): Out<M, number>;
  /** Counts `added` more batches held; `caughtUp` (none left to add) makes it ready, so reads use it. */
  advanceWindow(db: Db, work: WindowBoardWork, added: number, caughtUp: boolean): Out<M, void>;
  /** Deletes up to `limit` entries of a dropped window board, and the board itself (batches, bands, row) once none is left; how many entries it deleted. */
  dropWindowEntries(db: Db, window: number, limit: number): Out<M, number>;
}

/**
 * A ranked board a read reads (entries, bands and ranking index): the all-time board of a contract
 * and point type (the adapter finds it; none yet reads as empty), or a kept window board by its
 * window_id.
 */
export type RankedBoard = { kind: "allTime"; contract: AddressKey; pointType: PointType } | { kind: "window"; window: number };

/** What a window's read found: its board (boards.board), and its kept window board (not dropping) if any. */
export interface FoundWindowBoard {
  board: number;
  kept: { window: number; state: "building" | "ready" } | null;
}

/** A window board to list for the window job: the board, the window's bounds, and when it was asked for. */
export interface WindowBoardRequest extends WindowBounds {
  board: number;
  nowMs: number;
}

/** A window read from its batches: the board's FINALIZED batches finalized in [fromMs, toMs) and by throughMs, summed per recipient. */
export interface WindowOfBatches extends WindowBounds {
  contract: AddressKey;
  pointType: PointType;
  throughMs: number;
}

/** The entries ahead of an amount on a ranked board: in the bands above its band, and inside its band with more points. */
export interface EntriesAhead {
  inBandsAbove: number;
  insideBand: number;
}

/**
 * The primitives the leaderboard read flow (src/ledger/leaderboards.ts) reads with, inside one
 * snapshot `db` (LeaderboardReadsOf.snapshot), and the window board request it makes after it
 * (inside LeaderboardReadsOf.transact). The flow decides: all time or a window, whether a window
 * board is ready, the rank from the bands, the paging; the adapter only runs SQL.
 */
export interface LeaderboardReadPort<Db, out M extends Io = Io> {
  /** The projection's through: what every answer of the snapshot counts. */
  readThrough(db: Db): Out<M, number>;
  /** The board of (contract, point type) and its kept window board of those bounds; null when the board does not exist yet. */
  findWindowBoard(db: Db, contract: AddressKey, pointType: PointType, bounds: WindowBounds): Out<M, FoundWindowBoard | null>;
  /** Up to `limit` entries after `after` (null: from the top), in board order (points desc, address). */
  rankedRows(db: Db, board: RankedBoard, after: BoardAfter | null, limit: number): Out<M, BoardRow[]>;
  /** How many entries the board ranks (the sum of its bands). */
  participants(db: Db, board: RankedBoard): Out<M, number>;
  /** The address's points on the board; 0n when it has no entry. */
  entryUnits(db: Db, board: RankedBoard, address: AddressKey): Out<M, bigint>;
  /**
   * The entries ahead of an amount `units` of band `band` (upperUnits: bandUpperUnits(band)): those
   * of the bands above (their bands' sums), and those inside the band with more points (a count of
   * one range of the ranking index, below upperUnits).
   */
  entriesAhead(db: Db, board: RankedBoard, band: number, units: bigint, upperUnits: bigint): Out<M, EntriesAhead>;
  /** A page of a window read from its batches: up to `limit` rows after `after`, in board order, and how many it ranks. */
  windowPage(db: Db, window: WindowOfBatches, after: BoardAfter | null, limit: number): Out<M, { participants: number; rows: BoardRow[] }>;
  /** An address's place on a window read from its batches (its points, the entries with more, how many it ranks). */
  windowStanding(db: Db, window: WindowOfBatches, address: AddressKey): Out<M, Omit<BoardStanding, "throughMs">>;
  /**
   * Lists a window board for the window job unless one is kept, starting at the projection's
   * through (built_through_ms). PostgreSQL first waits for a pass in flight (the applier's lock):
   * one that began before the window board existed does not add to it.
   */
  requestWindowBoard(db: Db, request: WindowBoardRequest): Out<M, void>;
  /** Marks the board's window boards past the newest `keep` (by window_id) dropping (the window job deletes them in steps). */
  capWindowBoards(db: Db, board: number, keep: number): Out<M, void>;
}

/**
 * One database as the leaderboard read flow sees it: its primitives, and how it runs them. `M`
 * says how it answers (./io.ts), as LedgerDatabaseOf's.
 */
export interface LeaderboardReadsOf<Db, M extends "sync" | "async"> {
  readonly mode: M;
  readonly port: LeaderboardReadPort<Db, M>;
  /**
   * Runs `work` in one consistent snapshot, read-only: the projection's through and every row of
   * the answer agree (SQLite: one read transaction; PostgreSQL: REPEATABLE READ READ ONLY).
   */
  snapshot<R>(work: (db: Db) => Out<M, R>): Out<M, R>;
  /** Runs `work` in one short write transaction (SQLite: IMMEDIATE; PostgreSQL: READ COMMITTED). */
  transact<R>(work: (db: Db) => Out<M, R>): Out<M, R>;
  /** The database cannot take this now (full, read-only, busy, unreachable): what the store answers 503 for. */
  isUnavailable(error: unknown): boolean;
}

export type LeaderboardReads<Db> = LeaderboardReadsOf<Db, "sync"> | LeaderboardReadsOf<Db, "async">;

/** Reads of history outside the flows: the adapter's own (one consistent view where it matters). */
export interface HistoryReadPort<Db, out M extends Io = Io> {
  /**
   * Balances at asOfMs of every address in (afterAddress, throughAddress] that has any history of
   * `pointType` (a credit, a batch sent, a receipt) — the snapshot reads pages of these. Zero
   * balances may be left out.
   */
  readBalancesAsOf(db: Db, pointType: PointType, afterAddress: string, throughAddress: string, asOfMs: number): Out<M, BalanceAsOf[]>;
}
