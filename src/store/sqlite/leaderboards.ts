import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { BoardRow, WindowBounds } from "../../domain/leaderboard.js";
import { UNITS_PER_POINT } from "../../domain/points.js";
import type { StoredBatch } from "../ports/batches.js";
import { StoreUnavailableError } from "../errors.js";
import type {
  BoardAfter,
  BoardStanding,
  EntriesAhead,
  FoundWindowBoard,
  LeaderboardReadPort,
  LeaderboardReadsOf,
  ProjectionPort,
  ProjectionState,
  QueuedBatch,
  RankedBoard,
  WindowBoardRequest,
  WindowBoardsPort,
  WindowBoardWork,
  WindowOfBatches,
} from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import type { BatchRow } from "./batches.js";
import { fromPair, fromTriple, statement, toNumber, toStoreError, toTriple, type SqliteDb } from "./db.js";

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
 * The batch's transfers on a window board, in one upsert (the window job's build); the bands
 * follow through the schema's triggers on the entries (migrations/index.ts, versions 15 and 16),
 * which move an entry from its old band to its new one only when the band changes: per row inside
 * the statement (measured: 2 µs a transfer for the triggers, 4 µs for two more statements).
 * Returns the rows ranked (an address named twice counts twice).
 */
function addTransfers(db: SqliteDb, tables: BoardTables, key: bigint | number, seq: string): number {
  return statement(
    db,
    `INSERT INTO ${tables.entries} (${tables.key}, address, points_w, points_f)
     SELECT @key, unhex(substr(address, 3)), w, f FROM (${TRANSFERS_SQL}) WHERE true
     ON CONFLICT (${tables.key}, address) DO UPDATE SET ${carriedSet("points")}`,
  ).run({ seq: BigInt(seq), key }).changes;
}

// ---- The projection ----------------------------------------------------------------------------

/** A (q, w, f) triple's sum with a triple's old value, carried (pass_sums rows carry whole q limbs). */
function carriedTripleSet(prefix: string): string {
  return `${prefix}_q = ${prefix}_q + excluded.${prefix}_q
         + (${prefix}_w + excluded.${prefix}_w + (${prefix}_f + excluded.${prefix}_f) / 1000000000000) / 1000000000000000000,
       ${prefix}_w = (${prefix}_w + excluded.${prefix}_w + (${prefix}_f + excluded.${prefix}_f) / 1000000000000) % 1000000000000000000,
       ${prefix}_f = (${prefix}_f + excluded.${prefix}_f) % 1000000000000`;
}

/**
 * A pass's sums per (board, address), in a temporary table of this connection (memory, emptied
 * after each pass): every transfer of the pass is one upsert here, and each distinct recipient
 * one upsert of each read model. The bench's 32,000 recipients paid again every few batches make
 * a pass of 64 batches write a fifth of the rows a batch-by-batch apply wrote.
 */
const PASS_SUMS_DDL = `CREATE TEMP TABLE IF NOT EXISTS pass_sums (
  board INTEGER NOT NULL,
  address TEXT NOT NULL,
  points_q INTEGER NOT NULL,
  points_w INTEGER NOT NULL,
  points_f INTEGER NOT NULL,
  first_at_ms INTEGER NOT NULL,
  last_at_ms INTEGER NOT NULL,
  PRIMARY KEY (board, address)
) WITHOUT ROWID`;

const passTables = new WeakSet<SqliteDb>();

/**
 * pass_sums in memory (temp_store, set before the connection's first temporary table): the
 * default keeps temporary tables in a file, which doubled the upsert's cost; keyed by the
 * address's text as stored in transfers, converted to its 20 bytes once per recipient (measured,
 * 96,000 transfers onto 32,000 recipients: 3.4 µs a transfer on file with bytes, 1.7 in memory
 * with text).
 */
function ensurePassSums(db: SqliteDb): void {
  if (passTables.has(db)) return;
  db.pragma("temp_store = MEMORY");
  db.exec(PASS_SUMS_DDL);
  passTables.add(db);
}

function readFence(db: SqliteDb): number {
  return toNumber(statement(db, "SELECT fence_ms FROM projection_state WHERE id = 1").pluck().get());
}

