import type { AddressKey } from "../../domain/address.js";
import { batchMatchesRequest, type NewBatch } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { availableOf, type CancelResult, type FinalizedBatch, type LedgerStore, type SubmitResult } from "../store.js";
import { readBalance, readBalances, releasePending, reserveOnEmptyAccount, reservePending, settleBatch } from "./accounts.js";
import { deleteExpired, insertChallenge, insertToken, lookupToken, readOperator, takeChallenge, writeOperator } from "./auth.js";
import {
  claimDueBatch,
  findBatchRow,
  insertBatch,
  insertTransfers,
  listBatches,
  lockBatchRow,
  nextFinalizeAtMs,
  setStatus,
  toBatch,
  withTransfers,
} from "./batches.js";
import { applyCredit } from "./credits.js";
import { createPool, guard, migrate, transaction, type PgClient, type PgPool, type PostgresOptions } from "./db.js";
import { verifyLedger } from "./verify.js";

export type { PostgresOptions } from "./db.js";

/**
 * The shared PostgreSQL adapter: any number of processes may use one database. Every operation
 * that touches balances is one transaction whose row locks (or guarded UPDATEs) keep concurrent
 * requests from interleaving badly; driver failures leave as StoreUnavailableError (503).
 */
export function createPostgresStore(options: PostgresOptions): LedgerStore {
  const pool = createPool(options);
  const run = <T>(work: () => Promise<T>) => guard(pool, work);
  let closing: Promise<void> | null = null;
  return {
    kind: "postgres",
    migrate: () => run(() => migrate(pool)),
    ping: () => run(async () => void (await pool.query("SELECT 1"))),
    // Idempotent, like the SQLite adapter's: shutdown paths may close the store more than once.
    close: () => (closing ??= pool.end()),
    getOperator: (contract) => run(() => readOperator(pool, contract)),
    setOperator: (contract, operator, nowMs) =>
      run(() => transaction(pool, (client) => writeOperator(client, contract, operator, nowMs))),
    credit: (credit) =>
      run(() => transaction(pool, (client) => applyCredit(client, credit), { commitIf: (result) => result.kind === "credited" })),
    getBalances: (address) => run(() => readBalances(pool, address)),
    submitBatch: (batch) =>
      run(() => transaction(pool, (client) => submit(client, batch), { commitIf: (result) => result.kind === "accepted" })),
    getBatch: (contract, batchId) =>
      run(async () => {
        // Transfers are written with their batch row and never change, so two reads agree.
        const row = await findBatchRow(pool, contract, batchId);
        return row ? withTransfers(pool, row) : null;
      }),
    listBatches: (contract, query) => run(() => listBatches(pool, contract, query)),
    cancelBatch: (contract, batchId, nowMs) => run(() => transaction(pool, (client) => cancel(client, contract, batchId, nowMs))),
    finalizeDue: (nowMs, limit) => run(() => finalizeDue(pool, nowMs, limit)),
    nextFinalizeAtMs: () => run(() => nextFinalizeAtMs(pool)),
    createChallenge: (challenge) => run(() => insertChallenge(pool, challenge)),
    consumeChallenge: (challengeId, nowMs) => run(() => takeChallenge(pool, challengeId, nowMs)),
    createToken: (token) => run(() => insertToken(pool, token)),
    findToken: (tokenHash, nowMs) => run(() => lookupToken(pool, tokenHash, nowMs)),
    purgeExpired: (nowMs) => run(() => deleteExpired(pool, nowMs)),
    verify: () =>
      run(() => transaction(pool, (client) => verifyLedger(client), { isolation: "REPEATABLE READ", readOnly: true })),
  };
}

/**
 * Claims the batchId, stores the transfers, then reserves the total with a guarded UPDATE, so the
 * sender's row is locked only for the reservation and the commit, not for the bulk insert.
 * The caller commits only an accepted batch; anything else rolls back.
 */
async function submit(client: PgClient, batch: NewBatch): Promise<SubmitResult> {
  const row = await insertBatch(client, batch);
  if (!row) return existingBatch(client, batch);
  await insertTransfers(client, row.seq, batch.transfers);
  const reserved =
    (await reservePending(client, batch.contract, batch.pointType, batch.total)) ||
    (await reserveOnEmptyAccount(client, batch.contract, batch.pointType, batch.total));
  if (!reserved) {
    const available = availableOf(await readBalance(client, batch.contract, batch.pointType));
    return { kind: "insufficient", available, requested: batch.total };
  }
  return { kind: "accepted", batch: toBatch(row) };
}

async function existingBatch(client: PgClient, batch: NewBatch): Promise<SubmitResult> {
  const existing = await findBatchRow(client, batch.contract, batch.batchId);
  assertInvariant(existing !== undefined, `batch ${batch.batchId} conflicted but cannot be read`);
  const matchesRequest = batchMatchesRequest(await withTransfers(client, existing), batch);
  return { kind: "exists", status: toBatch(existing).status, matchesRequest };
}

/** The batch's row lock orders a cancel against a finalization of the same batch: one wins. */
async function cancel(client: PgClient, contract: AddressKey, batchId: string, nowMs: number): Promise<CancelResult> {
  const row = await lockBatchRow(client, contract, batchId);
  if (!row) return { kind: "not_found" };
  const batch = toBatch(row);
  if (batch.status === "CANCELLED") return { kind: "cancelled", batch, changed: false };
  if (batch.status !== "PENDING" || nowMs >= batch.finalizeAtMs) return { kind: "not_cancellable", batch };
  const cancelled = await setStatus(client, row.seq, "PENDING", "CANCELLED", nowMs);
  assertInvariant(cancelled !== undefined, `batch ${batchId} changed under its lock`);
  await releasePending(client, contract, batch.pointType, batch.total);
  return { kind: "cancelled", batch: toBatch(cancelled), changed: true };
}

/** Each due batch in its own transaction: claimed, marked FINALIZED, sender and recipients settled. */
async function finalizeDue(pool: PgPool, nowMs: number, limit: number): Promise<FinalizedBatch[]> {
  const finalized: FinalizedBatch[] = [];
  while (finalized.length < limit) {
    const batch = await transaction(pool, (client) => finalizeOne(client, nowMs));
    if (!batch) break;
    finalized.push(batch);
  }
  return finalized;
}

async function finalizeOne(client: PgClient, nowMs: number): Promise<FinalizedBatch | null> {
  const row = await claimDueBatch(client, nowMs);
  if (!row) return null;
  const batch = toBatch(row);
  const settled = await settleBatch(client, row.seq, batch.contract, batch.pointType, batch.total);
  assertInvariant(
    settled.accounts === batch.transferCount + 1,
    `batch ${batch.batchId} settled ${settled.accounts} accounts for ${batch.transferCount} transfers`,
  );
  assertInvariant(settled.minAvailable >= 0n, `finalizing batch ${batch.batchId} left an account with available < 0`);
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    transferCount: batch.transferCount,
    finalizeAtMs: batch.finalizeAtMs,
    finalizedAtMs: nowMs,
  };
}
