import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { bandUpperUnits, isAllTime, rankBandOf, utcDayOf, type BoardRow, type DayWindow } from "../../domain/leaderboard.js";
import { WINDOW_BOARD_LAG_MS, WINDOW_BOARDS_PER_BOARD } from "../../domain/limits.js";
import { UNITS_PER_POINT } from "../../domain/points.js";
import type { StoredBatch } from "../ports/batches.js";
import type { BoardPage, BoardQuery, BoardStanding, LeaderboardsPort, WindowBoardsPort, WindowBoardWork } from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import type { BatchRow } from "./batches.js";
import { fromPair, fromTriple, isUnavailableCondition, statement, toNumber, toTriple, type SqliteDb } from "./db.js";

/**
 * The leaderboards and received_daily (../ports/leaderboards.ts) over SQLite. Amounts are the
 * schema's (q, w, f) triples, added with carries as accounts.ts adds receivedCumulative. Every
 * write is one set-based statement over the batch's transfers (`transfers WHERE seq = ?`).
 */

/**
 * The batch's transfers that move points, one row each: no GROUP BY (it cost about 1 µs a
 * transfer in each statement). An address named twice in a batch is added twice, row by row,
 * through the upserts' conflict clause, which sums it exactly as a GROUP BY would.
 */
const TRANSFERS_SQL = `SELECT to_address AS address, amount_w AS w, amount_f AS f
   FROM transfers WHERE seq = @seq AND (amount_w > 0 OR amount_f > 0)`;

/** A (w, f) pair's sum with a triple's old value, carried: the same bounds as accounts.ts creditRecipients. */
function carriedSet(prefix: string): string {
  return `${prefix}_q = ${prefix}_q
         + (${prefix}_w + excluded.${prefix}_w + (${prefix}_f + excluded.${prefix}_f) / 1000000000000) / 1000000000000000000,
       ${prefix}_w = (${prefix}_w + excluded.${prefix}_w + (${prefix}_f + excluded.${prefix}_f) / 1000000000000) % 1000000000000000000,
       ${prefix}_f = (${prefix}_f + excluded.${prefix}_f) % 1000000000000`;
}

/**
 * The board's integer key (boards), created with its first entry (`create`; the insert only when
 * it is missing). Entries, the ranking index and the bands are keyed by it and by the address's 20
 * bytes, not by the contract and address as text: rows a third the size, so a finalization
 * dirties (and its commit writes) a third of the pages (migrations/index.ts, version 15).
 */
function boardId(db: SqliteDb, contract: AddressKey, pointType: PointType, create: boolean): bigint | null {
  const board = statement(db, "SELECT board FROM boards WHERE contract = ? AND point_type = ?").pluck().get(contract, pointType);
  if (board !== undefined) return BigInt(board as bigint);
  if (!create) return null;
  return BigInt(statement(db, "INSERT INTO boards (contract, point_type) VALUES (?, ?)").run(contract, pointType).lastInsertRowid);
}

/** An address's key in board_entries and received_daily: its 20 bytes. */
export function addressBytes(address: string): Buffer {
  return Buffer.from(address.slice(2), "hex");
}

/** An `address` column of 20 bytes back as the service's address key (0x and lowercase hex). */
export const ADDRESS_TEXT = (column = "address") => `'0x' || lower(hex(${column}))`;

/** A board's tables: the all-time board's, or a window board's (migrations/index.ts, versions 15 and 16). */
interface BoardTables {
  entries: string;
  bands: string;
  /** The column that says which board (or window board) a row belongs to. */
  key: string;
}

const BOARD_TABLES: BoardTables = { entries: "board_entries", bands: "board_bands", key: "board" };
const WINDOW_TABLES: BoardTables = { entries: "window_entries", bands: "window_bands", key: "window_id" };

/**
 * The batch's transfers on a board (`key`: its board or window_id), in one upsert; the bands
 * follow through the schema's triggers on the entries (migrations/index.ts, versions 15 and 16),
 * which move an entry from its old band to its new one only when the band changes: per row inside
 * the statement, instead of two more statements that looked every recipient up again (measured: 2
 * µs a transfer for the triggers, 4 µs for the statements). Returns the rows ranked (an address
 * named twice counts twice).
 */
function addTransfers(db: SqliteDb, tables: BoardTables, key: bigint | number, seq: string): number {
  return statement(
    db,
    `INSERT INTO ${tables.entries} (${tables.key}, address, points_w, points_f)
     SELECT @key, unhex(substr(address, 3)), w, f FROM (${TRANSFERS_SQL}) WHERE true
     ON CONFLICT (${tables.key}, address) DO UPDATE SET ${carriedSet("points")}`,
  ).run({ seq: BigInt(seq), key }).changes;
}