function enqueue(db: SqliteDb, seq: string, finalizedAtMs: number): void {
  statement(db, "INSERT INTO projection_queue (finalized_at_ms, seq) VALUES (?, ?)").run(finalizedAtMs, BigInt(seq));
}

/**
 * The ledger's writer, one transaction: the queue's batches past the ledger's view of through
 * (projection_state.through_ms, ../projection-file.ts: it may lag the projection file's, never lead it).
 */
function queueHead(db: SqliteDb, limit: number): { throughMs: number; head: number[] } {
  const throughMs = toNumber(statement(db, "SELECT through_ms FROM main.projection_state WHERE id = 1").pluck().get());
  const head = (
    statement(db, "SELECT finalized_at_ms FROM projection_queue WHERE finalized_at_ms > ? ORDER BY finalized_at_ms, seq LIMIT ?")
      .pluck()
      .all(throughMs, limit) as bigint[]
  ).map(toNumber);
  return { throughMs, head };
}

function raiseFence(db: SqliteDb, fenceMs: number): void {
  statement(db, "UPDATE projection_state SET fence_ms = max(fence_ms, ?) WHERE id = 1").run(fenceMs);
}

/**
 * The pass's first statement, a write of the projection file: its write lock taken before the pass
 * reads anything (a DEFERRED transaction that read first could find another connection's pass
 * committed meanwhile and fail to write), so passes of two connections apply one after the other.
 */
function claimApplier(db: SqliteDb): boolean {
  statement(db, "UPDATE projection_through SET through_ms = through_ms WHERE id = 1").run();
  return true;
}

/**
 * The projection's connection: the queued batches past the file's through up to `throughMs`. The
 * queue keeps them (it lists every FINALIZED batch, for a rebuild): the file's through, moved in
 * the same transaction, is what says they are applied.
 */
function takeQueued(db: SqliteDb, throughMs: number): QueuedBatch[] {
  const rows = statement(
    db,
    `SELECT b.* FROM projection_queue q JOIN batches b ON b.seq = q.seq
     WHERE q.finalized_at_ms > (SELECT through_ms FROM projection_through WHERE id = 1) AND q.finalized_at_ms <= ?
     ORDER BY q.finalized_at_ms, q.seq`,
  ).all(throughMs) as BatchRow[];
  return rows.map((row) => ({
    batch: toStoredBatch(row, fromPair(row.total_w, row.total_f)),
    finalizedAtMs: toNumber(row.finalized_at_ms),
  }));
}

/**
 * A pass's batches of one UTC day: summed per (board, recipient) into pass_sums, then each sum
 * added to board_entries (bands by trigger), to received_daily (the day's row, its first and last
 * times widened) and to each kept window board of its board whose window holds the day and that
 * was asked for before these batches finalized (built_through_ms: the window job adds the older).
 */
function applyBatches(db: SqliteDb, queued: readonly QueuedBatch[], dayMs: number): number {
  ensurePassSums(db);
  const boards = new Map<bigint, QueuedBatch[]>();
  for (const item of queued) {
    const board = boardId(db, item.batch.contract, item.batch.pointType, true)!;
    boards.set(board, [...(boards.get(board) ?? []), item]);
    statement(
      db,
      `INSERT INTO pass_sums (board, address, points_q, points_w, points_f, first_at_ms, last_at_ms)
       SELECT @board, address, 0, w, f, @at, @at FROM (${TRANSFERS_SQL}) WHERE true
       ON CONFLICT (board, address) DO UPDATE SET ${carriedSet("points")}, last_at_ms = excluded.last_at_ms`,
    ).run({ board, seq: BigInt(item.batch.seq), at: item.finalizedAtMs });
  }
  statement(
    db,
    `INSERT INTO board_entries (board, address, points_q, points_w, points_f)
     SELECT board, unhex(substr(address, 3)), points_q, points_w, points_f FROM pass_sums WHERE true
     ON CONFLICT (board, address) DO UPDATE SET ${carriedTripleSet("points")}`,
  ).run();
  statement(
    db,
    `INSERT INTO received_daily (address, board, day_ms, first_at_ms, last_at_ms, amount_q, amount_w, amount_f)
     SELECT unhex(substr(address, 3)), board, @dayMs, first_at_ms, last_at_ms, points_q, points_w, points_f FROM pass_sums WHERE true
     ON CONFLICT (address, board, day_ms) DO UPDATE SET ${carriedTripleSet("amount")},
       first_at_ms = min(first_at_ms, excluded.first_at_ms), last_at_ms = max(last_at_ms, excluded.last_at_ms)`,
  ).run({ dayMs });
  for (const [board, items] of boards) {
    statement(db, "UPDATE boards SET finalized_batches = finalized_batches + ? WHERE board = ?").run(items.length, board);
    applyToWindows(db, board, items, dayMs);
  }
  const entries = toNumber(statement(db, "SELECT count(*) FROM pass_sums").pluck().get());
  statement(db, "DELETE FROM pass_sums").run();
  return entries;
}

