import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { bandUpperUnits, isAllTime, rankBandOf, utcDayOf, type BoardRow, type DayWindow } from "../../domain/leaderboard.js";
import type { StoredBatch } from "../ports/batches.js";
import type { BoardPage, BoardQuery, BoardStanding, LeaderboardsPort } from "../ports/leaderboards.js";
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
 */

/** A recipient's sum in one batch (only those sent anything are ranked). */
const RECIPIENTS_SQL = `SELECT to_address AS address, sum(amount_units) AS units
   FROM transfers WHERE seq = $1 GROUP BY to_address HAVING sum(amount_units) > 0`;

/** domain/leaderboard.ts rankBandOf of a NUMERIC(40,0) amount: its digits × 100 plus its first two digits. */
function bandSql(units: string): string {
  return `(length(${units}::text) * 100 + left(${units}::text, 2)::int)`;
}

/**
 * The board's integer key (boards), created with its first entry. Entries, the ranking index and
 * the bands are keyed by it and by the address's 20 bytes, not by the contract and address as
 * text: smaller rows, so a finalization dirties (and its commit writes) fewer pages
 * (migrations/index.ts, version 13). The insert runs only when the board is missing: an
 * `INSERT … ON CONFLICT DO NOTHING` on every batch would draw an identity value each time.
 */
