import { ledgerOperations } from "../../ledger/index.js";
import type { LedgerStore } from "../store.js";
import { readBalances } from "./accounts.js";
import { deleteExpired, insertToken, insertUsedNonce, listOperators, lookupToken, readOperator, readOrStoreServerKey } from "./auth.js";
import { countFailingBatches, findBatchRow, listBatches, nextFinalizeAtMs, withTransfers } from "./batches.js";
import { readAssetEarnings } from "./credits.js";
import { listEvents, purgeEvents } from "./events.js";
import { committedEventsOf, createPool, guard, migrate, transaction, type PostgresOptions } from "./db.js";
import { postgresLedger } from "./ledger.js";
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
  // The flows (src/ledger/) run over it with awaits, each transaction on one pooled client.
  const ledger = ledgerOperations(postgresLedger(pool));
  return {
    kind: "postgres",
    migrate: () => run(() => migrate(pool)),
    ping: () => run(async () => void (await pool.query("SELECT 1"))),
    // Idempotent, like the SQLite adapter's: shutdown paths may close the store more than once.
    close: () => (closing ??= pool.end()),
    getOperator: (contract) => run(() => readOperator(pool, contract)),
    setOperator: (contract, operator, nowMs) => run(() => ledger.setOperator(contract, operator, nowMs)),
    listOperators: (query) => run(() => listOperators(pool, query)),
    credit: (newCredit) => run(() => ledger.credit(newCredit)),
    getBalances: (address, pointTypes) => run(() => readBalances(pool, address, pointTypes)),
    getAssetEarnings: (address) => run(() => readAssetEarnings(pool, address)),
    pointTypesInUse: () => run(() => pointTypesInUse(pool)),
    submitBatch: (batch) => run(() => ledger.submitBatch(batch)),
    getBatch: (contract, batchId) =>
      run(async () => {
        // Transfers are written with their batch row and never change, so two reads agree.
        const row = await findBatchRow(pool, contract, batchId);
        return row ? withTransfers(pool, row) : null;
      }),
    listBatches: (contract, query) => run(() => listBatches(pool, contract, query)),
    cancelBatch: (contract, batchId, nowMs) => run(() => ledger.cancelBatch(contract, batchId, nowMs)),
    finalizeDue: (nowMs, limit, onFailure) => run(() => ledger.finalizeDue(nowMs, limit, onFailure)),
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