/** The pass's sums of one board onto its kept window boards that hold the day and were asked for before the pass's batches. */
function applyToWindows(db: SqliteDb, board: bigint, items: readonly QueuedBatch[], dayMs: number): void {
  const firstMs = Math.min(...items.map(({ finalizedAtMs }) => finalizedAtMs));
  const windows = statement(
    db,
    `SELECT window_id FROM window_boards WHERE board = ? AND state <> 'dropping' AND from_ms <= ? AND to_ms > ? AND built_through_ms < ?`,
  )
    .pluck()
    .all(board, dayMs, dayMs, firstMs) as bigint[];
  for (const window of windows) {
    statement(
      db,
      `INSERT INTO window_entries (window_id, address, points_q, points_w, points_f)
       SELECT @window, unhex(substr(address, 3)), points_q, points_w, points_f FROM pass_sums WHERE board = @board
       ON CONFLICT (window_id, address) DO UPDATE SET ${carriedTripleSet("points")}`,
    ).run({ window, board });
    for (const { batch } of items)
      statement(db, "INSERT INTO window_batches (window_id, seq) VALUES (?, ?)").run(window, BigInt(batch.seq));
    statement(db, "UPDATE window_boards SET batches = batches + ? WHERE window_id = ?").run(items.length, window);
  }
}

/** The projection file's through (the cut raised the ledger's fence to it before the pass). */
function advanceThrough(db: SqliteDb, throughMs: number): void {
  statement(db, "UPDATE projection_through SET through_ms = max(through_ms, ?) WHERE id = 1").run(throughMs);
}

/** The ledger's writer, after a pass: its view of through (queueHead) catches up with the file's. */
export function noteThrough(db: SqliteDb, throughMs: number): void {
  statement(db, "UPDATE main.projection_state SET through_ms = max(through_ms, ?) WHERE id = 1").run(throughMs);
}

/** The projection's tables for the flows (src/ledger/projection.ts, finalize.ts), synchronously. */
export const projection = {
  readFence,
  enqueue,
  queueHead,
  raiseFence,
  applierFree: () => true,
  claimApplier,
  takeQueued,
  applyBatches,
  advanceThrough,
} satisfies ProjectionPort<SqliteDb, "sync">;

/** The projection's through and the queued batches past it, read in one snapshot of the projection's connection. */
export function projectionState(db: SqliteDb): ProjectionState {
  const [throughMs, queued, oldest] = statement(
    db,
    `SELECT through_ms, (SELECT count(*) FROM projection_queue WHERE finalized_at_ms > through_ms),
       (SELECT min(finalized_at_ms) FROM projection_queue WHERE finalized_at_ms > through_ms)
     FROM projection_through WHERE id = 1`,
  )
    .raw(true)
    .get() as [bigint, bigint, bigint | null];
  return { throughMs: toNumber(throughMs), queued: toNumber(queued), oldestQueuedMs: oldest === null ? null : toNumber(oldest) };
}

// ---- Window boards -----------------------------------------------------------------------------

interface WindowWorkRow {
  window_id: bigint;
  contract: string;
  point_type: string;
  from_ms: bigint;
  to_ms: bigint;
  state: "building" | "dropping";
  built_through_ms: bigint;
}