/** The batch's transfers on its contract's board (created with its first entry), and one more finalized batch counted. */
function addToBoard(db: SqliteDb, batch: StoredBatch): number {
  const board = boardId(db, batch.contract, batch.pointType, true)!;
  statement(db, "UPDATE boards SET finalized_batches = finalized_batches + 1 WHERE board = ?").run(board);
  return addTransfers(db, BOARD_TABLES, board, batch.seq);
}

/**
 * Each recipient's receipt into received_daily: its row of (board, UTC day of finalizedAtMs) grows
 * in place, and its first and last receipt times widen to take finalizedAtMs.
 */
function addReceipts(db: SqliteDb, batch: StoredBatch, finalizedAtMs: number): void {
  statement(
    db,
    `INSERT INTO received_daily (address, board, day_ms, first_at_ms, last_at_ms, amount_w, amount_f)
     SELECT unhex(substr(address, 3)), @board, @dayMs, @at, @at, w, f FROM (${TRANSFERS_SQL}) WHERE true
     ON CONFLICT (address, board, day_ms) DO UPDATE SET ${carriedSet("amount")},
       first_at_ms = min(first_at_ms, excluded.first_at_ms), last_at_ms = max(last_at_ms, excluded.last_at_ms)`,
  ).run({
    seq: BigInt(batch.seq),
    board: boardId(db, batch.contract, batch.pointType, true),
    dayMs: utcDayOf(finalizedAtMs),
    at: finalizedAtMs,
  });
}

/** Up to `limit` batches off history_backfill, oldest first, deleted in this transaction. */
function takeBackfill(db: SqliteDb, limit: number): { batch: StoredBatch; finalizedAtMs: number }[] {
  const seqs = (
    statement(db, "DELETE FROM history_backfill WHERE seq IN (SELECT seq FROM history_backfill ORDER BY seq LIMIT ?) RETURNING seq")
      .pluck()
      .all(limit) as bigint[]
  ).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return seqs.map((seq) => {
    const row = statement(db, "SELECT * FROM batches WHERE seq = ?").get(seq) as BatchRow;
    const batch = toStoredBatch(row, fromPair(row.total_w, row.total_f));
    return { batch, finalizedAtMs: toNumber(row.finalized_at_ms) };
  });
}

/** The history tables for the ledger flows (src/ledger/history.ts), synchronously. */
export const leaderboards = { addToBoard, addReceipts, takeBackfill } satisfies LeaderboardsPort<SqliteDb, "sync">;

// ---- Window boards -----------------------------------------------------------------------------

interface WindowWorkRow {
  window_id: bigint;
  contract: string;
  point_type: string;
  from_ms: bigint;
  to_ms: bigint;
  state: "building" | "ready" | "dropping";
  finalized_batches: bigint;
}

/** The FINALIZED batches of a window board's window (`w`: its window_boards row, `b`: its boards row), by batches_finalized. */
const WINDOW_FINALIZED_SQL = `batches f WHERE f.contract = b.contract AND f.point_type = b.point_type AND f.status = 'FINALIZED'
  AND f.finalized_at_ms >= w.from_ms AND f.finalized_at_ms < w.to_ms`;

/** Of those, the ones the window board does not hold. */
const WINDOW_MISSING_SQL = `${WINDOW_FINALIZED_SQL}
  AND NOT EXISTS (SELECT 1 FROM window_batches x WHERE x.window_id = w.window_id AND x.seq = f.seq)`;

/**
 * A window board to drop (first), or one that misses batches of its window: being built, or
 * ready and holding fewer than its window's FINALIZED batches; oldest first (one connection:
 * nothing else takes it meanwhile). First, ready ones whose board finalized batches since they
 * were seen but that miss none (one count each) are recorded as seen.
 */
