import { assertInvariant } from "../domain/errors.js";
import { inWindow } from "../domain/leaderboard.js";
import { WINDOW_DROP_ENTRIES_PER_BATCH } from "../domain/limits.js";
import type { StoredBatch } from "../store/ports/batches.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { inTransaction, io, type Flow } from "./flow.js";

/**
 * Leaderboards and history (src/store/ports/leaderboards.ts), kept by the flows: a FINALIZED
 * batch is added to its contract's board and to its recipients' received_daily in the
 * transaction that finalizes it (finalize.ts finalizeOne, right after the settlement), so a board
 * never shows a batch that did not finalize, nor misses one that did.
 */
export function* recordFinalizedBatch<Db>(ports: LedgerPorts<Db>, db: Db, batch: StoredBatch, finalizedAtMs: number): Flow<void> {
  const recipients = yield* io(ports.leaderboards.addToBoard(db, batch));
  // Recipients with nothing (a zero transfer, where a point type's minimum is 0) are not ranked:
  // a batch that moved points ranks at least one address, and never more than it has transfers.
  assertInvariant(
    recipients <= batch.transferCount && recipients > 0 === batch.total > 0n,
    `batch ${batch.batchId} ranked ${recipients} recipients for ${batch.transferCount} transfers totalling ${batch.total} units`,
  );
  yield* io(ports.leaderboards.addReceipts(db, batch, finalizedAtMs));
}

/**
 * One bounded step of the history job (src/worker/history-backfill.ts): takes up to `limit` of
 * the batches that were FINALIZED before history existed off history_backfill and records each,
 * all in one transaction, so a batch is added exactly once (taken and recorded, or neither).
 * Each sender's account is locked first, in (contract, point type) order: a finalization of the
 * same board holds that lock from its settlement on (PostgreSQL), so the two never interleave
 * their board writes. Returns how many batches it added.
 */
export async function backfillHistory<Db>(database: LedgerDatabase<Db>, limit: number): Promise<number> {
  return inTransaction(database, function* (ports, db) {
    const taken = yield* io(ports.leaderboards.takeBackfill(db, limit));
    assertInvariant(taken.length <= limit, `took ${taken.length} batches to backfill, more than the ${limit} asked`);
    const boards = [...new Set(taken.map(({ batch }) => `${batch.contract} ${batch.pointType}`))].sort();
    for (const board of boards) {
      const [contract, pointType] = board.split(" ") as [StoredBatch["contract"], StoredBatch["pointType"]];
      yield* io(ports.accounts.lockBalance(db, contract, pointType));
    }
    for (const { batch, finalizedAtMs } of taken) {
      assertInvariant(batch.status === "FINALIZED", `batch ${batch.batchId} to backfill is ${batch.status}, not FINALIZED`);
      yield* recordFinalizedBatch(ports, db, batch, finalizedAtMs);
    }
    return taken.length;
  });
}

/**
 * One bounded step of the window job (src/worker/window-boards.ts): drops up to `limit` ×
 * WINDOW_DROP_ENTRIES_PER_BATCH entries of a window board being dropped, or adds up to `limit`
 * FINALIZED batches of its window that a window board does not hold yet, and marks it ready when
 * none is left. One transaction: the batches, the entries and the count move together
 * (src/store/ports/leaderboards.ts). Returns 0 when there was nothing to do, else `limit`.
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
        batch.status === "FINALIZED" && batch.finalizedAtMs !== null && inWindow(window, batch.finalizedAtMs),
        `window ${work.window}: batch ${batch.batchId} (${batch.status}) is not a FINALIZED batch of the window`,
      );
      yield* io(ports.windowBoards.addToWindow(db, work.window, batch));
    }
    yield* io(ports.windowBoards.advanceWindow(db, work, batches.length, batches.length < limit));
    return limit;
  });
}
