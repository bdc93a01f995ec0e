import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import type { BoardRow, WindowBounds } from "../../domain/leaderboard.js";
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
  WindowBoardWork,
  WindowBoardsPort,
  WindowOfBatches,
} from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import { BATCH_COLUMNS, type BatchRow } from "./batches.js";
import { toNumber, toStoreError, toUnits, transaction, tryTransactionLock, type PgPool, type Queryable } from "./db.js";

/**
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
const RECIPIENTS_SQL = `SELECT to_address AS address, sum(amount_units) AS units
   FROM transfers WHERE seq = $1 GROUP BY to_address HAVING sum(amount_units) > 0`;

/**
 * domain/leaderboard.ts rankBandOf of a NUMERIC(40,0) amount (> 0): its digits × 100 plus its
 * first two digits. The one SQL form of the rule in this adapter (the passes' bands, verify.ts),
 * pinned to rankBandOf by test/leaderboard-bands.test.ts.
 */
export function rankBandSql(units: string): string {
  return `(length(${units}::text) * 100 + left(${units}::text, 2)::int)`;
}

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
 * Recipients (a CTE `recipients` of (k: the board's key, address: 20 bytes, units)) onto a table
 * set's boards, as CTEs of one statement: their entries grow (or are created), and each moves from
 * the band of its old amount to the band of its new one. The old amount is the new one (RETURNING)
 * less what was added: an entry only exists with points, so an old amount of 0 is an entry just
 * created (no band to leave). A band's change is netted first (a row is changed once per
 * statement): gains are upserted, losses subtracted from rows that exist. `upserted` has a row per
 * entry touched. Written once for the all-time boards, the window boards, a batch or a pass.
 */
function rankSql({ entries, bands, key }: BoardTables, recipients: string): string {
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
async function addToTables(db: Queryable, tables: BoardTables, key: number, batch: StoredBatch): Promise<number> {
  const recipients = `SELECT $2::bigint AS k, ${addressBytes("address")} AS address, units FROM (${RECIPIENTS_SQL}) summed`;
  const { rows } = await db.query<{ ranked: string }>({
    name: `pl-lb-add-to-${tables.name}`,
    text: `WITH ${rankSql(tables, recipients)} SELECT count(*) AS ranked FROM upserted`,
    values: [batch.seq, key],
  });
  return Number(rows[0]!.ranked);
}

// ---- The projection ----------------------------------------------------------------------------

/** Key of the transaction advisory lock a pass applies under (claimApplier); beside db.ts's migration lock, unique to this service. */
const PROJECTION_LOCK_KEY = "7061221915";

async function readFence(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ fence_ms: string }>({
    name: "pl-pj-read-fence",
    text: "SELECT fence_ms FROM projection_state WHERE id = 1 FOR SHARE",
  });
  return toNumber(rows[0]!.fence_ms);
}

async function enqueue(db: Queryable, seq: string, finalizedAtMs: number): Promise<void> {
  await db.query({
    name: "pl-pj-enqueue",
    text: "INSERT INTO projection_queue (finalized_at_ms, seq) VALUES ($1, $2)",
    values: [finalizedAtMs, seq],
  });
}

/**
 * The state row locked FOR UPDATE first: it waits for the finalizations that read the fence
 * (FOR SHARE) and are still in flight, so the head read after it (a new snapshot) holds them all.
 */
async function queueHead(db: Queryable, limit: number): Promise<{ throughMs: number; head: number[] }> {
  const state = await db.query<{ through_ms: string }>({
    name: "pl-pj-lock-state",
    text: "SELECT through_ms FROM projection_state WHERE id = 1 FOR UPDATE",
  });
  const head = await db.query<{ finalized_at_ms: string }>({
    name: "pl-pj-queue-head",
    text: "SELECT finalized_at_ms FROM projection_queue ORDER BY finalized_at_ms, seq LIMIT $1",
    values: [limit],
  });
  return { throughMs: toNumber(state.rows[0]!.through_ms), head: head.rows.map((row) => toNumber(row.finalized_at_ms)) };
}

async function raiseFence(db: Queryable, fenceMs: number): Promise<void> {
  await db.query({
    name: "pl-pj-raise-fence",
    text: "UPDATE projection_state SET fence_ms = GREATEST(fence_ms, $1) WHERE id = 1",
    values: [fenceMs],
  });
}

/** Tried, not waited for: an instance that finds another applying skips its step (the other applies the queue). */
async function claimApplier(db: Queryable): Promise<boolean> {
  return tryTransactionLock(db, "pl-pj-claim", PROJECTION_LOCK_KEY);
}

/** Tried in the cut's transaction too: while another instance applies, this one's step cuts nothing (measured: docs/performance.md). */
async function applierFree(db: Queryable): Promise<boolean> {
  return tryTransactionLock(db, "pl-pj-cut-claim", PROJECTION_LOCK_KEY);
}

/** The queue's rows by throughMs, deleted and returned with their batches; the time is the queue's (the flow checks the batch's against it). */
async function takeQueued(db: Queryable, throughMs: number): Promise<QueuedBatch[]> {
  const { rows } = await db.query<BatchRow & { queued_at_ms: string }>({
    name: "pl-pj-take-queued",
    text: `WITH taken AS (DELETE FROM projection_queue WHERE finalized_at_ms <= $1 RETURNING finalized_at_ms AS queued_at_ms, seq)
           SELECT ${BATCH_COLUMNS}, queued_at_ms FROM taken JOIN batches USING (seq) ORDER BY queued_at_ms, seq`,
    values: [throughMs],
  });
  return rows.map((row) => ({ batch: toStoredBatch(row, toUnits(row.total_units)), finalizedAtMs: toNumber(row.queued_at_ms) }));
}

/** A pass's batches of one day as statement parameters ($1 seqs, $2 their boards, $3 their finalization times). */
interface PassBatches {
  seqs: string[];
  boards: number[];
  atMs: number[];
}

/**
 * The pass's recipients: per (board, address as text), the points its batches' transfers sent it,
 * and the first and last finalization times of the batches that sent it any (received_daily's).
 */
const PASS_SUMS_SQL = `pass_batches AS (SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS p(seq, board, at_ms)),
  sums AS (
    SELECT p.board, t.to_address AS address, sum(t.amount_units) AS units, min(p.at_ms) AS first_at_ms, max(p.at_ms) AS last_at_ms
    FROM pass_batches p JOIN transfers t ON t.seq = p.seq
    WHERE t.seq = ANY($1::bigint[]) AND t.amount_units > 0
    GROUP BY p.board, t.to_address
  )`;

/**
 * The boards of the pass's batches, each counting its batches (finalized_batches), created when
 * missing: the insert only for those (an `INSERT … ON CONFLICT DO NOTHING` of every board would
 * draw an identity value each pass). Only passes create boards, one at a time (claimApplier).
 */
async function boardsOfPass(db: Queryable, queued: readonly QueuedBatch[]): Promise<Map<string, number>> {
  const counts = new Map<string, { contract: string; pointType: string; n: number }>();
  for (const { batch } of queued) {
    const key = `${batch.contract} ${batch.pointType}`;
    counts.set(key, { contract: batch.contract, pointType: batch.pointType, n: (counts.get(key)?.n ?? 0) + 1 });
  }
  const wanted = [...counts.values()];
  const { rows } = await db.query<{ board: number; contract: string; point_type: string }>({
    name: "pl-pj-boards",
    text: `WITH wanted AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) AS w(contract, point_type, n)),
           found AS (
             UPDATE boards b SET finalized_batches = b.finalized_batches + w.n FROM wanted w
             WHERE b.contract = w.contract AND b.point_type = w.point_type RETURNING b.board, b.contract, b.point_type
           ),
           created AS (
             INSERT INTO boards (contract, point_type, finalized_batches)
             SELECT contract, point_type, n FROM wanted w
             WHERE NOT EXISTS (SELECT 1 FROM boards b WHERE b.contract = w.contract AND b.point_type = w.point_type)
             ORDER BY contract, point_type
             ON CONFLICT (contract, point_type) DO NOTHING
             RETURNING board, contract, point_type
           )
           SELECT board, contract, point_type FROM found UNION ALL SELECT board, contract, point_type FROM created`,
    values: [wanted.map((w) => w.contract), wanted.map((w) => w.pointType), wanted.map((w) => w.n)],
  });
  assertInvariant(rows.length === wanted.length, `a pass found or created ${rows.length} boards for ${wanted.length}`);
  return new Map(rows.map((row) => [`${row.contract} ${row.point_type}`, row.board]));
}

/** The pass's sums onto the all-time boards (rankSql); how many (board, address) entries it touched. */
async function applyToBoards(db: Queryable, pass: PassBatches): Promise<number> {
  const recipients = `SELECT board AS k, ${addressBytes("address")} AS address, units FROM sums`;
  const { rows } = await db.query<{ ranked: string }>({
    name: "pl-pj-boards-apply",
    text: `WITH ${PASS_SUMS_SQL}, ${rankSql(BOARD_TABLES, recipients)} SELECT count(*) AS ranked FROM upserted`,
    values: [pass.seqs, pass.boards, pass.atMs],
  });
  return Number(rows[0]!.ranked);
}

/** The pass's sums into received_daily: the day's row of each (address, point type, contract) grows, its first and last times widen. */
async function applyToReceipts(db: Queryable, pass: PassBatches, dayMs: number): Promise<void> {
  await db.query({
    name: "pl-pj-receipts-apply",
    text: `WITH ${PASS_SUMS_SQL}
           INSERT INTO received_daily AS d (address, point_type, day_ms, contract, first_at_ms, last_at_ms, amount_units)
           SELECT s.address, bo.point_type, $4::bigint, bo.contract, s.first_at_ms, s.last_at_ms, s.units
           FROM sums s JOIN boards bo ON bo.board = s.board ORDER BY s.address, bo.point_type, bo.contract
           ON CONFLICT (address, point_type, day_ms, contract) DO UPDATE SET amount_units = d.amount_units + excluded.amount_units,
             first_at_ms = least(d.first_at_ms, excluded.first_at_ms), last_at_ms = greatest(d.last_at_ms, excluded.last_at_ms)`,
    values: [pass.seqs, pass.boards, pass.atMs, dayMs],
  });
}

/**
 * The kept window boards of the pass's boards whose window holds the day and that were asked for
 * before the pass's first batch of their board finalized (the window job adds the older ones),
 * locked (in window_id order) before any of their entries is written: a window job's step holding
 * one is waited for, never the other way round.
 */
async function windowsOfPass(db: Queryable, pass: PassBatches, dayMs: number): Promise<{ windows: string[]; boards: number[] }> {
  const { rows } = await db.query<{ window_id: string; board: number }>({
    name: "pl-pj-windows",
    text: `SELECT w.window_id, w.board FROM window_boards w
           JOIN (SELECT board, min(at_ms) AS first_ms FROM unnest($1::int[], $2::bigint[]) AS p(board, at_ms) GROUP BY board) f
             ON f.board = w.board
           WHERE w.state <> 'dropping' AND w.from_ms <= $3 AND w.to_ms > $3 AND w.built_through_ms < f.first_ms
           ORDER BY w.window_id FOR NO KEY UPDATE OF w`,
    values: [pass.boards, pass.atMs, dayMs],
  });
  return { windows: rows.map((row) => row.window_id), boards: rows.map((row) => row.board) };
}

/** The pass's sums onto those window boards (rankSql), its batches into their window_batches, and their counts. */
async function applyToWindows(db: Queryable, pass: PassBatches, dayMs: number): Promise<void> {
  const { windows, boards } = await windowsOfPass(db, pass, dayMs);
  if (windows.length === 0) return;
  const recipients = `SELECT w.window_id AS k, ${addressBytes("s.address")} AS address, s.units FROM sums s JOIN targets w ON w.board = s.board`;
  await db.query({
    name: "pl-pj-windows-apply",
    text: `WITH ${PASS_SUMS_SQL},
           targets AS (SELECT * FROM unnest($4::bigint[], $5::int[]) AS w(window_id, board)),
           ${rankSql(WINDOW_TABLES, recipients)},
           held AS (
             INSERT INTO window_batches (window_id, seq) SELECT w.window_id, p.seq FROM targets w JOIN pass_batches p ON p.board = w.board
             RETURNING window_id
           ),
           counted AS (
             UPDATE window_boards wb SET batches = wb.batches + c.n FROM (SELECT window_id, count(*) AS n FROM held GROUP BY window_id) c
             WHERE wb.window_id = c.window_id RETURNING 1
           )
           SELECT count(*) FROM counted`,
    values: [pass.seqs, pass.boards, pass.atMs, windows, boards],
  });
}

/**
 * The pass's batches of one UTC day (all its batches but under two instances' passes): each
 * statement runs once over all of them, so a recipient paid by many batches is written once per
 * read model. Returns how many (board, address) entries the all-time boards had touched.
 */
async function applyBatches(db: Queryable, queued: readonly QueuedBatch[], dayMs: number): Promise<number> {
  if (queued.length === 0) return 0;
  const boards = await boardsOfPass(db, queued);
  const pass: PassBatches = {
    seqs: queued.map(({ batch }) => batch.seq),
    boards: queued.map(({ batch }) => boards.get(`${batch.contract} ${batch.pointType}`)!),
    atMs: queued.map(({ finalizedAtMs }) => finalizedAtMs),
  };
  const entries = await applyToBoards(db, pass);
  await applyToReceipts(db, pass, dayMs);
  await applyToWindows(db, pass, dayMs);
  return entries;
}

/** Moves through (and the fence with it, never below through) forward only. */
async function advanceThrough(db: Queryable, throughMs: number): Promise<void> {
  await db.query({
    name: "pl-pj-advance",
    text: "UPDATE projection_state SET through_ms = GREATEST(through_ms, $1), fence_ms = GREATEST(fence_ms, $1) WHERE id = 1",
    values: [throughMs],
  });
}

/** The projection's tables for the flows (src/ledger/projection.ts, finalize.ts), over pg. */
export const projection = {
  readFence,
  enqueue,
  queueHead,
  raiseFence,
  applierFree,
  claimApplier,
  takeQueued,
  applyBatches,
  advanceThrough,
} satisfies ProjectionPort<Queryable, "async">;

/** The projection's through and how many batches are queued, in one statement. */
export async function projectionState(pool: Queryable): Promise<ProjectionState> {
  const { rows } = await pool.query<{ through_ms: string; queued: string; oldest: string | null }>({
    name: "pl-pj-state",
    text: `SELECT through_ms, (SELECT count(*) FROM projection_queue) AS queued, (SELECT min(finalized_at_ms) FROM projection_queue) AS oldest
           FROM projection_state WHERE id = 1`,
  });
  const oldest = rows[0]!.oldest;
  return {
    throughMs: toNumber(rows[0]!.through_ms),
    queued: Number(rows[0]!.queued),
    oldestQueuedMs: oldest === null ? null : toNumber(oldest),
  };
}

// ---- Window boards (the window job's steps) ---------------------------------------------------

interface WindowWorkRow {
  window_id: string;
  contract: string;
  point_type: string;
  from_ms: string;
  to_ms: string;
  state: "building" | "dropping";
  built_through_ms: string;
}

/**
 * The window's FINALIZED batches (batches_finalized), over a statement's contract, point type and
 * bounds: one definition for the job's batches and a read's, so they agree.
 */
function finalizedInWindowSql(alias: string, contract: string, pointType: string, fromMs: string, toMs: string): string {
  return `${alias}.contract = ${contract} AND ${alias}.point_type = ${pointType} AND ${alias}.status = 'FINALIZED'
    AND ${alias}.finalized_at_ms >= ${fromMs} AND ${alias}.finalized_at_ms < ${toMs}`;
}

/**
 * A window board to drop (first: dropping frees space and unblocks nothing else), or one being
 * built (a ready one stays current through the passes), locked for this transaction; rows
 * another instance's step (or a pass) holds are skipped (SKIP LOCKED), so several instances work
 * on different ones.
 */
async function takeWindowWork(db: Queryable): Promise<WindowBoardWork | null> {
  const { rows } = await db.query<WindowWorkRow>({
    name: "pl-lb-take-window-work",
    text: `SELECT w.window_id, b.contract, b.point_type, w.from_ms, w.to_ms, w.state, w.built_through_ms
           FROM window_boards w JOIN boards b ON b.board = w.board
           WHERE w.state IN ('dropping', 'building')
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
    builtThroughMs: toNumber(row.built_through_ms),
  };
}

/**
 * Up to `limit` FINALIZED batches of the work's window finalized by the time it was asked for
 * (builtThroughMs; the passes add the later ones) that its window board does not hold
 * (window_batches), in seq order.
 */
async function windowBatches(db: Queryable, work: WindowBoardWork, limit: number): Promise<StoredBatch[]> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-lb-window-batches",
    text: `SELECT ${BATCH_COLUMNS} FROM batches f
           WHERE ${finalizedInWindowSql("f", "$1", "$2", "$3", "$4")} AND f.finalized_at_ms <= $7
             AND NOT EXISTS (SELECT 1 FROM window_batches x WHERE x.window_id = $5 AND x.seq = f.seq)
           ORDER BY f.seq LIMIT $6`,
    values: [work.contract, work.pointType, work.fromMs, work.toMs, work.window, limit, work.builtThroughMs],
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

/** Counts `added` more batches held; once caught up, the window board is ready (read from, kept current by the passes). */
async function advanceWindow(db: Queryable, work: WindowBoardWork, added: number, caughtUp: boolean): Promise<void> {
  const { rowCount } = await db.query({
    name: "pl-lb-advance-window",
    text: `UPDATE window_boards SET batches = batches + $2, state = CASE WHEN $3::boolean THEN 'ready' ELSE state END
           WHERE window_id = $1`,
    values: [work.window, added, caughtUp],
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

/** The window boards for the window job's flow (src/ledger/projection.ts buildWindowBoards), over pg. */
export const windowBoards = {
  takeWindowWork,
  windowBatches,
  addToWindow,
  advanceWindow,
  dropWindowEntries,
} satisfies WindowBoardsPort<Queryable, "async">;

// ---- Reads (the primitives of src/ledger/leaderboards.ts) ------------------------------------

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
  await db.query({ name: "pl-lb-wait-applier", text: "SELECT pg_advisory_xact_lock($1::bigint)", values: [PROJECTION_LOCK_KEY] });
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
 * a window board's request one READ COMMITTED transaction of its own.
 */
export function postgresLeaderboardReads(pool: PgPool): LeaderboardReadsOf<Queryable, "async"> {
  return {
    mode: "async",
    port: leaderboardReads,
    snapshot: (work) => transaction(pool, work, SNAPSHOT),
    transact: (work) => transaction(pool, work),
    isUnavailable: (error) => toStoreError(error) instanceof StoreUnavailableError,
  };
}
