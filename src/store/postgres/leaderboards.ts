import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { bandUpperUnits, isAllTime, rankBandOf, utcDayOf, type BoardRow, type DayWindow } from "../../domain/leaderboard.js";
import { WINDOW_BOARD_LAG_MS, WINDOW_BOARDS_PER_BOARD } from "../../domain/limits.js";
import type { StoredBatch } from "../ports/batches.js";
import type {
  BoardAfter,
  BoardPage,
  BoardQuery,
  BoardStanding,
  LeaderboardsPort,
  WindowBoardWork,
  WindowBoardsPort,
} from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import { BATCH_COLUMNS, type BatchRow } from "./batches.js";
import { toNumber, toUnits, transaction, type PgPool, type Queryable } from "./db.js";

/**
 * The leaderboards and received_daily (../ports/leaderboards.ts) over PostgreSQL. Every write
 * is one set-based statement over the batch's transfers (`transfers WHERE seq = $1`), its
 * recipients summed per address first: a batch stored without the HTTP layer's check may name an
 * address twice, and a board holds one entry per address.
 *
 * Concurrency: a board's rows (boards, board_entries, board_bands) and received_daily's rows are
 * keyed by its contract, and every write to them runs after the writer locked the contract's
 * account of that point type (finalize: settleBatch locks the sender; the history job:
 * lockBalance), so two writers of one board queue there and each statement here sees the other's
 * commit. Rows are still touched in address (entries, receipts) and band order, as settleBatch does.
 * A window board's batches, entries and bands are written only by the window job's step that
 * holds its window_boards row (takeWindowWork, FOR UPDATE SKIP LOCKED), in the transaction that
 * updates its count, so a read's snapshot sees them agree; a read's request for one
 * (requestWindowBoard) locks the board's boards row first, so requests of one board queue.
 */

/** A recipient's sum in one batch (only those sent anything are ranked). */
const RECIPIENTS_SQL = `SELECT to_address AS address, sum(amount_units) AS units
   FROM transfers WHERE seq = $1 GROUP BY to_address HAVING sum(amount_units) > 0`;

/** domain/leaderboard.ts rankBandOf of a NUMERIC(40,0) amount: its digits × 100 plus its first two digits. */
function bandSql(units: string): string {
  return `(length(${units}::text) * 100 + left(${units}::text, 2)::int)`;
}

/**
 * The integer key (boards) of the board a finalized batch is added to, created with its first
 * entry, and one more finalized batch counted on it (finalized_batches: the window boards'
 * change detector, migrations/index.ts version 14). Entries, the ranking index and the bands are
 * keyed by it and by the address's 20 bytes, not by the contract and address as text: smaller
 * rows, so a finalization dirties (and its commit writes) fewer pages (version 13). The insert
 * runs only when the board is missing: an `INSERT … ON CONFLICT DO NOTHING` on every batch would
 * draw an identity value each time.
 */
async function boardOfFinalizedBatch(db: Queryable, contract: AddressKey, pointType: PointType): Promise<number> {
  const { rows } = await db.query<{ board: number }>({
    name: "pl-lb-board-id",
    text: `WITH found AS (
             UPDATE boards SET finalized_batches = finalized_batches + 1 WHERE contract = $1 AND point_type = $2 RETURNING board
           ),
           created AS (
             INSERT INTO boards (contract, point_type, finalized_batches) SELECT $1, $2, 1 WHERE NOT EXISTS (SELECT 1 FROM found)
             ON CONFLICT (contract, point_type) DO NOTHING
             RETURNING board
           )
           SELECT board FROM found UNION ALL SELECT board FROM created`,
    values: [contract, pointType],
  });
  // No row only if another transaction created the board between `found` and the insert: the
  // contract's account lock (see above) rules that out, so it stops the finalization instead.
  assertInvariant(rows.length === 1, `board of ${contract} ${pointType}: ${rows.length} rows found or created`);
  return rows[0]!.board;
}

/** A board's key in a read, by its contract ($1) and point type ($2): NULL (no rows) before its first entry. */
const BOARD_SQL = "(SELECT board FROM boards WHERE contract = $1 AND point_type = $2)";

/** board_entries.address back as the service's address key (0x and lowercase hex). */
const ADDRESS_TEXT = "'0x' || encode(e.address, 'hex')";

