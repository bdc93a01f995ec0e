import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { BoardRow, WindowBounds } from "../../domain/leaderboard.js";
import { StoreUnavailableError } from "../errors.js";
import type {
  BoardAfter,
  BoardStanding,
  EntriesAhead,
  FoundWindowBoard,
  LeaderboardReadPort,
  LeaderboardReadsOf,
  RankedBoard,
  WindowBoardRequest,
  WindowOfBatches,
} from "../ports/leaderboards.js";
import { toNumber, toStoreError, toUnits, transaction, transactionLock, type PgPool, type Queryable } from "./db.js";
import {
  ADDRESS_TEXT,
  BOARD_SQL,
  BOARD_TABLES,
  WINDOW_TABLES,
  addressBytes,
  finalizedInWindowSql,
  type BoardTables,
} from "./leaderboard-tables.js";
import { PROJECTION_LOCK_KEY } from "./leaderboard-projection.js";

/** The leaderboard reads over PostgreSQL (the primitives of src/ledger/leaderboards.ts), each in one snapshot. */

/** The projection's through inside a read: what every answer of that read's snapshot counts. */
async function readThrough(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ through_ms: string }>({
    name: "pl-pj-through",
    text: "SELECT through_ms FROM projection_state WHERE id = 1",
  });
  return toNumber(rows[0]!.through_ms);
}

/** A window's board and its kept window board (window_boards_kept: at most one not dropping), one statement. */
async function findWindowBoard(
  db: Queryable,
  contract: AddressKey,
  pointType: PointType,
  bounds: WindowBounds,
): Promise<FoundWindowBoard | null> {
  const { rows } = await db.query<{ board: number; window_id: string | null; state: "building" | "ready" | null }>({
    name: "pl-lb-find-window-board",
    text: `SELECT b.board, w.window_id, w.state
           FROM boards b LEFT JOIN window_boards w ON w.board = b.board AND w.from_ms = $3 AND w.to_ms = $4 AND w.state <> 'dropping'
           WHERE b.contract = $1 AND b.point_type = $2`,
    values: [contract, pointType, bounds.fromMs, bounds.toMs],
  });
  const row = rows[0];
  if (!row) return null;
  if (row.window_id === null) return { board: row.board, kept: null };
  return { board: row.board, kept: { window: toNumber(row.window_id), state: row.state! } };
}

interface EntryRow {
  address: string;
  units: string;
}

function boardRows(rows: EntryRow[]): BoardRow[] {
  return rows.map((row) => ({ address: row.address as AddressKey, units: toUnits(row.units) }));
}

/**
 * A ranked board as its statements name it: its tables and its key, an SQL expression over the
 * statement's first parameters (`values`); a statement's own parameters are numbered after them
 * (paramOf). The all-time board is looked up in each statement (BOARD_SQL, an init plan) rather
 * than first: a round trip saved, and the ranking index is still read in order from (board, …).
 */
interface KeptBoard {
  tables: BoardTables;
  key: string;
  values: unknown[];
}

function keptBoard(board: RankedBoard): KeptBoard {
  if (board.kind === "window") return { tables: WINDOW_TABLES, key: "$1", values: [board.window] };
  return { tables: BOARD_TABLES, key: BOARD_SQL, values: [board.contract, board.pointType] };
}

/** The statement's own parameter n (from 1), after the board's key parameters. */
function paramOf(board: KeptBoard, n: number): string {
  return `$${board.values.length + n}`;
}

async function participants(db: Queryable, ranked: RankedBoard): Promise<number> {
  const board = keptBoard(ranked);
  const { bands, key, name } = board.tables;
  const { rows } = await db.query<{ participants: string }>({
    name: `pl-lb-${name}-participants`,
    text: `SELECT coalesce(sum(entries), 0) AS participants FROM ${bands} WHERE ${key} = ${board.key}`,
    values: board.values,
  });
  return Number(rows[0]!.participants);
}

