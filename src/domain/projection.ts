import { DAY_MS, utcDayOf } from "./leaderboard.js";
import { PROJECTION_IDLE_ADVANCE_MS } from "./limits.js";

/**
 * The read models' projection (DESIGN.md "Read models are projections"): the all-time boards,
 * the window boards and the daily receipts behind `asOf` are applied after the finalization, from
 * a queue the finalization writes one row per batch to (its finalizedAt and seq). A pass applies
 * the queue's head in (finalizedAt, seq) order and then stands at `through`: every batch
 * finalized at or before it is applied, each whole, and none after it. Two rules make that exact
 * (src/ledger/projection.ts):
 * - the fence: before a pass applies up to a time, it raises the fence to it, and a finalization
 *   that commits later is stamped after the fence (finalizationTimeMs): a batch can never
 *   finalize at a time the projection already answered for;
 * - the cut (projectionCut): a pass ends between two different finalization times, never inside
 *   a tie, and inside one UTC day, so its receipts land in one received_daily day and every window
 *   (whole UTC days) holds all of its batches or none.
 */

/** When a finalization that began at `nowMs` is stamped: after the fence, so a `through` already answered stays exact. */
export function finalizationTimeMs(nowMs: number, fenceMs: number): number {
  return Math.max(nowMs, fenceMs + 1);
}

/**
 * How far a pass applies, from the queue's head: up to `limit + 1` finalization times in order
 * (the one past `limit` says whether more are queued). Returns the pass's `through`, or null when
 * there is nothing to do:
 * - the head's batches up to `limit`, cut back to the last time that differs from the next
 *   queued one (a tie larger than `limit` is taken whole) and to the end of the first one's UTC day;
 * - when that takes every queued batch, `through` goes on to `nowMs`: nothing else is queued, and
 *   whatever finalizes next is stamped after the fence;
 * - an empty queue moves `through` to `nowMs` once it is PROJECTION_IDLE_ADVANCE_MS behind
 *   (an idle ledger's answers say they are current without a write per poll).
 */
export function projectionCut(head: readonly number[], limit: number, throughMs: number, nowMs: number): number | null {
  if (head.length === 0) return nowMs - throughMs >= PROJECTION_IDLE_ADVANCE_MS ? nowMs : null;
  const first = head[0]!;
  const dayEndMs = utcDayOf(first) + DAY_MS - 1;
  const taken = head.slice(0, limit);
  const next = head.length > limit ? head[limit]! : null;
  let cut = taken[taken.length - 1]!;
  if (next !== null && next === cut) {
    // Inside a tie: stop before it, unless the tie starts the pass (then all of it, whatever its size).
    const before = taken.filter((at) => at < cut);
    cut = before.length > 0 ? before[before.length - 1]! : cut;
  }
  cut = Math.min(cut, dayEndMs);
  const drained = next === null && head[head.length - 1]! <= cut;
  return drained ? Math.max(cut, nowMs, throughMs) : Math.max(cut, throughMs);
}