/** An address key ('0x' and 40 hex digits) as board_entries.address, its 20 bytes. */
const addressBytes = (text: string) => `decode(substr(${text}, 3), 'hex')`;

/** The tables a board is kept in: the all-time board's (keyed by board) or a window board's (by window_id). */
interface BoardTables {
  /** In the names of its prepared statements: one name per statement text on a connection. */
  name: string;
  entries: string;
  bands: string;
  key: string;
}

const BOARD_TABLES: BoardTables = { name: "board", entries: "board_entries", bands: "board_bands", key: "board" };
const WINDOW_TABLES: BoardTables = { name: "window", entries: "window_entries", bands: "window_bands", key: "window_id" };

/**
 * The batch's ($1) recipients on a board (its key $2), in one statement: their entries grow (or
 * are created), and each recipient moves from the band of its old amount to the band of its new
 * one. The old amount is the new one (RETURNING) less what this batch added: an entry only exists
 * with points, so an old amount of 0 is an entry just created (no band to leave). A band's change
 * is netted first (a row is changed once per statement): gains are upserted, losses subtracted
 * from rows that exist. Returns how many recipients were ranked. Written once for both table sets.
 */
function addToBoardSql({ entries, bands, key }: BoardTables): string {
  // The recipients' bytes sort as their text does (fixed length, lowercase hex): address order either way.
  return `WITH recipients AS (SELECT ${addressBytes("address")} AS address, units FROM (${RECIPIENTS_SQL}) summed),
           upserted AS (
             INSERT INTO ${entries} AS e (${key}, address, points_units)
             SELECT $2, address, units FROM recipients ORDER BY address
             ON CONFLICT (${key}, address) DO UPDATE SET points_units = e.points_units + excluded.points_units
             RETURNING e.address, e.points_units
           ),
           moved AS (
             SELECT u.points_units AS now_units, u.points_units - r.units AS was_units
             FROM upserted u JOIN recipients r ON r.address = u.address
           ),
           delta AS (
             SELECT band, sum(n) AS n FROM (
               SELECT ${bandSql("now_units")} AS band, 1 AS n FROM moved
               UNION ALL SELECT ${bandSql("was_units")}, -1 FROM moved WHERE was_units > 0
             ) changes
             GROUP BY band HAVING sum(n) <> 0
           ),
           gained AS (
             INSERT INTO ${bands} AS b (${key}, band, entries)
             SELECT $2, band, n FROM delta WHERE n > 0 ORDER BY band
             ON CONFLICT (${key}, band) DO UPDATE SET entries = b.entries + excluded.entries
             RETURNING 1
           ),
           lost AS (
             UPDATE ${bands} b SET entries = b.entries + delta.n FROM delta
             WHERE delta.n < 0 AND b.${key} = $2 AND b.band = delta.band
             RETURNING 1
           )
           SELECT count(*) AS ranked FROM upserted`;
}

/** Adds the batch's recipients to a board of the table set (addToBoardSql); how many were ranked. */
async function addToTables(db: Queryable, tables: BoardTables, key: number, batch: StoredBatch): Promise<number> {
  const { rows } = await db.query<{ ranked: string }>({
    name: `pl-lb-add-to-${tables.name}`,
    text: addToBoardSql(tables),
    values: [batch.seq, key],
  });
  return Number(rows[0]!.ranked);
}

/** The batch's recipients on its contract's all-time board (addToBoardSql). */
async function addToBoard(db: Queryable, batch: StoredBatch): Promise<number> {
  return addToTables(db, BOARD_TABLES, await boardOfFinalizedBatch(db, batch.contract, batch.pointType), batch);
}

/**
 * Each recipient's receipt into received_daily: its row of (point type, UTC day of finalizedAtMs,
 * contract) grows in place, and its first and last receipt times widen to take finalizedAtMs.
 */