function takeWindowWork(db: SqliteDb): WindowBoardWork | null {
  statement(
    db,
    `UPDATE window_boards AS w SET seen_finalized = b.finalized_batches FROM boards b
     WHERE b.board = w.board AND w.state = 'ready' AND w.seen_finalized <> b.finalized_batches
       AND w.batches = (SELECT count(*) FROM ${WINDOW_FINALIZED_SQL})`,
  ).run();
  const row = statement(
    db,
    `SELECT w.window_id, b.contract, b.point_type, w.from_ms, w.to_ms, w.state, b.finalized_batches
     FROM window_boards w JOIN boards b ON b.board = w.board
     WHERE w.state IN ('dropping', 'building') OR (w.state = 'ready' AND w.seen_finalized <> b.finalized_batches)
     ORDER BY w.state = 'dropping' DESC, w.window_id LIMIT 1`,
  ).get() as WindowWorkRow | undefined;
  if (row === undefined) return null;
  return {
    window: toNumber(row.window_id),
    contract: row.contract as AddressKey,
    pointType: row.point_type,
    fromMs: toNumber(row.from_ms),
    toMs: toNumber(row.to_ms),
    state: row.state,
    boardFinalized: toNumber(row.finalized_batches),
  };
}

/** The window's FINALIZED batches that its window board does not hold, in seq order. */
function windowBatches(db: SqliteDb, work: WindowBoardWork, limit: number): StoredBatch[] {
  const rows = statement(
    db,
    `SELECT f.* FROM window_boards w JOIN boards b ON b.board = w.board JOIN ${WINDOW_MISSING_SQL}
       AND w.window_id = @window
     ORDER BY f.seq LIMIT @limit`,
  ).all({ window: work.window, limit }) as BatchRow[];
  return rows.map((row) => toStoredBatch(row, fromPair(row.total_w, row.total_f)));
}

/** The batch's transfers on the window board, and the batch among those it holds (a batch added twice fails on the key). */
function addToWindow(db: SqliteDb, window: number, batch: StoredBatch): number {
  statement(db, "INSERT INTO window_batches (window_id, seq) VALUES (?, ?)").run(window, BigInt(batch.seq));
  return addTransfers(db, WINDOW_TABLES, window, batch.seq);
}

function advanceWindow(db: SqliteDb, work: WindowBoardWork, added: number, caughtUp: boolean): void {
  statement(
    db,
    `UPDATE window_boards SET batches = batches + @added,
       state = CASE WHEN @caughtUp THEN 'ready' ELSE state END,
       seen_finalized = CASE WHEN @caughtUp THEN @seen ELSE seen_finalized END
     WHERE window_id = @window`,
  ).run({ window: work.window, added, caughtUp: caughtUp ? 1 : 0, seen: work.boardFinalized });
}

/** Up to `limit` entries of a dropped window board; its batches, bands and row go with the last of them. */
function dropWindowEntries(db: SqliteDb, window: number, limit: number): number {
  const deleted = statement(
    db,
    `DELETE FROM window_entries WHERE window_id = @window
       AND address IN (SELECT address FROM window_entries WHERE window_id = @window LIMIT @limit)`,
  ).run({ window, limit }).changes;
  if (deleted < limit) {
    statement(db, "DELETE FROM window_batches WHERE window_id = ?").run(window);
    statement(db, "DELETE FROM window_bands WHERE window_id = ?").run(window);
    statement(db, "DELETE FROM window_boards WHERE window_id = ?").run(window);
  }
  return deleted;
}

/** The window boards for the window job's flow (src/ledger/history.ts buildWindowBoards), synchronously. */
export const windowBoards = {
  takeWindowWork,
  windowBatches,
  addToWindow,
  advanceWindow,
  dropWindowEntries,
} satisfies WindowBoardsPort<SqliteDb, "sync">;

// ---- Reads -------------------------------------------------------------------------------------

const ENTRY_ORDER = "points_q DESC, points_w DESC, points_f DESC, address";

function entryRows(rows: [string, bigint, bigint, bigint][]): BoardRow[] {
  return rows.map(([address, q, w, f]) => ({ address: address as AddressKey, units: fromTriple(q, w, f) }));
}

function participantsOf(db: SqliteDb, tables: BoardTables, key: bigint | number | null): number {
  if (key === null) return 0;
  return toNumber(statement(db, `SELECT coalesce(sum(entries), 0) FROM ${tables.bands} WHERE ${tables.key} = ?`).pluck().get(key));
}

/**
 * A board's page (all time, or a window board): the ranking index read from where the page
 * starts. Past a cursor, the rest of its amount's tie (address after it) then the amounts below:
 * two index ranges, never a sort.
 */
