import { assertInvariant } from "../../domain/errors.js";
import type { AddressKey } from "../../domain/address.js";
import { StoreUnavailableError } from "../errors.js";
import { finalizeErrorText } from "../finalize-retry.js";
import type { FinalizedBatch, FinalizeFailure } from "../store.js";
import { finalizeTransition } from "../../domain/transitions.js";
import { changeBalance, creditRecipients } from "./accounts.js";
import { fairDueBatches, readBatchBySeq, recordFinalizeFailure, setStatus, toBatch } from "./batches.js";
import { toNumber, toStoreError, type SqliteDb } from "./db.js";
import { appendEvents } from "./events.js";

/**
 * Longest one finalizer transaction may hold the writer (and, better-sqlite3 being synchronous,
 * the event loop). Several batches per commit: each batch's 2000 recipient upserts dirty pages
 * all over the accounts B-tree, and writing them once per group instead of once per batch made
 * finalization 2.5× faster (docs/performance.md); the budget keeps request latency bounded.
 * Measured (bench, 8 connections): 15 ms gave 360,441 finalized/s, 30 ms 398,580–405,218, while the
 * p99 of a full-batch PUT at half the peak rate stayed 28.5–40.5 ms (target ≤ 50 ms).
 */
export const FINALIZE_TRANSACTION_BUDGET_MS = 30;

/**
 * Per database, the contract whose batch was attempted last: the next claim's round starts after
 * it (batches.ts fairDueBatches), so rounds cut short by the time budget resume instead of
 * serving the same contracts again. Memory only: after a restart rounds start at the lowest
 * address, which is as fair.
 */
const lastAttemptedContract = new WeakMap<SqliteDb, string>();

type Attempt = { kind: "finalized"; batch: FinalizedBatch } | { kind: "failed"; failure: FinalizeFailure } | { kind: "skipped" };

/**
 * Finalizes claimable batches in fair order (batches.ts fairDueBatches) in one transaction until
 * the time budget is spent. Each batch is applied inside its own savepoint: one that fails is
 * rolled back alone and its failure is stored in the same commit as the others' finalizations,
 * so it never undoes them and is not claimed again before its backoff. A database that cannot
 * write (toStoreError: full disk, read-only, busy) is not the batch's fault: it fails the call.
 * Failures are reported after the commit, so a reported failure is a stored one.
 */
export function finalizeDue(db: SqliteDb, nowMs: number, limit: number, onFailure?: (failure: FinalizeFailure) => void): FinalizedBatch[] {
  const due = fairDueBatches(db, nowMs, limit, lastAttemptedContract.get(db) ?? "");
  if (due.length === 0) return [];
  const failures: FinalizeFailure[] = [];
  const finalized = db
    .transaction(() => {
      const startedMs = performance.now();
      const done: FinalizedBatch[] = [];
      for (const { seq, contract } of due) {
        const attempt = attemptFinalization(db, seq, nowMs);
        lastAttemptedContract.set(db, contract);
        if (attempt.kind === "finalized") done.push(attempt.batch);
        else if (attempt.kind === "failed") failures.push(attempt.failure);
        if (performance.now() - startedMs >= FINALIZE_TRANSACTION_BUDGET_MS) break;
      }
      return done;
    })
    .immediate();
  for (const failure of failures) onFailure?.(failure);
  return finalized;
}

/** One batch in a savepoint (a nested better-sqlite3 transaction); its failure is stored, not thrown. */
function attemptFinalization(db: SqliteDb, seq: bigint, nowMs: number): Attempt {
  try {
    const batch = db.transaction(() => applyFinalization(db, seq, nowMs))();
    return batch ? { kind: "finalized", batch } : { kind: "skipped" };
  } catch (error) {
    if (toStoreError(error) instanceof StoreUnavailableError) throw error;
    const stored = recordFinalizeFailure(db, seq, nowMs, finalizeErrorText(error));
    if (!stored) return { kind: "skipped" };
    return {
      kind: "failed",
      failure: {
        contract: stored.contract as AddressKey,
        batchId: stored.batch_id,
        failures: toNumber(stored.finalize_failures),
        retryAtMs: toNumber(stored.finalize_retry_at_ms),
        error,
      },
    };
  }
}

/** PENDING → FINALIZED for one batch (domain/transitions.ts), sender and recipients updated, its event appended; null if it was not due. */
function applyFinalization(db: SqliteDb, seq: bigint, nowMs: number): FinalizedBatch | null {
  const batch = toBatch(readBatchBySeq(db, seq));
  const transition = finalizeTransition(batch, nowMs);
  if (transition.kind === "not_due" || !setStatus(db, seq, "PENDING", "FINALIZED", nowMs)) return null;
  changeBalance(db, batch.contract, batch.pointType, transition.senderChange);
  const recipients = creditRecipients(db, Number(seq), batch.pointType);
  assertInvariant(recipients === batch.transferCount, `batch ${batch.batchId} has ${recipients} stored transfers`);
  appendEvents(db, transition.events);
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    transferCount: batch.transferCount,
    finalizeAtMs: batch.finalizeAtMs,
    finalizedAtMs: nowMs,
  };
}
