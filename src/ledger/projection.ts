import { assertInvariant } from "../domain/errors.js";
import { inWindow, utcDayOf } from "../domain/leaderboard.js";
import { WINDOW_DROP_ENTRIES_PER_BATCH } from "../domain/limits.js";
import { projectionCut } from "../domain/projection.js";
import type { LedgerDatabase } from "../store/ports/ledger.js";
import type { ProjectionCut, ProjectionStep } from "../store/ports/leaderboards.js";
import { inTransaction, io } from "./flow.js";

export const NOTHING_APPLIED: ProjectionStep = { applied: 0, transfers: 0, throughMs: null, finalizedAtMs: [], more: false };

/**
 * One step of the projection (domain/projection.ts): the read models catch up with the
 * finalizations, after them. Two transactions:
 * 1. the cut (cutProjection): the queue's head is read under the projection's lock (PostgreSQL:
 *    the state row FOR UPDATE, which waits for the finalizations in flight, each holding it FOR
 *    SHARE since it read the fence) and the fence is raised to the cut, so nothing can finalize at
 *    or before it later;
 * 2. the pass (passProjection): the batches finalized by the cut and not applied yet are applied,
 *    and through moves to the cut, in one transaction (a crash loses and doubles nothing); on
 *    PostgreSQL one instance at a time (an advisory lock, tried: the others skip this step). On
 *    SQLite the pass runs on the projection file's own connection, in a worker thread
 *    (src/ledger/sqlite-projection.ts), after the cut has committed on the ledger's writer.
 * ledgerOperations (./index.ts) runs the cut here and the pass where the adapter's ProjectionRunner says.
 */
/** The step's first transaction, on the ledger's writer: the cut, and the fence raised to it (null: nothing to do). */
export async function cutProjection<Db>(database: LedgerDatabase<Db>, limit: number, nowMs: number): Promise<ProjectionCut | null> {
  return inTransaction(database, function* (ports, db) {
    if (!(yield* io(ports.projection.applierFree(db)))) return null;
    const { throughMs, head } = yield* io(ports.projection.queueHead(db, limit + 1));
    const cutMs = projectionCut(head, limit, throughMs, nowMs);
    if (cutMs === null) return null;
    yield* io(ports.projection.raiseFence(db, cutMs));
    // A full head may go on past a tie it ended in: one step more finds out.
    return { cutMs, more: head.length > limit || head.some((atMs) => atMs > cutMs) };
  });
}

/** The step's second transaction: the batches queued up to the cut applied, and through moved to it. */
export async function passProjection<Db>(database: LedgerDatabase<Db>, { cutMs: cut, more }: ProjectionCut): Promise<ProjectionStep> {
  return inTransaction(database, function* (ports, db) {
    if (!(yield* io(ports.projection.claimApplier(db)))) return NOTHING_APPLIED;
    const queued = yield* io(ports.projection.takeQueued(db, cut));
    let transfers = 0;
    let recipients = 0;
    for (const day of [...new Set(queued.map(({ finalizedAtMs }) => utcDayOf(finalizedAtMs)))]) {
      const ofDay = queued.filter(({ finalizedAtMs }) => utcDayOf(finalizedAtMs) === day);
      for (const { batch, finalizedAtMs } of ofDay) {
        assertInvariant(
          batch.status === "FINALIZED" && batch.finalizedAtMs === finalizedAtMs && finalizedAtMs <= cut,
          `queued batch ${batch.batchId} is ${batch.status} at ${batch.finalizedAtMs}, not FINALIZED at ${finalizedAtMs} ≤ ${cut}`,
        );
        transfers += batch.transferCount;
      }
      recipients += yield* io(ports.projection.applyBatches(db, ofDay, day));
    }
    // Recipients with nothing (a zero transfer, where a point type's minimum is 0) are not ranked:
    // a pass never ranks more (board, address) entries than its batches have transfers.
    assertInvariant(recipients <= transfers, `a pass ranked ${recipients} entries for ${transfers} transfers`);
    yield* io(ports.projection.advanceThrough(db, cut));
    return { applied: queued.length, transfers, throughMs: cut, finalizedAtMs: queued.map(({ finalizedAtMs }) => finalizedAtMs), more };
  });
}

/**
 * One bounded step of the window job (src/worker/window-boards.ts): drops up to `limit` ×
 * WINDOW_DROP_ENTRIES_PER_BATCH entries of a window board being dropped, or adds up to `limit`
 * FINALIZED batches of its window finalized by the time it was asked for (later ones come with
 * the projection's passes), and marks it ready when none is left. One transaction: the batches,
 * the entries and the count move together (src/store/ports/leaderboards.ts). Returns 0 when
 * there was nothing to do, else `limit`.
 */
export async function buildWindowBoards<Db>(database: LedgerDatabase<Db>, limit: number): Promise<number> {
  return inTransaction(database, function* (ports, db) {
    const work = yield* io(ports.windowBoards.takeWindowWork(db));
    if (work === null) return 0;
    if (work.state === "dropping") {
      yield* io(ports.windowBoards.dropWindowEntries(db, work.window, limit * WINDOW_DROP_ENTRIES_PER_BATCH));
      return limit;
    }
    const batches = yield* io(ports.windowBoards.windowBatches(db, work, limit));
    assertInvariant(batches.length <= limit, `window ${work.window}: ${batches.length} batches for a step of ${limit}`);
    const window = { fromDay: null, toDay: null, fromMs: work.fromMs, toMs: work.toMs };
    for (const batch of batches) {
      assertInvariant(
        batch.status === "FINALIZED" &&
          batch.finalizedAtMs !== null &&
          inWindow(window, batch.finalizedAtMs) &&
          batch.finalizedAtMs <= work.builtThroughMs,
        `window ${work.window}: batch ${batch.batchId} (${batch.status}) is not a FINALIZED batch of the window by ${work.builtThroughMs}`,
      );
      yield* io(ports.windowBoards.addToWindow(db, work.window, batch));
    }
    yield* io(ports.windowBoards.advanceWindow(db, work, batches.length, batches.length < limit));
    return limit;
  });
}