async function addReceipts(db: Queryable, batch: StoredBatch, finalizedAtMs: number): Promise<void> {
  await db.query({
    name: "pl-lb-add-receipts",
    text: `INSERT INTO received_daily AS d (address, point_type, day_ms, contract, first_at_ms, last_at_ms, amount_units)
           SELECT address, $3, $4, $2, $5, $5, units FROM (${RECIPIENTS_SQL}) recipients ORDER BY address
           ON CONFLICT (address, point_type, day_ms, contract) DO UPDATE SET amount_units = d.amount_units + excluded.amount_units,
             first_at_ms = least(d.first_at_ms, excluded.first_at_ms), last_at_ms = greatest(d.last_at_ms, excluded.last_at_ms)`,
    values: [batch.seq, batch.contract, batch.pointType, utcDayOf(finalizedAtMs), finalizedAtMs],
  });
}

/**
 * Up to `limit` batches off history_backfill, oldest first, deleted in this transaction; rows
 * another instance's step holds are skipped (SKIP LOCKED), so steps of several instances share
 * the work and never add a batch twice.
 */
async function takeBackfill(db: Queryable, limit: number): Promise<{ batch: StoredBatch; finalizedAtMs: number }[]> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-lb-take-backfill",
    text: `WITH taken AS (SELECT seq FROM history_backfill ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED),
           deleted AS (DELETE FROM history_backfill h USING taken WHERE h.seq = taken.seq RETURNING h.seq)
           SELECT ${BATCH_COLUMNS} FROM batches WHERE seq IN (SELECT seq FROM deleted) ORDER BY seq`,
    values: [limit],
  });
  return rows.map((row) => ({ batch: toStoredBatch(row, toUnits(row.total_units)), finalizedAtMs: toNumber(row.finalized_at_ms) }));
}

/** The history tables for the ledger flows (src/ledger/history.ts), over pg. */
export const leaderboards = { addToBoard, addReceipts, takeBackfill } satisfies LeaderboardsPort<Queryable, "async">;

// ---- Window boards (the window job's steps) ---------------------------------------------------

interface WindowWorkRow {
  window_id: string;
  contract: string;
  point_type: string;
  from_ms: string;
  to_ms: string;
  state: "building" | "ready" | "dropping";
  finalized_batches: string;
}

/**
 * The window's FINALIZED batches (batches_finalized), over a statement's contract, point type and
 * bounds: one definition for the job's count, its batches and a read's check, so they agree.
 */
function finalizedInWindowSql(alias: string, contract: string, pointType: string, fromMs: string, toMs: string): string {
  return `${alias}.contract = ${contract} AND ${alias}.point_type = ${pointType} AND ${alias}.status = 'FINALIZED'
    AND ${alias}.finalized_at_ms >= ${fromMs} AND ${alias}.finalized_at_ms < ${toMs}`;
}

/**
 * A window board to drop (first: dropping frees space and unblocks nothing else), or one that
 * misses FINALIZED batches of its window: being built, or ready but holding fewer than the window
 * has (a batch finalized since, or late into it). First, ready ones whose board finalized batches
 * since they were seen but that miss none (one count each, in the statement's one snapshot with
 * the board's count) are recorded as seen; only those are counted, so an idle board costs nothing.
 * Locked for this transaction; rows another instance's step holds are skipped (SKIP LOCKED), so
 * several instances work on different ones.
 */
async function takeWindowWork(db: Queryable): Promise<WindowBoardWork | null> {
  await db.query({
    name: "pl-lb-see-window-boards",
    text: `UPDATE window_boards w SET seen_finalized = b.finalized_batches FROM boards b
           WHERE b.board = w.board AND w.state = 'ready' AND w.seen_finalized <> b.finalized_batches
             AND w.window_id IN (SELECT c.window_id FROM window_boards c JOIN boards cb ON cb.board = c.board
                                 WHERE c.state = 'ready' AND c.seen_finalized <> cb.finalized_batches FOR UPDATE OF c SKIP LOCKED)
             AND w.batches = (SELECT count(*) FROM batches f
                              WHERE ${finalizedInWindowSql("f", "b.contract", "b.point_type", "w.from_ms", "w.to_ms")})`,
  });
  const { rows } = await db.query<WindowWorkRow>({
    name: "pl-lb-take-window-work",
    text: `SELECT w.window_id, b.contract, b.point_type, w.from_ms, w.to_ms, w.state, b.finalized_batches
           FROM window_boards w JOIN boards b ON b.board = w.board
           WHERE w.state IN ('dropping', 'building') OR (w.state = 'ready' AND w.seen_finalized <> b.finalized_batches)
           ORDER BY w.state = 'dropping' DESC, w.window_id LIMIT 1 FOR UPDATE OF w SKIP LOCKED`,
  });
  const row = rows[0];
  if (!row) return null;
  return {
    window: toNumber(row.window_id),
    contract: row.contract as AddressKey,
    pointType: row.point_type as PointType,
    fromMs: toNumber(row.from_ms),
    toMs: toNumber(row.to_ms),
    state: row.state,
    boardFinalized: toNumber(row.finalized_batches),
  };
}