/**
 * A ranked board's page: the ranking index read from where the page starts. Past a cursor, the
 * rest of its amount's tie (address after it) then the amounts below: two index ranges, never a sort.
 */
async function rankedRows(db: Queryable, ranked: RankedBoard, after: BoardAfter | null, limit: number): Promise<BoardRow[]> {
  const board = keptBoard(ranked);
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

async function entryUnits(db: Queryable, ranked: RankedBoard, address: AddressKey): Promise<bigint> {
  const board = keptBoard(ranked);
  const { entries, key, name } = board.tables;
  const entry = await db.query<{ units: string }>({
    name: `pl-lb-${name}-entry`,
    text: `SELECT points_units::text AS units FROM ${entries} WHERE ${key} = ${board.key} AND address = ${addressBytes(paramOf(board, 1))}`,
    values: [...board.values, address],
  });
  return entry.rows[0] ? toUnits(entry.rows[0].units) : 0n;
}

/** The bands above `band` (their sums) and one range of the ranking index inside it, (units, upperUnits): one statement. */
async function entriesAhead(db: Queryable, ranked: RankedBoard, band: number, units: bigint, upperUnits: bigint): Promise<EntriesAhead> {
  const board = keptBoard(ranked);
  const { entries, bands, key, name } = board.tables;
  const param = (n: number) => paramOf(board, n);
  const { rows } = await db.query<{ above: string; inside: string }>({
    name: `pl-lb-${name}-ahead`,
    text: `SELECT
             (SELECT coalesce(sum(entries), 0) FROM ${bands} WHERE ${key} = ${board.key} AND band > ${param(1)}) AS above,
             (SELECT count(*) FROM ${entries} WHERE ${key} = ${board.key}
                AND points_units > ${param(2)}::numeric AND points_units < ${param(3)}::numeric) AS inside`,
    values: [...board.values, band, units.toString(), upperUnits.toString()],
  });
  return { inBandsAbove: Number(rows[0]!.above), insideBand: Number(rows[0]!.inside) };
}

/**
 * A window's board from its batches: its FINALIZED batches (batches_finalized) by the
 * projection's through ($5, read in the same snapshot: the batches a kept board would count) and
 * their transfers, summed per recipient.
 */
const WINDOW_BOARD_SQL = `board AS (
    SELECT t.to_address AS address, sum(t.amount_units) AS units
    FROM batches b JOIN transfers t ON t.seq = b.seq
    WHERE ${finalizedInWindowSql("b", "$1", "$2", "$3", "$4")} AND b.finalized_at_ms <= $5
    GROUP BY t.to_address HAVING sum(t.amount_units) > 0
  )`;

/** A window's WINDOW_BOARD_SQL parameters ($1 to $5). */
function windowParams({ contract, pointType, fromMs, toMs, throughMs }: WindowOfBatches): unknown[] {
  return [contract, pointType, fromMs, toMs, throughMs];
}

/** A page of a window's board from its batches, with its participants: one statement (the count is there even when the page is empty). */
async function windowPage(
  db: Queryable,
  window: WindowOfBatches,
  after: BoardAfter | null,
  limit: number,
): Promise<{ participants: number; rows: BoardRow[] }> {
  const { rows } = await db.query<{ participants: string; address: string | null; units: string | null }>({
    name: "pl-lb-window-board",
    text: `WITH ${WINDOW_BOARD_SQL}
           SELECT p.participants, page.address, page.units FROM (SELECT count(*) AS participants FROM board) p
           LEFT JOIN LATERAL (
             SELECT address, units::text AS units FROM board
             WHERE $6::numeric IS NULL OR units < $6::numeric OR (units = $6::numeric AND address > $7)
             ORDER BY board.units DESC, address LIMIT $8
           ) page ON true`,
    values: [...windowParams(window), after?.units.toString() ?? null, after?.address ?? "", limit],
  });
  // Board order once more: a join does not promise to keep the lateral page's order.
  const page = boardRows(rows.filter((row) => row.address !== null) as EntryRow[]).sort((a, b) =>
    a.units === b.units ? (a.address < b.address ? -1 : 1) : a.units > b.units ? -1 : 1,
  );
  return { participants: Number(rows[0]!.participants), rows: page };
}

/** An address's place on a window's board from its batches, one statement. */
async function windowStanding(db: Queryable, window: WindowOfBatches, address: AddressKey): Promise<Omit<BoardStanding, "throughMs">> {
  const { rows } = await db.query<{ participants: string; units: string | null; ahead: string }>({
    name: "pl-lb-window-standing",
    text: `WITH ${WINDOW_BOARD_SQL}
           SELECT (SELECT count(*) FROM board) AS participants, me.units::text AS units,
             (SELECT count(*) FROM board o WHERE o.units > me.units) AS ahead
           FROM (SELECT 1) one LEFT JOIN board me ON me.address = $6`,
    values: [...windowParams(window), address],
  });
  const row = rows[0]!;
  const count = Number(row.participants);
  if (row.units === null) return { units: 0n, ahead: count, participants: count };
  return { units: toUnits(row.units), ahead: Number(row.ahead), participants: count };
}

/**
 * Lists a window board for the window job unless one is kept (ON CONFLICT: another instance may
 * ask at the same time), from the projection's through (built_through_ms). The applier's lock is
 * waited for first (a pass at most): a pass that began before the window board existed does not
 * add to it, so its through must be the one the window board starts from. The board's row is
 * locked next (a pass locks boards rows under the applier's lock too: one order), so two requests
 * for one board queue instead of locking each other's window_boards rows in opposite orders in
 * capWindowBoards (a deadlock would fail the request).
 */
async function requestWindowBoard(db: Queryable, request: WindowBoardRequest): Promise<void> {
  await transactionLock(db, "pl-lb-wait-applier", PROJECTION_LOCK_KEY);
  await db.query({ name: "pl-lb-lock-board", text: "SELECT 1 FROM boards WHERE board = $1 FOR NO KEY UPDATE", values: [request.board] });
  await db.query({
    name: "pl-lb-request-window",
    text: `INSERT INTO window_boards (board, from_ms, to_ms, state, created_at_ms, built_through_ms)
           SELECT $1, $2, $3, 'building', $4, through_ms FROM projection_state WHERE id = 1
           ON CONFLICT (board, from_ms, to_ms) WHERE state <> 'dropping' DO NOTHING`,
    values: [request.board, request.fromMs, request.toMs, request.nowMs],
  });
}

async function capWindowBoards(db: Queryable, board: number, keep: number): Promise<void> {
  await db.query({
    name: "pl-lb-cap-windows",
    text: `UPDATE window_boards SET state = 'dropping' WHERE state <> 'dropping' AND window_id IN (
             SELECT window_id FROM window_boards WHERE board = $1 AND state <> 'dropping' ORDER BY window_id DESC OFFSET $2
           )`,
    values: [board, keep],
  });
}

/** The leaderboard reads' primitives, over pg. */
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
} satisfies LeaderboardReadPort<Queryable, "async">;

/** The reads' snapshots: one transaction for through and the rows, so the answer is exact for its through. */
const SNAPSHOT = { isolation: "REPEATABLE READ", readOnly: true } as const;

/**
 * The leaderboard reads over the pool: a snapshot is one REPEATABLE READ READ ONLY transaction;
 * a window board's request one READ COMMITTED transaction of its own, on `writePool` (the
 * primary's, when the snapshots are a replica's: replica.ts).
 */
export function postgresLeaderboardReads(pool: PgPool, writePool: PgPool = pool): LeaderboardReadsOf<Queryable, "async"> {
  return {
    mode: "async",
    port: leaderboardReads,
    snapshot: (work) => transaction(pool, work, SNAPSHOT),
    transact: (work) => transaction(writePool, work),
    isUnavailable: (error) => toStoreError(error) instanceof StoreUnavailableError,
  };
}
