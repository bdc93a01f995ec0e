import type { AddressKey } from "../domain/address.js";
import type { PointType } from "../domain/batch.js";
import { assertInvariant } from "../domain/errors.js";
import { bandUpperUnits, isAllTime, rankBandOf, windowBoundsOf, type BoardRow, type DayWindow } from "../domain/leaderboard.js";
import { WINDOW_BOARDS_PER_BOARD } from "../domain/limits.js";
import type {
  BoardAfter,
  BoardPage,
  BoardQuery,
  BoardStanding,
  LeaderboardReadPort,
  LeaderboardReads,
  RankedBoard,
  WindowBoardRequest,
  WindowOfBatches,
} from "../store/ports/leaderboards.js";
import { io, runAsync, runSync, type Flow } from "./flow.js";

/**
 * The leaderboard reads (API.md "Leaderboards and history"), written once for both databases
 * over the primitives of src/store/ports/leaderboards.ts LeaderboardReadPort. A read is one
 * snapshot: the projection's through first, then the rows it counts, so the answer is exact for
 * its through. It reads
 * - all time: the board's entries, bands and ranking index;
 * - a window: its window board once that is ready (the window job added the window's batches up
 *   to where the projection stood when it was asked for, and every pass since added its own: it
 *   is exact at through); otherwise the window's batches finalized by through, summed. A window
 *   with no window board kept asks for one after its read (the snapshot is read-only); one being
 *   built is left to the window job. Readers that give no time, and boards not created yet, read
 *   the batches and ask for nothing.
 * A rank comes from the bands (domain/leaderboard.ts rankBandOf): the entries of the bands above
 * the address's amount, plus those inside its band with more points (bandUpperUnits bounds the
 * range); never a count of the whole board.
 */

/** What a snapshot read answers, and the window board to ask for after it (none: null). */
interface Snapshot<R> {
  answer: R;
  request: WindowBoardRequest | null;
}

/** Which board a read reads, and the reader's time (none: a window is read from its batches, and no window board asked for). */
type BoardTarget = Pick<BoardQuery, "contract" | "pointType" | "window" | "nowMs">;

/** Where a read finds its board: a ranked board (all time, or a ready window board), or a window's batches. */
type Source = { kind: "ranked"; board: RankedBoard } | { kind: "batches"; window: WindowOfBatches; request: WindowBoardRequest | null };

function* sourceOf<Db>(port: LeaderboardReadPort<Db>, db: Db, target: BoardTarget, throughMs: number): Flow<Source> {
  const { contract, pointType, window, nowMs } = target;
  if (isAllTime(window)) return { kind: "ranked", board: { kind: "allTime", contract, pointType } };
  const bounds = windowBoundsOf(window);
  const batches: WindowOfBatches = { contract, pointType, ...bounds, throughMs };
  if (nowMs === undefined) return { kind: "batches", window: batches, request: null };
  const found = yield* io(port.findWindowBoard(db, contract, pointType, bounds));
  if (found === null) return { kind: "batches", window: batches, request: null };
  if (found.kept === null) return { kind: "batches", window: batches, request: { board: found.board, ...bounds, nowMs } };
  if (found.kept.state === "ready") return { kind: "ranked", board: { kind: "window", window: found.kept.window } };
  return { kind: "batches", window: batches, request: null };
}

