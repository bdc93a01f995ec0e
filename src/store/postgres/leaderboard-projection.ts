import { assertInvariant } from "../../domain/errors.js";
import type { ProjectionPort, ProjectionState, QueuedBatch } from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import { BATCH_COLUMNS, type BatchRow } from "./batches.js";
import { toNumber, toUnits, tryTransactionLock, type Queryable } from "./db.js";
import { BOARD_TABLES, WINDOW_TABLES, addressBytes, rankSql } from "./leaderboard-tables.js";

/** The projection's passes over PostgreSQL (ProjectionPort): the fence, the queue, the applier; see leaderboard-tables.ts for the concurrency. */

/** Key of the transaction advisory lock a pass applies under (claimApplier); beside db.ts's migration lock, unique to this service. */
export const PROJECTION_LOCK_KEY = "7061221915";

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