/** A window board to drop (first), or one being built; oldest first (one connection: nothing else takes it meanwhile). */
function takeWindowWork(db: SqliteDb): WindowBoardWork | null {
  const row = statement(
    db,
    `SELECT w.window_id, b.contract, b.point_type, w.from_ms, w.to_ms, w.state, w.built_through_ms
     FROM window_boards w JOIN boards b ON b.board = w.board
     WHERE w.state IN ('dropping', 'building')
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
    builtThroughMs: toNumber(row.built_through_ms),
  };
}

/** The window's FINALIZED batches by the time it was asked for that its window board does not hold, in seq order. */
function windowBatches(db: SqliteDb, work: WindowBoardWork, limit: number): StoredBatch[] {
  const rows = statement(
    db,
    `SELECT f.* FROM batches f INDEXED BY batches_finalized
     WHERE f.contract = @contract AND f.point_type = @pointType AND f.status = 'FINALIZED'
       AND f.finalized_at_ms >= @fromMs AND f.finalized_at_ms < @toMs AND f.finalized_at_ms <= @builtThroughMs
       AND NOT EXISTS (SELECT 1 FROM window_batches x WHERE x.window_id = @window AND x.seq = f.seq)
     ORDER BY f.seq LIMIT @limit`,
  ).all({ ...work, limit }) as BatchRow[];
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
    `UPDATE window_boards SET batches = batches + @added, state = CASE WHEN @caughtUp THEN 'ready' ELSE state END WHERE window_id = @window`,
  ).run({ window: work.window, added, caughtUp: caughtUp ? 1 : 0 });
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

/** The window boards for the window job's flow (src/ledger/projection.ts buildWindowBoards), synchronously. */
export const windowBoards = {
  takeWindowWork,
  windowBatches,
  addToWindow,
  advanceWindow,
  dropWindowEntries,
} satisfies WindowBoardsPort<SqliteDb, "sync">;

// ---- Reads (the primitives of src/ledger/leaderboards.ts) ------------------------------------

/** The projection's through inside a read: what every answer of that read counts. */
function readThrough(db: SqliteDb): number {
  return toNumber(statement(db, "SELECT through_ms FROM projection_through WHERE id = 1").pluck().get());
}

/** A window's board and its kept window board (window_boards_kept: at most one not dropping). */
function findWindowBoard(db: SqliteDb, contract: AddressKey, pointType: PointType, bounds: WindowBounds): FoundWindowBoard | null {
  const board = boardId(db, contract, pointType, false);
  if (board === null) return null;
  const kept = statement(
    db,
    `SELECT window_id, state FROM window_boards WHERE board = ? AND from_ms = ? AND to_ms = ? AND state <> 'dropping'`,
  ).get(board, bounds.fromMs, bounds.toMs) as { window_id: bigint; state: "building" | "ready" } | undefined;
  return { board: toNumber(board), kept: kept === undefined ? null : { window: toNumber(kept.window_id), state: kept.state } };
}

/** A ranked board's tables and key; an all-time board not created yet has none (it reads as empty). */
function keptBoard(db: SqliteDb, board: RankedBoard): { tables: BoardTables; key: bigint | number | null } {
  if (board.kind === "window") return { tables: WINDOW_TABLES, key: board.window };
  return { tables: BOARD_TABLES, key: boardId(db, board.contract, board.pointType, false) };
}

const ENTRY_ORDER = "points_q DESC, points_w DESC, points_f DESC, address";

function entryRows(rows: [string, bigint, bigint, bigint][]): BoardRow[] {
  return rows.map(([address, q, w, f]) => ({ address: address as AddressKey, units: fromTriple(q, w, f) }));
}

function participants(db: SqliteDb, board: RankedBoard): number {
  const { tables, key } = keptBoard(db, board);
  if (key === null) return 0;
  return toNumber(statement(db, `SELECT coalesce(sum(entries), 0) FROM ${tables.bands} WHERE ${tables.key} = ?`).pluck().get(key));
}

/**
 * A ranked board's page: the ranking index read from where the page starts. Past a cursor, the
 * rest of its amount's tie (address after it) then the amounts below: two index ranges, never a sort.
 */
function rankedRows(db: SqliteDb, board: RankedBoard, after: BoardAfter | null, limit: number): BoardRow[] {
  const { tables, key } = keptBoard(db, board);
  if (key === null) return [];
  const select = `SELECT ${ADDRESS_TEXT()}, points_q, points_w, points_f FROM ${tables.entries}`;
  if (after === null) {
    const rows = statement(db, `${select} WHERE ${tables.key} = @key ORDER BY ${ENTRY_ORDER} LIMIT @limit`)
      .raw(true)
      .all({ key, limit }) as [string, bigint, bigint, bigint][];
    return entryRows(rows);
  }
  const [q, w, f] = toTriple(after.units);
  const at = { key, limit, q, w, f, address: addressBytes(after.address) };
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

function entryUnits(db: SqliteDb, board: RankedBoard, address: AddressKey): bigint {
  const { tables, key } = keptBoard(db, board);
  if (key === null) return 0n;
  const entry = statement(db, `SELECT points_q, points_w, points_f FROM ${tables.entries} WHERE ${tables.key} = ? AND address = ?`)
    .raw(true)
    .get(key, addressBytes(address)) as [bigint, bigint, bigint] | undefined;
  return entry ? fromTriple(...entry) : 0n;
}

/** The bands above `band` (their sums), and one range of the ranking index inside it: (units, upperUnits). */
function entriesAhead(db: SqliteDb, board: RankedBoard, band: number, units: bigint, upperUnits: bigint): EntriesAhead {
  const { tables, key } = keptBoard(db, board);
  if (key === null) return { inBandsAbove: 0, insideBand: 0 };
  const inBandsAbove = toNumber(
    statement(db, `SELECT coalesce(sum(entries), 0) FROM ${tables.bands} WHERE ${tables.key} = ? AND band > ?`).pluck().get(key, band),
  );
  const [q, w, f] = toTriple(units);
  const [uq, uw, uf] = toTriple(upperUnits);
  const insideBand = toNumber(
    statement(
      db,
      `SELECT count(*) FROM ${tables.entries} WHERE ${tables.key} = @key
         AND (points_q, points_w, points_f) > (@q, @w, @f) AND (points_q, points_w, points_f) < (@uq, @uw, @uf)`,
    )
      .pluck()
      .get({ key, q, w, f, uq, uw, uf }),
  );
  return { inBandsAbove, insideBand };
}

/**
 * A window's board from its batches: its FINALIZED batches by the projection's through (batches_finalized) and their transfers, summed per
 * recipient. The sums are split (whole points in millions, the rest, units) so that no SUM can
 * overflow 64 bits before millions of transfers to one address, then carried into (hi, mid, f):
 * amount = (hi·10^6 + mid) points + f units, ordered as the triple.
 */
const WINDOW_BOARD_SQL = `
  window_batches AS (
    SELECT seq FROM batches WHERE contract = @contract AND point_type = @pointType AND status = 'FINALIZED'
      AND finalized_at_ms >= @fromMs AND finalized_at_ms < @toMs AND finalized_at_ms <= @throughMs
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

function windowSplit(units: bigint): { hi: bigint; mid: bigint; f: bigint } {
  const whole = units / UNITS_PER_POINT;
  return { hi: whole / MIDS_PER_POINT_HI, mid: whole % MIDS_PER_POINT_HI, f: units % UNITS_PER_POINT };
}

function windowUnits(hi: bigint, mid: bigint, f: bigint): bigint {
  return (BigInt(hi) * MIDS_PER_POINT_HI + BigInt(mid)) * UNITS_PER_POINT + BigInt(f);
}

/** A window's WINDOW_BOARD_SQL parameters. */
function windowParams({ contract, pointType, fromMs, toMs, throughMs }: WindowOfBatches) {
  return { contract, pointType, fromMs, toMs, throughMs };
}

/** A page of a window's board from its batches, with its participants (a second statement only when the page is empty). */
function windowPage(
  db: SqliteDb,
  window: WindowOfBatches,
  after: BoardAfter | null,
  limit: number,
): { participants: number; rows: BoardRow[] } {
  const at = after === null ? { hi: -1n, mid: 0n, f: 0n } : windowSplit(after.units);
  const rows = statement(
    db,
    `WITH ${WINDOW_BOARD_SQL}
     SELECT address, hi, mid, f, (SELECT count(*) FROM board) FROM board
     WHERE @first OR (hi, mid, f) < (@hi, @mid, @f) OR ((hi, mid, f) = (@hi, @mid, @f) AND address > @address)
     ORDER BY hi DESC, mid DESC, f DESC, address LIMIT @limit`,
  )
    .raw(true)
    .all({ ...windowParams(window), first: after === null ? 1 : 0, ...at, address: after?.address ?? "", limit }) as [
    string,
    bigint,
    bigint,
    bigint,
    bigint,
  ][];
  const participants =
    rows.length > 0
      ? toNumber(rows[0]![4])
      : toNumber(statement(db, `WITH ${WINDOW_BOARD_SQL} SELECT count(*) FROM board`).pluck().get(windowParams(window)));
  return { participants, rows: rows.map(([address, hi, mid, f]) => ({ address: address as AddressKey, units: windowUnits(hi, mid, f) })) };
}

/** An address's place on a window's board from its batches, one statement. */
function windowStanding(db: SqliteDb, window: WindowOfBatches, address: AddressKey): Omit<BoardStanding, "throughMs"> {
  const [participants, hi, mid, f, ahead] = statement(
    db,
    `WITH ${WINDOW_BOARD_SQL}
     SELECT (SELECT count(*) FROM board), me.hi, me.mid, me.f,
       (SELECT count(*) FROM board o WHERE (o.hi, o.mid, o.f) > (me.hi, me.mid, me.f))
     FROM (SELECT 1) LEFT JOIN board me ON me.address = @address`,
  )
    .raw(true)
    .get({ ...windowParams(window), address }) as [bigint, bigint | null, bigint | null, bigint | null, bigint | null];
  if (hi === null) return { units: 0n, ahead: toNumber(participants), participants: toNumber(participants) };
  return { units: windowUnits(hi, mid!, f!), ahead: toNumber(ahead), participants: toNumber(participants) };
}

/** Lists a window board for the window job unless one is kept (one writer: the IMMEDIATE transaction excludes the passes). */
function requestWindowBoard(db: SqliteDb, request: WindowBoardRequest): void {
  statement(
    db,
    `INSERT OR IGNORE INTO window_boards (board, from_ms, to_ms, state, created_at_ms, built_through_ms)
     SELECT @board, @fromMs, @toMs, 'building', @nowMs, through_ms FROM projection_through WHERE id = 1`,
  ).run({ board: request.board, fromMs: request.fromMs, toMs: request.toMs, nowMs: request.nowMs });
}

function capWindowBoards(db: SqliteDb, board: number, keep: number): void {
  statement(
    db,
    `UPDATE window_boards SET state = 'dropping' WHERE window_id IN (
       SELECT window_id FROM window_boards WHERE board = ? AND state <> 'dropping' ORDER BY window_id DESC LIMIT -1 OFFSET ?)`,
  ).run(board, keep);
}

/** The leaderboard reads' primitives, synchronously. */
export const leaderboardReads = {
  readThrough,
  findWindowBoard,
  rankedRows,
  participants,
  entryUnits,
  entriesAhead,
  windowPage,
  windowStanding,
  requestWindowBoard,
  capWindowBoards,
} satisfies LeaderboardReadPort<SqliteDb, "sync">;

/**
 * The leaderboard reads over the projection's connection `current()` returns (the ledger with the
 * projection file attached, projection-file.ts): a snapshot is one deferred read transaction (WAL:
 * it sees one commit of each file and blocks no writer; its first read is the projection file's
 * through, so the ledger's rows it reads after are at least as new); a window board's request one
 * DEFERRED transaction, which writes the projection file alone. `requests` replaces the request's
 * primitives where another thread writes the projection file (src/ledger/sqlite-projection.ts):
 * then nothing here writes.
 */
export function sqliteLeaderboardReads(
  current: () => SqliteDb,
  requests?: Pick<LeaderboardReadPort<SqliteDb, "sync">, "requestWindowBoard" | "capWindowBoards">,
): LeaderboardReadsOf<SqliteDb, "sync"> {
  return {
    mode: "sync",
    port: requests ? { ...leaderboardReads, ...requests } : leaderboardReads,
    snapshot: (work) => {
      const db = current();
      return db.transaction(() => work(db))();
    },
    transact: (work) => {
      const db = current();
      return requests ? work(db) : db.transaction(() => work(db)).deferred();
    },
    isUnavailable: (error) => toStoreError(error) instanceof StoreUnavailableError,
  };
}