function readRankedRows(db: SqliteDb, tables: BoardTables, key: bigint | number | null, query: BoardQuery, limit: number): BoardRow[] {
  if (key === null) return [];
  const select = `SELECT ${ADDRESS_TEXT()}, points_q, points_w, points_f FROM ${tables.entries}`;
  if (query.after === null) {
    const rows = statement(db, `${select} WHERE ${tables.key} = @key ORDER BY ${ENTRY_ORDER} LIMIT @limit`)
      .raw(true)
      .all({ key, limit }) as [string, bigint, bigint, bigint][];
    return entryRows(rows);
  }
  const [q, w, f] = toTriple(query.after.units);
  const at = { key, limit, q, w, f, address: addressBytes(query.after.address) };
  const tie = statement(
    db,
    `${select} WHERE ${tables.key} = @key AND points_q = @q AND points_w = @w AND points_f = @f AND address > @address
     ORDER BY address LIMIT @limit`,
  )
    .raw(true)
    .all(at) as [string, bigint, bigint, bigint][];
  if (tie.length >= limit) return entryRows(tie);
  const below = statement(
    db,
    `${select} WHERE ${tables.key} = @key AND (points_q, points_w, points_f) < (@q, @w, @f) ORDER BY ${ENTRY_ORDER} LIMIT @limit`,
  )
    .raw(true)
    .all({ ...at, limit: limit - tie.length }) as [string, bigint, bigint, bigint][];
  return entryRows([...tie, ...below]);
}

/**
 * A window's board: its FINALIZED batches (batches_finalized) and their transfers, summed per
 * recipient. The sums are split (whole points in millions, the rest, units) so that no SUM can
 * overflow 64 bits before millions of transfers to one address, then carried into (hi, mid, f):
 * amount = (hi·10^6 + mid) points + f units, ordered as the triple.
 */
const WINDOW_BOARD_SQL = `
  window_batches AS (
    SELECT seq FROM batches WHERE contract = @contract AND point_type = @pointType AND status = 'FINALIZED'
      AND finalized_at_ms >= @fromMs AND finalized_at_ms < @toMs
  ),
  sums AS (
    SELECT t.to_address AS address, SUM(t.amount_w / 1000000) AS hi, SUM(t.amount_w % 1000000) AS mid, SUM(t.amount_f) AS f
    FROM window_batches b JOIN transfers t ON t.seq = b.seq
    GROUP BY t.to_address HAVING max(t.amount_w) > 0 OR max(t.amount_f) > 0
  ),
  board AS MATERIALIZED (
    SELECT address, hi + (mid + f / 1000000000000) / 1000000 AS hi, (mid + f / 1000000000000) % 1000000 AS mid,
      f % 1000000000000 AS f
    FROM sums
  )`;

const MIDS_PER_POINT_HI = 1_000_000n;

function windowBounds(window: DayWindow): { fromMs: number; toMs: number } {
  return { fromMs: window.fromMs ?? Number.MIN_SAFE_INTEGER, toMs: window.toMs ?? Number.MAX_SAFE_INTEGER };
}

function windowSplit(units: bigint): { hi: bigint; mid: bigint; f: bigint } {
  const whole = units / UNITS_PER_POINT;
  return { hi: whole / MIDS_PER_POINT_HI, mid: whole % MIDS_PER_POINT_HI, f: units % UNITS_PER_POINT };
}

function windowUnits(hi: bigint, mid: bigint, f: bigint): bigint {
  return (BigInt(hi) * MIDS_PER_POINT_HI + BigInt(mid)) * UNITS_PER_POINT + BigInt(f);
}

function readWindowBoard(db: SqliteDb, query: BoardQuery, limit: number): { participants: number; rows: BoardRow[] } {
  const after = query.after ?? null;
  const at = after === null ? { hi: -1n, mid: 0n, f: 0n } : windowSplit(after.units);
  const rows = statement(
    db,
    `WITH ${WINDOW_BOARD_SQL}
     SELECT address, hi, mid, f, (SELECT count(*) FROM board) FROM board
     WHERE @first OR (hi, mid, f) < (@hi, @mid, @f) OR ((hi, mid, f) = (@hi, @mid, @f) AND address > @address)
     ORDER BY hi DESC, mid DESC, f DESC, address LIMIT @limit`,
  )
    .raw(true)
    .all({
      contract: query.contract,
      pointType: query.pointType,
      ...windowBounds(query.window),
      first: after === null ? 1 : 0,
      ...at,
      address: after?.address ?? "",
      limit,
    }) as [string, bigint, bigint, bigint, bigint][];
  const participants = rows.length > 0 ? toNumber(rows[0]![4]) : windowParticipants(db, query.contract, query.pointType, query.window);
  return { participants, rows: rows.map(([address, hi, mid, f]) => ({ address: address as AddressKey, units: windowUnits(hi, mid, f) })) };
}