async function boardId(db: Queryable, contract: AddressKey, pointType: PointType): Promise<number> {
  const { rows } = await db.query<{ board: number }>({
    name: "pl-lb-board-id",
    text: `WITH found AS (SELECT board FROM boards WHERE contract = $1 AND point_type = $2),
           created AS (
             INSERT INTO boards (contract, point_type) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM found)
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

/**
 * The batch's recipients on its contract's board, in one statement: their entries grow (or are
 * created), and each recipient moves from the band of its old amount to the band of its new one.
 * The old amount is the new one (RETURNING) less what this batch added: an entry only exists
 * with points, so an old amount of 0 is an entry just created (no band to leave). A band's change
 * is netted first (a row is changed once per statement): gains are upserted, losses subtracted
 * from rows that exist. Returns how many recipients were ranked.
 */
async function addToBoard(db: Queryable, batch: StoredBatch): Promise<number> {
  const board = await boardId(db, batch.contract, batch.pointType);
  // The recipients' bytes sort as their text does (fixed length, lowercase hex): address order either way.
  const { rows } = await db.query<{ ranked: string }>({
    name: "pl-lb-add-to-board",
    text: `WITH recipients AS (SELECT ${addressBytes("address")} AS address, units FROM (${RECIPIENTS_SQL}) summed),
           upserted AS (
             INSERT INTO board_entries AS e (board, address, points_units)
             SELECT $2, address, units FROM recipients ORDER BY address
             ON CONFLICT (board, address) DO UPDATE SET points_units = e.points_units + excluded.points_units
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
             INSERT INTO board_bands AS b (board, band, entries)
             SELECT $2, band, n FROM delta WHERE n > 0 ORDER BY band
             ON CONFLICT (board, band) DO UPDATE SET entries = b.entries + excluded.entries
             RETURNING 1
           ),
           lost AS (
             UPDATE board_bands b SET entries = b.entries + delta.n FROM delta
             WHERE delta.n < 0 AND b.board = $2 AND b.band = delta.band
             RETURNING 1
           )
           SELECT count(*) AS ranked FROM upserted`,
    values: [batch.seq, board],
  });
  return Number(rows[0]!.ranked);
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

// ---- Reads -------------------------------------------------------------------------------------

interface EntryRow {
  address: string;
  units: string;
}

function boardRows(rows: EntryRow[]): BoardRow[] {
  return rows.map((row) => ({ address: row.address as AddressKey, units: toUnits(row.units) }));
}

async function participantsOf(db: Queryable, contract: AddressKey, pointType: PointType): Promise<number> {
  const { rows } = await db.query<{ participants: string }>({
    name: "pl-lb-participants",
    text: `SELECT coalesce(sum(entries), 0) AS participants FROM board_bands WHERE board = ${BOARD_SQL}`,
    values: [contract, pointType],
  });
  return Number(rows[0]!.participants);
}

/**
 * All time: the ranking index read from where the page starts. Past a cursor, the rest of its
 * amount's tie (address after it) then the amounts below: two index ranges, never a sort. The
 * board is looked up once per statement (BOARD_SQL, an init plan), so the ranking index is still
 * read in order from (board, …).
 */
async function readAllTimeRows(db: Queryable, query: BoardQuery, limit: number): Promise<BoardRow[]> {
  // e.address in ORDER BY: a bare `address` would name the output column (the text), sorted apart from the index.
  const select = `SELECT ${ADDRESS_TEXT} AS address, e.points_units::text AS units FROM board_entries e`;
  if (query.after === null) {
    const { rows } = await db.query<EntryRow>({
      name: "pl-lb-board-first",
      text: `${select} WHERE e.board = ${BOARD_SQL} ORDER BY e.points_units DESC, e.address LIMIT $3`,
      values: [query.contract, query.pointType, limit],
    });
    return boardRows(rows);
  }
  const at = [query.contract, query.pointType, query.after.units.toString()];
  const tie = await db.query<EntryRow>({
    name: "pl-lb-board-tie",
    text: `${select} WHERE e.board = ${BOARD_SQL} AND e.points_units = $3::numeric AND e.address > ${addressBytes("$4")}
           ORDER BY e.address LIMIT $5`,
    values: [...at, query.after.address, limit],
  });
  if (tie.rows.length >= limit) return boardRows(tie.rows);
  const below = await db.query<EntryRow>({
    name: "pl-lb-board-below",
    text: `${select} WHERE e.board = ${BOARD_SQL} AND e.points_units < $3::numeric ORDER BY e.points_units DESC, e.address LIMIT $4`,
    values: [...at, limit - tie.rows.length],
  });
  return boardRows([...tie.rows, ...below.rows]);
}

/** A window's board: its FINALIZED batches (batches_finalized) and their transfers, summed per recipient. */
const WINDOW_BOARD_SQL = `board AS (
    SELECT t.to_address AS address, sum(t.amount_units) AS units
    FROM batches b JOIN transfers t ON t.seq = b.seq
    WHERE b.contract = $1 AND b.point_type = $2 AND b.status = 'FINALIZED' AND b.finalized_at_ms >= $3 AND b.finalized_at_ms < $4
    GROUP BY t.to_address HAVING sum(t.amount_units) > 0
  )`;

function windowBounds(window: DayWindow): [number, number] {
  return [window.fromMs ?? Number.MIN_SAFE_INTEGER, window.toMs ?? Number.MAX_SAFE_INTEGER];
}

/** A window's page and its participants, one statement (the count is there even when the page is empty). */
async function readWindowBoard(db: Queryable, query: BoardQuery, limit: number): Promise<{ participants: number; rows: BoardRow[] }> {
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
      limit,
    ],
  });
  // Board order once more: a join does not promise to keep the lateral page's order.
  const page = boardRows(rows.filter((row) => row.address !== null) as EntryRow[]).sort((a, b) =>
    a.units === b.units ? (a.address < b.address ? -1 : 1) : a.units > b.units ? -1 : 1,
  );
  return { participants: Number(rows[0]!.participants), rows: page };
}

function pageOf(rows: BoardRow[], limit: number): { rows: BoardRow[]; more: boolean } {
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** A page of a board (all time or a window), read in one snapshot: its rows and participants agree. */
async function readBoard(pool: PgPool, query: BoardQuery): Promise<BoardPage> {
  return transaction(
    pool,
    async (db) => {
      if (isAllTime(query.window)) {
        const rows = await readAllTimeRows(db, query, query.limit + 1);
        return { participants: await participantsOf(db, query.contract, query.pointType), ...pageOf(rows, query.limit) };
      }
      const { participants, rows } = await readWindowBoard(db, query, query.limit + 1);
      return { participants, ...pageOf(rows, query.limit) };
    },
    { isolation: "REPEATABLE READ", readOnly: true },
  );
}

/**
 * An address's place on the whole board: the entries of the bands above its amount's, plus the
 * entries inside its band with more (one range of the ranking index, bounded by bandUpperUnits).
 */
async function readAllTimeStanding(db: Queryable, contract: AddressKey, pointType: PointType, address: AddressKey): Promise<BoardStanding> {
  const participants = await participantsOf(db, contract, pointType);
  const entry = await db.query<{ units: string }>({
    name: "pl-lb-entry",
    text: `SELECT points_units::text AS units FROM board_entries WHERE board = ${BOARD_SQL} AND address = ${addressBytes("$3")}`,
    values: [contract, pointType, address],
  });
  const units = entry.rows[0] ? toUnits(entry.rows[0].units) : 0n;
  if (units === 0n) return { units, ahead: participants, participants };
  const band = rankBandOf(units);
  const { rows } = await db.query<{ above: string; inside: string }>({
    name: "pl-lb-ahead",
    text: `SELECT
             (SELECT coalesce(sum(entries), 0) FROM board_bands WHERE board = ${BOARD_SQL} AND band > $3) AS above,
             (SELECT count(*) FROM board_entries WHERE board = ${BOARD_SQL}
                AND points_units > $4::numeric AND points_units < $5::numeric) AS inside`,
    values: [contract, pointType, band, units.toString(), bandUpperUnits(band).toString()],
  });
  return { units, ahead: Number(rows[0]!.above) + Number(rows[0]!.inside), participants };
}

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

async function readStanding(
  pool: PgPool,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  address: AddressKey,
): Promise<BoardStanding> {
  if (!isAllTime(window)) return readWindowStanding(pool, contract, pointType, window, address);
  return transaction(pool, (db) => readAllTimeStanding(db, contract, pointType, address), { isolation: "REPEATABLE READ", readOnly: true });
}

async function historyBackfillRemaining(pool: PgPool): Promise<number> {
  const { rows } = await pool.query<{ remaining: string }>({
    name: "pl-lb-backfill-remaining",
    text: "SELECT count(*) AS remaining FROM history_backfill",
  });
  return Number(rows[0]!.remaining);
}

/** The LeaderboardsStore reads, over the pool (index.ts composes them; backfillHistory is a flow). */
export const leaderboardReads = { readBoard, readStanding, historyBackfillRemaining };