/** Up to `limit` FINALIZED batches of the work's window that its window board does not hold (window_batches), in seq order. */
async function windowBatches(db: Queryable, work: WindowBoardWork, limit: number): Promise<StoredBatch[]> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-lb-window-batches",
    text: `SELECT ${BATCH_COLUMNS} FROM batches f
           WHERE ${finalizedInWindowSql("f", "$1", "$2", "$3", "$4")}
             AND NOT EXISTS (SELECT 1 FROM window_batches x WHERE x.window_id = $5 AND x.seq = f.seq)
           ORDER BY f.seq LIMIT $6`,
    values: [work.contract, work.pointType, work.fromMs, work.toMs, work.window, limit],
  });
  return rows.map((row) => toStoredBatch(row, toUnits(row.total_units)));
}

/**
 * The batch's recipients on a window board, as addToBoard adds them to the all-time board, and
 * the batch in window_batches: a plain insert, so a batch added twice fails the step (its
 * primary key) instead of counting its transfers twice.
 */
async function addToWindow(db: Queryable, window: number, batch: StoredBatch): Promise<number> {
  await db.query({
    name: "pl-lb-add-window-batch",
    text: "INSERT INTO window_batches (window_id, seq) VALUES ($1, $2)",
    values: [window, batch.seq],
  });
  return addToTables(db, WINDOW_TABLES, window, batch);
}

/** Counts `added` more batches held; once caught up, the window board is ready (read from) and seen at work.boardFinalized. */
async function advanceWindow(db: Queryable, work: WindowBoardWork, added: number, caughtUp: boolean): Promise<void> {
  const { rowCount } = await db.query({
    name: "pl-lb-advance-window",
    text: `UPDATE window_boards SET batches = batches + $2,
             state = CASE WHEN $3::boolean THEN 'ready' ELSE state END,
             seen_finalized = CASE WHEN $3::boolean THEN $4 ELSE seen_finalized END
           WHERE window_id = $1`,
    values: [work.window, added, caughtUp, work.boardFinalized],
  });
  // The step holds the row (takeWindowWork): a missing one would leave the batches just added uncounted.
  assertInvariant(rowCount === 1, `window ${work.window}: ${rowCount} window_boards rows advanced`);
}

/**
 * Deletes up to `limit` entries of a dropped window board; once fewer were left, its batches,
 * its bands and its row too (it is gone: another board of the same window may be built
 * meanwhile, under another window_id). Returns how many entries it deleted.
 */
async function dropWindowEntries(db: Queryable, window: number, limit: number): Promise<number> {
  const deleted = await db.query({
    name: "pl-lb-drop-window-entries",
    text: `DELETE FROM window_entries WHERE window_id = $1
             AND address IN (SELECT address FROM window_entries WHERE window_id = $1 LIMIT $2)`,
    values: [window, limit],
  });
  const count = deleted.rowCount ?? 0;
  if (count < limit) {
    await db.query({ name: "pl-lb-drop-window-batches", text: "DELETE FROM window_batches WHERE window_id = $1", values: [window] });
    await db.query({ name: "pl-lb-drop-window-bands", text: "DELETE FROM window_bands WHERE window_id = $1", values: [window] });
    await db.query({ name: "pl-lb-drop-window", text: "DELETE FROM window_boards WHERE window_id = $1", values: [window] });
  }
  return count;
}

/** The window boards for the window job's flow (src/ledger/history.ts buildWindowBoards), over pg. */
export const windowBoards = {
  takeWindowWork,
  windowBatches,
  addToWindow,
  advanceWindow,
  dropWindowEntries,
} satisfies WindowBoardsPort<Queryable, "async">;

// ---- Reads -------------------------------------------------------------------------------------

interface EntryRow {
  address: string;
  units: string;
}