function windowParticipants(db: SqliteDb, contract: AddressKey, pointType: PointType, window: DayWindow): number {
  return toNumber(
    statement(db, `WITH ${WINDOW_BOARD_SQL} SELECT count(*) FROM board`)
      .pluck()
      .get({ contract, pointType, ...windowBounds(window) }),
  );
}

/** Where a window is read from: its window board, or its batches (and then, maybe, a window board to ask the window job for). */
type WindowSource = { kind: "board"; window: number } | { kind: "batches"; request: WindowRequest | null };

/** A window board to list for the window job. */
interface WindowRequest {
  board: bigint;
  fromMs: number;
  toMs: number;
  nowMs: number;
}

/**
 * A window is read from its window board when that is ready and misses no FINALIZED batch of
 * the window, or only batches finalized less than WINDOW_BOARD_LAG_MS before the reader's now
 * (../ports/leaderboards.ts); otherwise from its batches, and a window board is asked for when
 * none is kept. Readers that give no time, and boards not created yet, read the batches.
 */
function windowSource(
  db: SqliteDb,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  nowMs: number | undefined,
): WindowSource {
  if (nowMs === undefined) return { kind: "batches", request: null };
  const board = boardId(db, contract, pointType, false);
  if (board === null) return { kind: "batches", request: null };
  const { fromMs, toMs } = windowBounds(window);
  const kept = statement(
    db,
    `SELECT w.window_id, w.state,
       CASE WHEN w.seen_finalized = b.finalized_batches THEN 1 ELSE w.batches = (SELECT count(*) FROM ${WINDOW_FINALIZED_SQL}) END AS complete
     FROM window_boards w JOIN boards b ON b.board = w.board
     WHERE w.board = ? AND w.from_ms = ? AND w.to_ms = ? AND w.state <> 'dropping'`,
  ).get(board, fromMs, toMs) as { window_id: bigint; state: string; complete: bigint } | undefined;
  if (kept === undefined) return { kind: "batches", request: { board, fromMs, toMs, nowMs } };
  if (kept.state !== "ready") return { kind: "batches", request: null };
  const source = { kind: "board", window: toNumber(kept.window_id) } as const;
  if (BigInt(kept.complete) === 1n) return source;
  const oldestMissing = statement(
    db,
    `SELECT min(f.finalized_at_ms) FROM window_boards w JOIN boards b ON b.board = w.board JOIN ${WINDOW_MISSING_SQL}
       AND w.window_id = ?`,
  )
    .pluck()
    .get(kept.window_id) as bigint | null;
  return oldestMissing === null || toNumber(oldestMissing) > nowMs - WINDOW_BOARD_LAG_MS ? source : { kind: "batches", request: null };
}

/** Lists a window board for the window job (unless one is kept already), and drops the board's oldest past WINDOW_BOARDS_PER_BOARD. */
function requestWindowBoard(db: SqliteDb, request: WindowRequest): void {
  db.transaction(() => {
    statement(
      db,
      `INSERT OR IGNORE INTO window_boards (board, from_ms, to_ms, state, created_at_ms) VALUES (@board, @fromMs, @toMs, 'building', @nowMs)`,
    ).run({ board: request.board, fromMs: request.fromMs, toMs: request.toMs, nowMs: request.nowMs });
    statement(
      db,
      `UPDATE window_boards SET state = 'dropping' WHERE window_id IN (
         SELECT window_id FROM window_boards WHERE board = ? AND state <> 'dropping' ORDER BY window_id DESC LIMIT -1 OFFSET ?)`,
    ).run(request.board, WINDOW_BOARDS_PER_BOARD);
  }).immediate();
}

/**
 * requestWindowBoard after a read, unless the database cannot take the write now (full,
 * read-only, another process's lock past the busy timeout): the read has its answer, and the
 * next read of the window asks again.
 */
function askForWindowBoard(db: SqliteDb, request: WindowRequest | null): void {
  if (request === null) return;
  try {
    requestWindowBoard(db, request);
  } catch (error) {
    if (!isUnavailableCondition(error)) throw error;
  }
}