/** Rows read with one more than the page holds: the extra one only says that more follow. */
function pageOf(rows: BoardRow[], limit: number, after: BoardAfter | null): { rows: BoardRow[]; more: boolean } {
  assertInvariant(rows.length <= limit + 1, `a page of ${limit} read ${rows.length} rows`);
  let previous = after;
  for (const row of rows) {
    // Board order, strictly after the cursor: points descending, then address ascending.
    const ordered = previous === null || row.units < previous.units || (row.units === previous.units && row.address > previous.address);
    assertInvariant(ordered && row.units > 0n, `a board page is out of order at ${row.address} (${row.units})`);
    previous = row;
  }
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

function* boardSnapshot<Db>(port: LeaderboardReadPort<Db>, db: Db, query: BoardQuery): Flow<Snapshot<BoardPage>> {
  const throughMs = yield* io(port.readThrough(db));
  const source = yield* sourceOf(port, db, query, throughMs);
  if (source.kind === "batches") {
    const { participants, rows } = yield* io(port.windowPage(db, source.window, query.after, query.limit + 1));
    return { answer: { throughMs, participants, ...pageOf(rows, query.limit, query.after) }, request: source.request };
  }
  const rows = yield* io(port.rankedRows(db, source.board, query.after, query.limit + 1));
  const participants = yield* io(port.participants(db, source.board));
  assertInvariant(rows.length <= participants, `a page of ${rows.length} rows on a board of ${participants} entries`);
  return { answer: { throughMs, participants, ...pageOf(rows, query.limit, query.after) }, request: null };
}

/** An address's place on a ranked board: the entries ahead of its amount, counted from the bands. */
function* rankedStanding<Db>(
  port: LeaderboardReadPort<Db>,
  db: Db,
  board: RankedBoard,
  address: AddressKey,
): Flow<Omit<BoardStanding, "throughMs">> {
  const participants = yield* io(port.participants(db, board));
  const units = yield* io(port.entryUnits(db, board, address));
  if (units === 0n) return { units, ahead: participants, participants };
  const band = rankBandOf(units);
  const { inBandsAbove, insideBand } = yield* io(port.entriesAhead(db, board, band, units, bandUpperUnits(band)));
  return { units, ahead: inBandsAbove + insideBand, participants };
}

function* standingSnapshot<Db>(
  port: LeaderboardReadPort<Db>,
  db: Db,
  target: BoardTarget,
  address: AddressKey,
): Flow<Snapshot<BoardStanding>> {
  const throughMs = yield* io(port.readThrough(db));
  const source = yield* sourceOf(port, db, target, throughMs);
  const standing =
    source.kind === "batches"
      ? yield* io(port.windowStanding(db, source.window, address))
      : yield* rankedStanding(port, db, source.board, address);
  // An address with points is one of the participants, so fewer than all of them are ahead of it.
  assertInvariant(
    standing.units === 0n ? standing.ahead === standing.participants : standing.ahead < standing.participants,
    `${address} (${standing.units}) has ${standing.ahead} ahead of ${standing.participants} participants`,
  );
  return { answer: { throughMs, ...standing }, request: source.kind === "batches" ? source.request : null };
}

/** Lists the window board for the window job, and keeps WINDOW_BOARDS_PER_BOARD of the board's (the oldest asked dropped). */
function* requestWindowBoard<Db>(port: LeaderboardReadPort<Db>, db: Db, request: WindowBoardRequest): Flow<void> {
  yield* io(port.requestWindowBoard(db, request));
  yield* io(port.capWindowBoards(db, request.board, WINDOW_BOARDS_PER_BOARD));
}

/** Runs `flow` in one snapshot of `database` (LeaderboardReadsOf.snapshot), driven the way it answers. */
function inSnapshot<Db, R>(database: LeaderboardReads<Db>, flow: (port: LeaderboardReadPort<Db>, db: Db) => Flow<R>): R | Promise<R> {
  if (database.mode === "sync") return database.snapshot((db) => runSync(flow(database.port, db)));
  return database.snapshot((db) => runAsync(flow(database.port, db)));
}

/** Runs `flow` in one short write transaction of `database` (LeaderboardReadsOf.transact). */
function inWrite<Db, R>(database: LeaderboardReads<Db>, flow: (port: LeaderboardReadPort<Db>, db: Db) => Flow<R>): R | Promise<R> {
  if (database.mode === "sync") return database.transact((db) => runSync(flow(database.port, db)));
  return database.transact((db) => runAsync(flow(database.port, db)));
}

/**
 * The snapshot, then the window board it asks for, in a transaction of its own after the read's.
 * One behaviour on both databases: a request the database cannot take now (full, read-only,
 * busy past its timeout, unreachable: LeaderboardReadsOf.isUnavailable) is dropped and the read
 * still answers, since its answer is exact without it and the next read of the window asks
 * again; any other failure fails the read (a bug, not a condition).
 */
function* readThenRequest<Db, R>(
  database: LeaderboardReads<Db>,
  read: (port: LeaderboardReadPort<Db>, db: Db) => Flow<Snapshot<R>>,
): Flow<R> {
  const { answer, request } = yield* io(inSnapshot(database, read));
  if (request === null) return answer;
  try {
    yield* io(inWrite(database, (port, db) => requestWindowBoard(port, db, request)));
  } catch (error) {
    if (!database.isUnavailable(error)) throw error;
  }
  return answer;
}

/**
 * A window board asked for, in its own write transaction (the window's request after a read, run
 * by the projection's writer where an adapter keeps it elsewhere: src/ledger/sqlite-projection.ts).
 */
export function requestWindowBoardIn<Db>(database: LeaderboardReads<Db>, request: WindowBoardRequest): void | Promise<void> {
  return run(database, io(inWrite(database, (port, db) => requestWindowBoard(port, db, request))));
}

function run<Db, R>(database: LeaderboardReads<Db>, flow: Flow<R>): R | Promise<R> {
  return database.mode === "sync" ? runSync(flow) : runAsync(flow);
}

/** LeaderboardsStore.readBoard: a page of a board (all time or a window), its rows, participants and through from one snapshot. */
export function readBoard<Db>(database: LeaderboardReads<Db>, query: BoardQuery): BoardPage | Promise<BoardPage> {
  return run(
    database,
    readThenRequest(database, (port, db) => boardSnapshot(port, db, query)),
  );
}

/** LeaderboardsStore.readStanding: an address's place on a board (all time or a window), from one snapshot. */
export function readStanding<Db>(
  database: LeaderboardReads<Db>,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
  nowMs?: number,
): BoardStanding | Promise<BoardStanding> {
  return run(
    database,
    readThenRequest(database, (port, db) => standingSnapshot(port, db, { contract, pointType, window, nowMs }, address)),
  );
}
