import type { AddressKey } from "../../domain/address.js";
import { batchMatchesRequest, type NewBatch } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { cancelTransition, submitTransition } from "../../domain/transitions.js";
import type { CancelResult, LedgerStore, SubmitResult } from "../store.js";
import { changeBalance, lockBalance, readBalances } from "./accounts.js";
import {
  deleteExpired,
  insertToken,
  insertUsedNonce,
  listOperators,
  lookupToken,
  readOperator,
  readOrStoreServerKey,
  writeOperator,
} from "./auth.js";
import {
  countFailingBatches,
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
import { applyCredit, readAssetEarnings } from "./credits.js";
import { appendEvents, listEvents, purgeEvents } from "./events.js";
import { finalizeDue } from "./finalize.js";
import { committedEventsOf, createPool, guard, migrate, transaction, type PgClient, type PostgresOptions } from "./db.js";
import { pointTypesInUse } from "./point-types.js";
import { snapshotOperations } from "./snapshots.js";
import { listAccountBalances, listTransfers } from "./transfers.js";
import { verifyLedger } from "./verify.js";
import { webhookOperations } from "./webhooks.js";

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
    setOperator: (contract, operator, nowMs) => run(() => transaction(pool, (client) => writeOperator(client, contract, operator, nowMs))),
    listOperators: (query) => run(() => listOperators(pool, query)),
    credit: (credit) =>
      run(() => transaction(pool, (client) => applyCredit(client, credit), { commitIf: (result) => result.kind === "credited" })),
    getBalances: (address, pointTypes) => run(() => readBalances(pool, address, pointTypes)),
    getAssetEarnings: (address) => run(() => readAssetEarnings(pool, address)),
    pointTypesInUse: () => run(() => pointTypesInUse(pool)),
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
    finalizeDue: (nowMs, limit, onFailure) => run(() => finalizeDue(pool, nowMs, limit, onFailure)),
    nextFinalizeAtMs: () => run(() => nextFinalizeAtMs(pool)),
    countFailingBatches: () => run(() => countFailingBatches(pool)),
    serverKey: (name, candidate) => run(() => readOrStoreServerKey(pool, name, candidate)),
    useChallengeNonce: (nonce, expiresAtMs) => run(() => insertUsedNonce(pool, nonce, expiresAtMs)),
    createToken: (token) => run(() => insertToken(pool, token)),
    findToken: (tokenHash, nowMs) => run(() => lookupToken(pool, tokenHash, nowMs)),
    purgeExpired: (nowMs) => run(() => deleteExpired(pool, nowMs)),
    ...webhookOperations(pool, run),
    verify: () => run(() => transaction(pool, (client) => verifyLedger(client), { isolation: "REPEATABLE READ", readOnly: true })),
    onCommittedEvents: (listener) => committedEventsOf(pool).subscribe(listener),
    listEvents: (query) => run(() => listEvents(pool, query)),
    purgeEvents: (beforeMs, limit) => run(() => transaction(pool, (client) => purgeEvents(client, beforeMs, limit))),
    listTransfers: (contract, query) => run(() => listTransfers(pool, contract, query)),
    listAccountBalances: (query) => run(() => listAccountBalances(pool, query)),
    ...snapshotOperations(pool, run),
  };
}

/**
 * Claims the batchId, stores the transfers, then locks the sender's account and applies the
 * submit transition (domain/transitions.ts) with its event, so the sender's row is locked only
 * for the reservation and the commit, not for the bulk insert. The caller commits only an
 * accepted batch; anything else rolls back.
 */
async function submit(client: PgClient, batch: NewBatch): Promise<SubmitResult> {
  const row = await insertBatch(client, batch);
  if (!row) return existingBatch(client, batch);
  await insertTransfers(client, row.seq, batch.transfers);
  const transition = submitTransition(batch, await lockBalance(client, batch.contract, batch.pointType));
  if (transition.kind === "insufficient") return transition;
  await changeBalance(client, batch.contract, batch.pointType, transition.senderChange);
  await appendEvents(client, transition.events);
  return { kind: "accepted", batch: transition.batch };
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
  const transition = cancelTransition(batch, nowMs);
  if (transition.kind === "already_cancelled") return { kind: "cancelled", batch, changed: false };
  if (transition.kind === "not_cancellable") return { kind: "not_cancellable", batch };
  const cancelled = await setStatus(client, row.seq, "PENDING", "CANCELLED", nowMs);
  assertInvariant(cancelled !== undefined, `batch ${batchId} changed under its lock`);
  await changeBalance(client, contract, batch.pointType, transition.senderChange);
  await appendEvents(client, transition.events);
  return { kind: "cancelled", batch: transition.batch, changed: true };
}