/** A page of a board (all time or a window), read in one transaction: its rows and participants agree. */
function readBoard(db: SqliteDb, query: BoardQuery): BoardPage {
  const { page, request } = db.transaction((): { page: BoardPage; request: WindowRequest | null } => {
    if (isAllTime(query.window)) {
      const board = boardId(db, query.contract, query.pointType, false);
      const rows = readRankedRows(db, BOARD_TABLES, board, query, query.limit + 1);
      return { page: { participants: participantsOf(db, BOARD_TABLES, board), ...pageOf(rows, query.limit) }, request: null };
    }
    const source = windowSource(db, query.contract, query.pointType, query.window, query.nowMs);
    if (source.kind === "board") {
      const rows = readRankedRows(db, WINDOW_TABLES, source.window, query, query.limit + 1);
      return { page: { participants: participantsOf(db, WINDOW_TABLES, source.window), ...pageOf(rows, query.limit) }, request: null };
    }
    const { participants, rows } = readWindowBoard(db, query, query.limit + 1);
    return { page: { participants, ...pageOf(rows, query.limit) }, request: source.request };
  })();
  askForWindowBoard(db, request);
  return page;
}

function pageOf(rows: BoardRow[], limit: number): { rows: BoardRow[]; more: boolean } {
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/**
 * An address's place on a board (all time, or a window board): the entries of the bands above its
 * amount's, plus the entries inside its band with more (one range of the ranking index, bounded by
 * bandUpperUnits).
 */
function readRankedStanding(db: SqliteDb, tables: BoardTables, key: bigint | number | null, address: AddressKey): BoardStanding {
  const participants = participantsOf(db, tables, key);
  const entry =
    key === null
      ? undefined
      : (statement(db, `SELECT points_q, points_w, points_f FROM ${tables.entries} WHERE ${tables.key} = ? AND address = ?`)
          .raw(true)
          .get(key, addressBytes(address)) as [bigint, bigint, bigint] | undefined);
  const units = entry ? fromTriple(...entry) : 0n;
  if (units === 0n) return { units, ahead: participants, participants };
  const band = rankBandOf(units);
  const aboveBands = toNumber(
    statement(db, `SELECT coalesce(sum(entries), 0) FROM ${tables.bands} WHERE ${tables.key} = ? AND band > ?`).pluck().get(key, band),
  );
  const [q, w, f] = toTriple(units);
  const [uq, uw, uf] = toTriple(bandUpperUnits(band));
  const insideBand = toNumber(
    statement(
      db,
      `SELECT count(*) FROM ${tables.entries} WHERE ${tables.key} = @key
         AND (points_q, points_w, points_f) > (@q, @w, @f) AND (points_q, points_w, points_f) < (@uq, @uw, @uf)`,
    )
      .pluck()
      .get({ key, q, w, f, uq, uw, uf }),
  );
  return { units, ahead: aboveBands + insideBand, participants };
}

function readWindowStanding(
  db: SqliteDb,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
): BoardStanding {
  const [participants, hi, mid, f, ahead] = statement(
    db,
    `WITH ${WINDOW_BOARD_SQL}
     SELECT (SELECT count(*) FROM board), me.hi, me.mid, me.f,
       (SELECT count(*) FROM board o WHERE (o.hi, o.mid, o.f) > (me.hi, me.mid, me.f))
     FROM (SELECT 1) LEFT JOIN board me ON me.address = @address`,
  )
    .raw(true)
    .get({ contract, pointType, ...windowBounds(window), address }) as [bigint, bigint | null, bigint | null, bigint | null, bigint | null];
  if (hi === null) return { units: 0n, ahead: toNumber(participants), participants: toNumber(participants) };
  return { units: windowUnits(hi, mid!, f!), ahead: toNumber(ahead), participants: toNumber(participants) };
}

function readStanding(
  db: SqliteDb,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
  nowMs?: number,
): BoardStanding {
  const { standing, request } = db.transaction((): { standing: BoardStanding; request: WindowRequest | null } => {
    if (isAllTime(window)) {
      return { standing: readRankedStanding(db, BOARD_TABLES, boardId(db, contract, pointType, false), address), request: null };
    }
    const source = windowSource(db, contract, pointType, window, nowMs);
    if (source.kind === "board") return { standing: readRankedStanding(db, WINDOW_TABLES, source.window, address), request: null };
    return { standing: readWindowStanding(db, contract, pointType, window, address), request: source.request };
  })();
  askForWindowBoard(db, request);
  return standing;
}

function historyBackfillRemaining(db: SqliteDb): number {
  return toNumber(statement(db, "SELECT count(*) FROM history_backfill").pluck().get());
}

/** The LeaderboardsStore reads, over the open connection (index.ts composes them; backfillHistory is a flow). */
export const leaderboardReads = { readBoard, readStanding, historyBackfillRemaining };
