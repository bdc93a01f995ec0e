import type { AddressKey } from "../../domain/address.js";
import { assertInvariant } from "../../domain/errors.js";
import { finalizeErrorText } from "../finalize-retry.js";
import type { FinalizedBatch, FinalizeFailure } from "../store.js";
import { settleBatch } from "./accounts.js";
import { fairDueBatches, lockClaimableBatch, recordFinalizeFailure, setStatus, toBatch } from "./batches.js";
import { finalizeTransition } from "../../domain/transitions.js";
import { isConnectionError, toNumber, transaction, type PgClient, type PgPool } from "./db.js";
import { appendEvents } from "./events.js";

/**
 * Per pool, the contract whose batch this instance attempted last: its next ranking starts the
 * round after it (batches.ts fairDueBatches). Memory only and per instance: every instance goes
 * round the contracts on its own, which is as fair.
 */
const lastAttemptedContract = new WeakMap<PgPool, string>();

type Attempt = { kind: "finalized"; batch: FinalizedBatch } | { kind: "failed"; failure: FinalizeFailure } | { kind: "skipped" };

/**
 * Ranks the claimable batches once (fair order, batches.ts fairDueBatches), then claims and
 * applies each in its own transaction. A batch another instance holds or has finalized since the
 * ranking is skipped (lockClaimableBatch: SKIP LOCKED and a re-check), so several instances share one
 * ranking's work and none is finalized twice. A batch whose transaction fails rolls back alone;
 * its failure is then stored on it, so no claim takes it again before its backoff and the batches
 * after it go on. A lost connection is the database's failure, not the batch's: it fails the call.
 */
export async function finalizeDue(
  pool: PgPool,
  nowMs: number,
  limit: number,
  onFailure?: (failure: FinalizeFailure) => void,
): Promise<FinalizedBatch[]> {
  const finalized: FinalizedBatch[] = [];
  for (const { seq, contract } of await fairDueBatches(pool, nowMs, limit, lastAttemptedContract.get(pool) ?? "")) {
    const attempt = await attemptFinalization(pool, seq, nowMs);
    lastAttemptedContract.set(pool, contract);
    if (attempt.kind === "finalized") finalized.push(attempt.batch);
    else if (attempt.kind === "failed") onFailure?.(attempt.failure);
  }
  return finalized;
}

/**
 * The failure is stored after the rollback, in a statement of its own: between the two another
 * instance may claim the batch and try it once more. That costs one wasted attempt, never a
 * double finalization (the status guard), so it is not worth holding a savepoint per batch.
 */
async function attemptFinalization(pool: PgPool, seq: string, nowMs: number): Promise<Attempt> {
  try {
    const batch = await transaction(pool, (client) => finalizeOne(client, seq, nowMs));
    return batch ? { kind: "finalized", batch } : { kind: "skipped" };
  } catch (error) {
    if (isConnectionError(error)) throw error;
    const stored = await recordFinalizeFailure(pool, seq, nowMs, finalizeErrorText(error));
    if (!stored) return { kind: "skipped" };
    return {
      kind: "failed",
      failure: {
        contract: stored.contract as AddressKey,
        batchId: stored.batch_id,
        failures: stored.finalize_failures,
        retryAtMs: toNumber(stored.finalize_retry_at_ms),
        error,
      },
    };
  }
}

/**
 * Claims batch `seq` (null if it is no longer claimable), applies the finalize transition
 * (domain/transitions.ts): FINALIZED under the claim's status guard, sender and recipients
 * settled in one statement, its event appended.
 */
async function finalizeOne(client: PgClient, seq: string, nowMs: number): Promise<FinalizedBatch | null> {
  const row = await lockClaimableBatch(client, seq, nowMs);
  if (!row) return null;
  const batch = toBatch(row);
  const transition = finalizeTransition(batch, nowMs);
  if (transition.kind === "not_due") return null;
  assertInvariant(
    (await setStatus(client, row.seq, "PENDING", "FINALIZED", nowMs)) !== undefined,
    `batch ${batch.batchId} changed under its lock`,
  );
  const settled = await settleBatch(client, row.seq, batch.contract, batch.pointType, transition.senderChange);
  assertInvariant(
    settled.accounts === batch.transferCount + 1,
    `batch ${batch.batchId} settled ${settled.accounts} accounts for ${batch.transferCount} transfers`,
  );
  assertInvariant(settled.minAvailable >= 0n, `finalizing batch ${batch.batchId} left an account with available < 0`);
  await appendEvents(client, transition.events);
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    transferCount: batch.transferCount,
    finalizeAtMs: batch.finalizeAtMs,
    finalizedAtMs: nowMs,
  };
}