function boardRows(rows: EntryRow[]): BoardRow[] {
  return rows.map((row) => ({ address: row.address as AddressKey, units: toUnits(row.units) }));
}

/**
 * A board as a read finds it: its tables and its key, an SQL expression over the statement's
 * first parameters (`values`); a statement's own parameters are numbered after them (paramOf).
 */
interface KeptBoard {
  tables: BoardTables;
  key: string;
  values: unknown[];
}

/**
 * The all-time board, looked up in each statement (BOARD_SQL, an init plan) rather than first:
 * a round trip saved, and the ranking index is still read in order from (board, …).
 */
function allTimeBoard(contract: AddressKey, pointType: PointType): KeptBoard {
  return { tables: BOARD_TABLES, key: BOARD_SQL, values: [contract, pointType] };
}

/** A window board, by the window_id its read found (findWindowBoard). */
function windowBoard(window: number): KeptBoard {
  return { tables: WINDOW_TABLES, key: "$1", values: [window] };
}

/** The statement's own parameter n (from 1), after the board's key parameters. */
function paramOf(board: KeptBoard, n: number): string {
  return `$${board.values.length + n}`;
}

async function participantsOf(db: Queryable, board: KeptBoard): Promise<number> {
  const { bands, key, name } = board.tables;
  const { rows } = await db.query<{ participants: string }>({
    name: `pl-lb-${name}-participants`,
    text: `SELECT coalesce(sum(entries), 0) AS participants FROM ${bands} WHERE ${key} = ${board.key}`,
    values: board.values,
  });
  return Number(rows[0]!.participants);
}

/**
 * A kept board (all time or a window board): the ranking index read from where the page starts.
 * Past a cursor, the rest of its amount's tie (address after it) then the amounts below: two
 * index ranges, never a sort.
 */
async function readKeptRows(db: Queryable, board: KeptBoard, after: BoardAfter | null, limit: number): Promise<BoardRow[]> {
  const { entries, key, name } = board.tables;
  // e.address in ORDER BY: a bare `address` would name the output column (the text), sorted apart from the index.
  const select = `SELECT ${ADDRESS_TEXT} AS address, e.points_units::text AS units FROM ${entries} e WHERE e.${key} = ${board.key}`;
  const param = (n: number) => paramOf(board, n);
  if (after === null) {
    const { rows } = await db.query<EntryRow>({
      name: `pl-lb-${name}-first`,
      text: `${select} ORDER BY e.points_units DESC, e.address LIMIT ${param(1)}`,
      values: [...board.values, limit],
    });
    return boardRows(rows);
  }
  const at = [...board.values, after.units.toString()];
  const tie = await db.query<EntryRow>({
    name: `pl-lb-${name}-tie`,
    text: `${select} AND e.points_units = ${param(1)}::numeric AND e.address > ${addressBytes(param(2))}
           ORDER BY e.address LIMIT ${param(3)}`,
    values: [...at, after.address, limit],
  });
  if (tie.rows.length >= limit) return boardRows(tie.rows);
  const below = await db.query<EntryRow>({
    name: `pl-lb-${name}-below`,
    text: `${select} AND e.points_units < ${param(1)}::numeric ORDER BY e.points_units DESC, e.address LIMIT ${param(2)}`,
    values: [...at, limit - tie.rows.length],
  });
  return boardRows([...tie.rows, ...below.rows]);
}

/** A page of a kept board and its participants (in the caller's snapshot: they agree). */
async function readKeptPage(db: Queryable, board: KeptBoard, query: BoardQuery): Promise<BoardPage> {
  const rows = await readKeptRows(db, board, query.after, query.limit + 1);
  return { participants: await participantsOf(db, board), ...pageOf(rows, query.limit) };
}

/** A window's board: its FINALIZED batches (batches_finalized) and their transfers, summed per recipient. */
const WINDOW_BOARD_SQL = `board AS (
    SELECT t.to_address AS address, sum(t.amount_units) AS units
    FROM batches b JOIN transfers t ON t.seq = b.seq
    WHERE ${finalizedInWindowSql("b", "$1", "$2", "$3", "$4")}
    GROUP BY t.to_address HAVING sum(t.amount_units) > 0
  )`;

