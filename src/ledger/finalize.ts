import { assertInvariant } from "../domain/errors.js";
import { finalizationTimeMs } from "../domain/projection.js";
import { finalizeTransition } from "../domain/transitions.js";
import { finalizeErrorText } from "../domain/finalize-retry.js";
import type { DueBatch, FinalizedBatch, FinalizeFailure } from "../store/ports/batches.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { checkedWrite } from "./balance.js";
import { inFinalizeAttempt, inFinalizePass, io, readWith, type Flow } from "./flow.js";

/**
 * Per database, the contract whose batch was attempted last: the next ranking starts the round
 * after it (fairDueBatches), so passes cut short resume instead of serving the same contracts
 * again. Memory only and per process: after a restart rounds start at the lowest address, and
 * every PostgreSQL instance goes round on its own, which is as fair.
 */
const lastAttemptedContract = new WeakMap<object, string>();

type Attempt = { kind: "finalized"; batch: FinalizedBatch } | { kind: "failed"; failure: FinalizeFailure } | { kind: "skipped" };

/**
 * Finalizes claimable batches in fair order (BatchesStore.finalizeDue): ranks them once, then
 * attempts each atomically on its own inside one pass (SQLite: savepoints of one write
 * transaction, until its time budget is spent; PostgreSQL: a transaction each, several instances
 * sharing one ranking's work through claimBatch). A batch that fails is rolled back alone and its
 * failure stored, so it is not claimed again before its backoff; a database failure fails the
 * call. Failures are reported once the pass is over, so a reported failure is a stored one.
 */
export async function finalizeDue<Db>(
  database: LedgerDatabase<Db>,
  nowMs: number,
  limit: number,
  onFailure?: (failure: FinalizeFailure) => void,
): Promise<FinalizedBatch[]> {
  const after = lastAttemptedContract.get(database) ?? "";
  // Ranked before the pass: a pass that would find nothing opens no (SQLite: write) transaction.
  const due = await readWith(database, function* (ports, db) {
    return yield* io(ports.batches.fairDueBatches(db, nowMs, limit, after));
  });
  if (due.length === 0) return [];
  const failures: FinalizeFailure[] = [];
  const finalized = await inFinalizePass(database, (pass) => passFlow(database, pass, due, nowMs, failures));
  for (const failure of failures) onFailure?.(failure);
  return finalized;
}

function* passFlow<Db>(
  database: LedgerDatabase<Db>,
  pass: Db,
  due: readonly DueBatch[],
  nowMs: number,
  failures: FinalizeFailure[],
): Flow<FinalizedBatch[]> {
  const startedMs = performance.now();
  const done: FinalizedBatch[] = [];
  for (const { seq, contract } of due) {
    const attempt = yield* attemptFlow(database, pass, seq, nowMs);
    lastAttemptedContract.set(database, contract);
    if (attempt.kind === "finalized") done.push(attempt.batch);
    else if (attempt.kind === "failed") failures.push(attempt.failure);
    if (performance.now() - startedMs >= database.finalizePassBudgetMs) break;
  }
  return done;
}

/**
 * One batch: its failure is stored on it in the pass (after the attempt rolled back), not thrown.
 * On PostgreSQL another instance may claim it between the two and try once more: one wasted
 * attempt, never a double finalization (the status guard).
 */
function* attemptFlow<Db>(database: LedgerDatabase<Db>, pass: Db, seq: string, nowMs: number): Flow<Attempt> {
  try {
    const batch = yield* io(inFinalizeAttempt(database, pass, (ports, db) => finalizeOne(ports, db, seq, nowMs)));
    return batch ? { kind: "finalized", batch } : { kind: "skipped" };
  } catch (error) {
    if (database.isDatabaseFailure(error)) throw error;
    const stored = yield* io(database.ports.batches.recordFinalizeFailure(pass, seq, nowMs, finalizeErrorText(error)));
    return stored ? { kind: "failed", failure: { ...stored, error } } : { kind: "skipped" };
  }
}

/**
 * PENDING → FINALIZED for one claimed batch (domain/transitions.ts finalizeTransition); null when
 * it is no longer claimable. The same three assertions on every database: the status changed
 * under the claim, the sender's change passes the domain's balance check, and the settlement
 * changed the sender and one account per stored transfer. (Recipients only gain: their available
 * cannot fall, so no check of theirs could fail that the sender's does not cover.) The read models
 * get one queue row (src/ledger/projection.ts applies it after the commit), and the batch is
 * stamped after the projection's fence (domain/projection.ts), so no answered `through` misses it.
 */
function* finalizeOne<Db>(ports: LedgerPorts<Db>, db: Db, seq: string, nowMs: number): Flow<FinalizedBatch | null> {
  const stored = yield* io(ports.batches.claimBatch(db, seq, nowMs));
  if (!stored) return null;
  const finalizedAtMs = finalizationTimeMs(nowMs, yield* io(ports.projection.readFence(db)));
  const transition = finalizeTransition(stored, finalizedAtMs);
  if (transition.kind === "not_due") return null;
  const changed = yield* io(ports.batches.setStatus(db, seq, "PENDING", "FINALIZED", finalizedAtMs, null));
  assertInvariant(changed, `batch ${stored.batchId} changed under its claim`);
  const sender = yield* io(ports.accounts.readBalance(db, stored.contract, stored.pointType));
  const accounts = yield* io(ports.accounts.settleBatch(db, stored, checkedWrite(sender, transition.senderChange)));
  assertInvariant(
    accounts === stored.transferCount + 1,
    `batch ${stored.batchId} has ${accounts - 1} stored transfers: settled ${accounts} accounts for ${stored.transferCount} transfers`,
  );
  yield* io(ports.projection.enqueue(db, seq, finalizedAtMs));
  yield* io(ports.events.appendEvents(db, transition.events));
  return {
    contract: stored.contract,
    batchId: stored.batchId,
    transferCount: stored.transferCount,
    finalizeAtMs: stored.finalizeAtMs,
    finalizedAtMs,
  };
}
