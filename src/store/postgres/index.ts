import type { LedgerFlows, LedgerOperations, LedgerStore, TransparencyLogStore, WebhooksStore } from "../store.js";
import { accounts } from "./accounts.js";
import { apiKeys } from "./api-keys.js";
import { auth } from "./auth.js";
import { batches } from "./batches.js";
import { credits } from "./credits.js";
import { listEvents, purgeEvents } from "./events.js";
import { committedEventsOf, createPool, guard, migrate, transaction, type PostgresOptions } from "./db.js";
import { historyOperations } from "./history.js";
import { postgresLeaderboardReads, projectionState } from "./leaderboards.js";
import { postgresLedger } from "./ledger.js";
import { pointTypes } from "./point-types.js";
import { snapshotOperations } from "./snapshots.js";
import { transfers } from "./transfers.js";
import { verify } from "./verify.js";

export type { PostgresOptions } from "./db.js";

/**
 * The shared PostgreSQL adapter: any number of processes may use one database. Every operation
 * that touches balances is one transaction whose row locks (or guarded UPDATEs) keep concurrent
 * requests from interleaving badly; driver failures leave as StoreUnavailableError (503).
 * `flows` are the ledger's operations (src/ledger/), given by the composer (src/ledger/postgres.ts).
 */
export function postgresStore(options: PostgresOptions, flows: LedgerFlows): LedgerStore {
  const pool = createPool(options);
  const run = <T>(work: () => Promise<T>) => guard(pool, work);
  // A ledger operation guarded as it is, every argument passed on (an optional one, like the
  // actor, cannot be dropped by a wrapper that lists them).
  const guarded =
    <A extends unknown[], R>(operation: (...args: A) => Promise<R>) =>
    (...args: A) =>
      run(() => operation(...args));
  let closing: Promise<void> | null = null;
  // The flows (src/ledger/) run over it with awaits, each transaction on one pooled client.
  const ledger = flows(postgresLedger(pool), postgresLeaderboardReads(pool));
  return {
    kind: "postgres",
    migrate: () => run(() => migrate(pool)),
    ping: () => run(async () => void (await pool.query("SELECT 1"))),
    // Idempotent, like the SQLite adapter's: shutdown paths may close the store more than once.
    close: () => (closing ??= pool.end()),
    getOperator: (contract) => run(() => auth.readOperator(pool, contract)),
    setOperator: guarded(ledger.setOperator),
    listOperators: (query) => run(() => auth.listOperators(pool, query)),
    credit: guarded(ledger.credit),
    getBalances: (address, pointTypes) => run(() => accounts.readBalances(pool, address, pointTypes)),
    getAssetEarnings: (address) => run(() => credits.readAssetEarnings(pool, address)),
    pointTypesInUse: () => run(() => pointTypes.pointTypesInUse(pool)),
    submitBatch: guarded(ledger.submitBatch),
    getBatch: (contract, batchId) => run(() => batches.readBatch(pool, contract, batchId)),
    listBatches: (contract, query) => run(() => batches.listBatches(pool, contract, query)),
    cancelBatch: guarded(ledger.cancelBatch),
    finalizeDue: guarded(ledger.finalizeDue),
    nextFinalizeAtMs: () => run(() => batches.nextFinalizeAtMs(pool)),
    countFailingBatches: () => run(() => batches.countFailingBatches(pool)),
    countOverdueBatches: (dueBeforeMs, limit) => run(() => batches.countOverdueBatches(pool, dueBeforeMs, limit)),
    serverKey: (name, candidate) => run(() => auth.readOrStoreServerKey(pool, name, candidate)),
    useChallengeNonce: (nonce, expiresAtMs) => run(() => auth.insertUsedNonce(pool, nonce, expiresAtMs)),
    createToken: (token) => run(() => auth.insertToken(pool, token)),
    findToken: (tokenHash, nowMs) => run(() => auth.lookupToken(pool, tokenHash, nowMs)),
    purgeExpired: (nowMs) => run(() => auth.deleteExpired(pool, nowMs)),
    createApiKey: guarded(ledger.createApiKey),
    revokeApiKey: guarded(ledger.revokeApiKey),
    listApiKeys: (contract) => run(() => apiKeys.listApiKeys(pool, contract)),
    getApiKey: (contract, id) => run(() => apiKeys.readApiKey(pool, contract, id)),
    findApiKey: (secretHash) => run(() => apiKeys.lookupApiKey(pool, secretHash)),
    recordApiKeyUses: (uses) => run(() => apiKeys.writeLastUses(pool, uses)),
    ...guardedWebhooks(ledger, guarded),
    verify: () => run(() => transaction(pool, (client) => verify.verifyLedger(client), { isolation: "REPEATABLE READ", readOnly: true })),
    onCommittedEvents: (listener) => committedEventsOf(pool).subscribe(listener),
    listEvents: (query) => run(() => listEvents(pool, query)),
    purgeEvents: (beforeMs, limit) => run(() => transaction(pool, (client) => purgeEvents(client, beforeMs, limit))),
    listTransfers: (contract, query) => run(() => transfers.listTransfers(pool, contract, query)),
    listAccountBalances: (query) => run(() => transfers.listAccountBalances(pool, query)),
    ...snapshotOperations(pool, run),
    ...historyOperations(pool, run),
    readBoard: guarded(ledger.readBoard),
    readStanding: guarded(ledger.readStanding),
    projectionState: () => run(() => projectionState(pool)),
    applyProjection: guarded(ledger.applyProjection),
    buildWindowBoards: guarded(ledger.buildWindowBoards),
    ...logOperations(ledger, guarded),
  };
}

type Guard = <A extends unknown[], R>(operation: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;

/** The webhook operations (flows of src/ledger/webhooks.ts), each guarded as the other ledger operations are. */
function guardedWebhooks(ledger: LedgerOperations, guarded: Guard): WebhooksStore {
  return {
    createWebhookEndpoint: guarded(ledger.createWebhookEndpoint),
    listWebhookEndpoints: guarded(ledger.listWebhookEndpoints),
    getWebhookEndpoint: guarded(ledger.getWebhookEndpoint),
    updateWebhookEndpoint: guarded(ledger.updateWebhookEndpoint),
    deleteWebhookEndpoint: guarded(ledger.deleteWebhookEndpoint),
    rotateWebhookSecret: guarded(ledger.rotateWebhookSecret),
    createTestDelivery: guarded(ledger.createTestDelivery),
    claimDueDeliveries: guarded(ledger.claimDueDeliveries),
    renewDeliveryLeases: guarded(ledger.renewDeliveryLeases),
    recordDeliveryAttempt: guarded(ledger.recordDeliveryAttempt),
    listDeliveries: guarded(ledger.listDeliveries),
    getDelivery: guarded(ledger.getDelivery),
    retryDelivery: guarded(ledger.retryDelivery),
    recoverDeliveries: guarded(ledger.recoverDeliveries),
    purgeDeliveries: guarded(ledger.purgeDeliveries),
    webhookBacklog: guarded(ledger.webhookBacklog),
  };
}

/** The transparency log's operations (flows of src/ledger/transparency-log.ts), each guarded as the other ledger operations are. */
function logOperations(ledger: LedgerOperations, guarded: Guard): TransparencyLogStore {
  return {
    appendToLog: guarded(ledger.appendToLog),
    logCheckpoint: guarded(ledger.logCheckpoint),
    logInclusionProof: guarded(ledger.logInclusionProof),
    logConsistencyProof: guarded(ledger.logConsistencyProof),
  };
}