/** A window's bounds as window_boards keeps them (no `from`: Number.MIN_SAFE_INTEGER). */
function windowBounds(window: DayWindow): [number, number] {
  return [window.fromMs ?? Number.MIN_SAFE_INTEGER, window.toMs ?? Number.MAX_SAFE_INTEGER];
}

/** A window's page and its participants from its batches, one statement (the count is there even when the page is empty). */
async function readWindowBoard(db: Queryable, query: BoardQuery): Promise<BoardPage> {
  const { rows } = await db.query<{ participants: string; address: string | null; units: string | null }>({
    name: "pl-lb-window-board",
    text: `WITH ${WINDOW_BOARD_SQL}
           SELECT p.participants, page.address, page.units FROM (SELECT count(*) AS participants FROM board) p
           LEFT JOIN LATERAL (
             SELECT address, units::text AS units FROM board
             WHERE $5::numeric IS NULL OR units < $5::numeric OR (units = $5::numeric AND address > $6)
             ORDER BY board.units DESC, address LIMIT $7
           ) page ON true`,
    values: [
      query.contract,
      query.pointType,
      ...windowBounds(query.window),
      query.after?.units.toString() ?? null,
      query.after?.address ?? "",
      query.limit + 1,
    ],
  });
  // Board order once more: a join does not promise to keep the lateral page's order.
  const page = boardRows(rows.filter((row) => row.address !== null) as EntryRow[]).sort((a, b) =>
    a.units === b.units ? (a.address < b.address ? -1 : 1) : a.units > b.units ? -1 : 1,
  );
  return { participants: Number(rows[0]!.participants), ...pageOf(page, query.limit) };
}

