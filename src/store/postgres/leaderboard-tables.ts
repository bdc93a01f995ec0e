import type { StoredBatch } from "../ports/batches.js";
import { type Queryable } from "./db.js";

/**
 * The SQL the PostgreSQL leaderboards share: how a board's tables grow (rankSql), the rank band,
 * a window's batches. Their writers are the projection's passes (leaderboard-projection.ts) and
 * the window job (leaderboard-windows.ts); their readers, leaderboards.ts.
 *
 * The leaderboards and received_daily (../ports/leaderboards.ts) over PostgreSQL, written by the
 * projection (src/ledger/projection.ts) after the finalizations. Every write is one set-based
 * statement over the transfers of the batches it applies (`transfers WHERE seq = ANY(…)`), the
 * recipients summed per board and address first: a pass applies each distinct recipient once, and
 * a batch stored without the HTTP layer's check may name an address twice.
 *
 * Concurrency, with several instances on one database:
 * - the fence: a finalization reads projection_state FOR SHARE (readFence) and a pass's first
 *   transaction locks it FOR UPDATE (queueHead) before it raises the fence, so the pass waits for
 *   every finalization that read the old fence, and every later one stamps after the new one;
 * - the applier: a pass's second transaction applies only under a transaction advisory lock,
 *   tried (claimApplier): one pass at a time writes the boards, bands and received_daily, so their
 *   rows need no further order (they are still touched in address and band order);
 * - window boards: a window board's rows are written by the window job's step that holds its
 *   window_boards row (takeWindowWork, FOR UPDATE SKIP LOCKED) and by a pass, which locks the
 *   window_boards rows it adds to before it writes any of their entries (so neither waits for the
 *   other while holding what the other needs); a read's request for one (requestWindowBoard)
 *   waits for the applier's lock, so the through it starts from is one no pass is still moving.
 */

/** A recipient's sum in one batch (only those sent anything are ranked). */
export const RECIPIENTS_SQL = `SELECT to_address AS address, sum(amount_units) AS units
   FROM transfers WHERE seq = $1 GROUP BY to_address HAVING sum(amount_units) > 0`;

/**
 * domain/leaderboard.ts rankBandOf of a NUMERIC(40,0) amount (> 0): its digits × 100 plus its
 * first two digits. The one SQL form of the rule in this adapter (the passes' bands, verify.ts),
 * pinned to rankBandOf by test/leaderboard-bands.test.ts.
 */
export function rankBandSql(units: string): string {
  return `(length(${units}::text) * 100 + left(${units}::text, 2)::int)`;
}

export const BOARD_SQL = "(SELECT board FROM boards WHERE contract = $1 AND point_type = $2)";

/** board_entries.address back as the service's address key (0x and lowercase hex). */
export const ADDRESS_TEXT = "'0x' || encode(e.address, 'hex')";

/** An address key ('0x' and 40 hex digits) as board_entries.address, its 20 bytes. */
export const addressBytes = (text: string) => `decode(substr(${text}, 3), 'hex')`;

/** The tables a board is kept in: the all-time board's (keyed by board) or a window board's (by window_id). */
export interface BoardTables {
  /** In the names of its prepared statements: one name per statement text on a connection. */
  name: string;
  entries: string;
  bands: string;
  key: string;
}

export const BOARD_TABLES: BoardTables = { name: "board", entries: "board_entries", bands: "board_bands", key: "board" };
export const WINDOW_TABLES: BoardTables = { name: "window", entries: "window_entries", bands: "window_bands", key: "window_id" };

/**
 * Recipients (a CTE `recipients` of (k: the board's key, address: 20 bytes, units)) onto a table
 * set's boards, as CTEs of one statement: their entries grow (or are created), and each moves from
 * the band of its old amount to the band of its new one. The old amount is the new one (RETURNING)
 * less what was added: an entry only exists with points, so an old amount of 0 is an entry just
 * created (no band to leave). A band's change is netted first (a row is changed once per
 * statement): gains are upserted, losses subtracted from rows that exist. `upserted` has a row per
 * entry touched. Written once for the all-time boards, the window boards, a batch or a pass.
 */
export function rankSql({ entries, bands, key }: BoardTables, recipients: string): string {
  // The recipients' bytes sort as their text does (fixed length, lowercase hex): address order either way.
  return `recipients AS (${recipients}),
           upserted AS (
             INSERT INTO ${entries} AS e (${key}, address, points_units)
             SELECT k, address, units FROM recipients ORDER BY k, address
             ON CONFLICT (${key}, address) DO UPDATE SET points_units = e.points_units + excluded.points_units
             RETURNING e.${key} AS k, e.address, e.points_units
           ),
           moved AS (
             SELECT u.k, u.points_units AS now_units, u.points_units - r.units AS was_units
             FROM upserted u JOIN recipients r ON r.k = u.k AND r.address = u.address
           ),
           delta AS (
             SELECT k, band, sum(n) AS n FROM (
               SELECT k, ${rankBandSql("now_units")} AS band, 1 AS n FROM moved
               UNION ALL SELECT k, ${rankBandSql("was_units")}, -1 FROM moved WHERE was_units > 0
             ) changes
             GROUP BY k, band HAVING sum(n) <> 0
           ),
           gained AS (
             INSERT INTO ${bands} AS b (${key}, band, entries)
             SELECT k, band, n FROM delta WHERE n > 0 ORDER BY k, band
             ON CONFLICT (${key}, band) DO UPDATE SET entries = b.entries + excluded.entries
             RETURNING 1
           ),
           lost AS (
             UPDATE ${bands} b SET entries = b.entries + delta.n FROM delta
             WHERE delta.n < 0 AND b.${key} = delta.k AND b.band = delta.band
             RETURNING 1
           )`;
}

/** Adds one batch's ($1) recipients to a board of the table set (its key $2: the window job's build); how many were ranked. */
export async function addToTables(db: Queryable, tables: BoardTables, key: number, batch: StoredBatch): Promise<number> {
  const recipients = `SELECT $2::bigint AS k, ${addressBytes("address")} AS address, units FROM (${RECIPIENTS_SQL}) summed`;
  const { rows } = await db.query<{ ranked: string }>({
    name: `pl-lb-add-to-${tables.name}`,
    text: `WITH ${rankSql(tables, recipients)} SELECT count(*) AS ranked FROM upserted`,
    values: [batch.seq, key],
  });
  return Number(rows[0]!.ranked);
}

/**
 * The window's FINALIZED batches (batches_finalized), over a statement's contract, point type and
 * bounds: one definition for the job's batches and a read's, so they agree.
 */
export function finalizedInWindowSql(alias: string, contract: string, pointType: string, fromMs: string, toMs: string): string {
  return `${alias}.contract = ${contract} AND ${alias}.point_type = ${pointType} AND ${alias}.status = 'FINALIZED'
    AND ${alias}.finalized_at_ms >= ${fromMs} AND ${alias}.finalized_at_ms < ${toMs}`;
}
