import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import type { StoredBatch } from "../ports/batches.js";
import type { WindowBoardWork, WindowBoardsPort } from "../ports/leaderboards.js";
import { toStoredBatch } from "../rows.js";
import { BATCH_COLUMNS, type BatchRow } from "./batches.js";
import { toNumber, toUnits, type Queryable } from "./db.js";
import { WINDOW_TABLES, addToTables, finalizedInWindowSql } from "./leaderboard-tables.js";

/** The window job's steps over PostgreSQL (WindowBoardsPort): build, keep and drop window boards. */

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