function pageOf(rows: BoardRow[], limit: number): { rows: BoardRow[]; more: boolean } {
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** The window board a read found for its window: the one kept (not dropping), and in what state. */
interface KeptWindowBoard {
  window: number;
  state: "building" | "ready";
  batches: number;
  /** The window's FINALIZED batches (counted only for a ready window board whose board finalized batches since it was seen). */
  finalized: number | null;
  /** Ready, and its board finalized no batch since the window job found it complete. */
  seen: boolean;
}

/** What a window's read found: its board, and its kept window board if any. Null: the contract has no board of the point type yet. */
interface FoundWindowBoard {
  board: number;
  kept: KeptWindowBoard | null;
}

/**
 * The window's board and its kept window board, with the window's FINALIZED batches counted
 * (batches_finalized) when that is ready: equal to the batches it holds, it misses none
 * (../ports/leaderboards.ts). The count sits in a CASE, so it runs only for a ready one.
 */
async function findWindowBoard(
  db: Queryable,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
): Promise<FoundWindowBoard | null> {
  const { rows } = await db.query<{
    board: number;
    window_id: string | null;
    state: "building" | "ready" | null;
    batches: string | null;
    finalized: string | null;
    seen: boolean | null;
  }>({
    name: "pl-lb-find-window-board",
    text: `SELECT b.board, w.window_id, w.state, w.batches, w.state = 'ready' AND w.seen_finalized = b.finalized_batches AS seen,
             CASE WHEN w.state = 'ready' AND w.seen_finalized <> b.finalized_batches
               THEN (SELECT count(*) FROM batches f WHERE ${finalizedInWindowSql("f", "$1", "$2", "$3", "$4")}) END AS finalized
           FROM boards b LEFT JOIN window_boards w ON w.board = b.board AND w.from_ms = $3 AND w.to_ms = $4 AND w.state <> 'dropping'
           WHERE b.contract = $1 AND b.point_type = $2`,
    values: [contract, pointType, ...windowBounds(window)],
  });
  const row = rows[0];
  if (!row) return null;
  if (row.window_id === null) return { board: row.board, kept: null };
  const kept = {
    window: toNumber(row.window_id),
    state: row.state!,
    batches: Number(row.batches),
    finalized: row.finalized === null ? null : Number(row.finalized),
    seen: row.seen === true,
  };
  return { board: row.board, kept };
}

/**
 * Whether a read uses its kept window board: ready, and missing no FINALIZED batch of the window
 * or only batches finalized less than WINDOW_BOARD_LAG_MS before nowMs (the window job adds
 * them). Nothing is counted while its board finalized no batch since it was seen complete; which
 * ones it misses is looked for only when the counts differ: window_batches, one probe per batch
 * of the window.
 */
async function windowBoardCurrent(
  db: Queryable,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  kept: KeptWindowBoard,
  nowMs: number,
): Promise<boolean> {
  if (kept.seen) return true;
  if (kept.state !== "ready" || kept.finalized === null) return false;
  // A window board holds FINALIZED batches of its window only, each once, and they stay so.
  assertInvariant(kept.batches <= kept.finalized, `window ${kept.window}: holds ${kept.batches} of ${kept.finalized} batches`);
  if (kept.batches === kept.finalized) return true;
  const { rows } = await db.query<{ oldest_ms: string | null }>({
    name: "pl-lb-window-oldest-missing",
    text: `SELECT min(f.finalized_at_ms) AS oldest_ms FROM batches f
           WHERE ${finalizedInWindowSql("f", "$1", "$2", "$3", "$4")}
             AND NOT EXISTS (SELECT 1 FROM window_batches x WHERE x.window_id = $5 AND x.seq = f.seq)`,
    values: [contract, pointType, ...windowBounds(window), kept.window],
  });
  const oldestMs = rows[0]!.oldest_ms;
  assertInvariant(oldestMs !== null, `window ${kept.window}: holds ${kept.batches} of ${kept.finalized} batches, none missing`);
  return toNumber(oldestMs) > nowMs - WINDOW_BOARD_LAG_MS;
}

/**
 * Asks for the window board of a window that has none, in one short transaction: it is listed to
 * be built unless one is (ON CONFLICT: another instance may ask at the same time), and the board
 * keeps WINDOW_BOARDS_PER_BOARD at most, the oldest asked dropped. The window job does the work.
 * The board's row is locked first, so two requests for one board queue instead of locking each
 * other's window_boards rows in opposite orders (a deadlock would fail a read).
 */
async function requestWindowBoard(pool: PgPool, board: number, window: DayWindow, nowMs: number): Promise<void> {
  await transaction(pool, async (db) => {
    await db.query({ name: "pl-lb-lock-board", text: "SELECT 1 FROM boards WHERE board = $1 FOR NO KEY UPDATE", values: [board] });
    await db.query({
      name: "pl-lb-request-window",
      text: `INSERT INTO window_boards (board, from_ms, to_ms, state, created_at_ms) VALUES ($1, $2, $3, 'building', $4)
             ON CONFLICT (board, from_ms, to_ms) WHERE state <> 'dropping' DO NOTHING`,
      values: [board, ...windowBounds(window), nowMs],
    });
    await db.query({
      name: "pl-lb-cap-windows",
      text: `UPDATE window_boards SET state = 'dropping' WHERE state <> 'dropping' AND window_id IN (
               SELECT window_id FROM window_boards WHERE board = $1 AND state <> 'dropping' ORDER BY window_id DESC OFFSET $2
             )`,
      values: [board, WINDOW_BOARDS_PER_BOARD],
    });
  });
}

/**
 * A window (not all time, ended or open) read from its window board when it is current at nowMs
 * (windowBoardCurrent), else from its batches; one snapshot either way. A window without a window
 * board asks for one after its read (outside the read's transaction, which is read-only); one
 * being built or behind is left to the window job.
 */
async function readWindow<T>(
  pool: PgPool,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  nowMs: number | undefined,
  read: { fromWindowBoard: (db: Queryable, board: KeptBoard) => Promise<T>; fromBatches: (db: Queryable) => Promise<T> },
): Promise<T> {
  // Without the reader's time, no lag can be judged: one statement over the batches, one snapshot.
  if (nowMs === undefined) return read.fromBatches(pool);
  const { result, request } = await transaction(
    pool,
    async (db) => {
      const found = await findWindowBoard(db, contract, pointType, window);
      const kept = found?.kept ?? null;
      if (kept !== null && (await windowBoardCurrent(db, contract, pointType, window, kept, nowMs))) {
        return { result: await read.fromWindowBoard(db, windowBoard(kept.window)), request: null };
      }
      return { result: await read.fromBatches(db), request: found !== null && kept === null ? found.board : null };
    },
    { isolation: "REPEATABLE READ", readOnly: true },
  );
  if (request !== null) await requestWindowBoard(pool, request, window, nowMs);
  return result;
}

/** A page of a board (all time or a window), read in one snapshot: its rows and participants agree. */
async function readBoard(pool: PgPool, query: BoardQuery): Promise<BoardPage> {
  if (isAllTime(query.window)) {
    const board = allTimeBoard(query.contract, query.pointType);
    return transaction(pool, (db) => readKeptPage(db, board, query), { isolation: "REPEATABLE READ", readOnly: true });
  }
  return readWindow(pool, query.contract, query.pointType, query.window, query.nowMs, {
    fromWindowBoard: (db, board) => readKeptPage(db, board, query),
    fromBatches: (db) => readWindowBoard(db, query),
  });
}

/**
 * An address's place on a kept board: the entries of the bands above its amount's, plus the
 * entries inside its band with more (one range of the ranking index, bounded by bandUpperUnits).
 */
async function readKeptStanding(db: Queryable, board: KeptBoard, address: AddressKey): Promise<BoardStanding> {
  const { entries, bands, key, name } = board.tables;
  const param = (n: number) => paramOf(board, n);
  const participants = await participantsOf(db, board);
  const entry = await db.query<{ units: string }>({
    name: `pl-lb-${name}-entry`,
    text: `SELECT points_units::text AS units FROM ${entries} WHERE ${key} = ${board.key} AND address = ${addressBytes(param(1))}`,
    values: [...board.values, address],
  });
  const units = entry.rows[0] ? toUnits(entry.rows[0].units) : 0n;
  if (units === 0n) return { units, ahead: participants, participants };
  const band = rankBandOf(units);
  const { rows } = await db.query<{ above: string; inside: string }>({
    name: `pl-lb-${name}-ahead`,
    text: `SELECT
             (SELECT coalesce(sum(entries), 0) FROM ${bands} WHERE ${key} = ${board.key} AND band > ${param(1)}) AS above,
             (SELECT count(*) FROM ${entries} WHERE ${key} = ${board.key}
                AND points_units > ${param(2)}::numeric AND points_units < ${param(3)}::numeric) AS inside`,
    values: [...board.values, band, units.toString(), bandUpperUnits(band).toString()],
  });
  return { units, ahead: Number(rows[0]!.above) + Number(rows[0]!.inside), participants };
}

/** An address's place on a window's board from the window's batches, one statement. */
async function readWindowStanding(
  db: Queryable,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
): Promise<BoardStanding> {
  const { rows } = await db.query<{ participants: string; units: string | null; ahead: string }>({
    name: "pl-lb-window-standing",
    text: `WITH ${WINDOW_BOARD_SQL}
           SELECT (SELECT count(*) FROM board) AS participants, me.units::text AS units,
             (SELECT count(*) FROM board o WHERE o.units > me.units) AS ahead
           FROM (SELECT 1) one LEFT JOIN board me ON me.address = $5`,
    values: [contract, pointType, ...windowBounds(window), address],
  });
  const row = rows[0]!;
  const participants = Number(row.participants);
  if (row.units === null) return { units: 0n, ahead: participants, participants };
  return { units: toUnits(row.units), ahead: Number(row.ahead), participants };
}

/** An address's place on a board (all time or a window), read in one snapshot. */
async function readStanding(
  pool: PgPool,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
  nowMs?: number,
): Promise<BoardStanding> {
  if (isAllTime(window)) {
    const board = allTimeBoard(contract, pointType);
    return transaction(pool, (db) => readKeptStanding(db, board, address), { isolation: "REPEATABLE READ", readOnly: true });
  }
  return readWindow(pool, contract, pointType, window, nowMs, {
    fromWindowBoard: (db, board) => readKeptStanding(db, board, address),
    fromBatches: (db) => readWindowStanding(db, contract, pointType, window, address),
  });
}

/** Batches the history job has yet to add (reads answer 503 while any is left). */
async function historyBackfillRemaining(pool: PgPool): Promise<number> {
  const { rows } = await pool.query<{ remaining: string }>({
    name: "pl-lb-backfill-remaining",
    text: "SELECT count(*) AS remaining FROM history_backfill",
  });
  return Number(rows[0]!.remaining);
}

/** The LeaderboardsStore reads, over the pool (index.ts composes them; backfillHistory and buildWindowBoards are flows). */
export const leaderboardReads = { readBoard, readStanding, historyBackfillRemaining };
