import type { LedgerFlows, LedgerStore } from "../store.js";
import * as accounts from "./accounts.js";
import * as apiKeys from "./api-keys.js";
import * as auth from "./auth.js";
import { backupOperations } from "./backups.js";
import * as batches from "./batches.js";
import * as credits from "./credits.js";
import { listEvents, purgeEvents } from "./events.js";
import { committedEventsOf, createPool, guard, guardEach, migrate, probeWrites, transaction } from "./db.js";
import { historyOperations } from "./history.js";
import { projectionState } from "./leaderboard-projection.js";
import { postgresLeaderboardReads } from "./leaderboards.js";
import { postgresLedger } from "./ledger.js";
import { pointTypes } from "./point-types.js";
import { openReplica, type PostgresStoreOptions } from "./replica.js";
import { snapshotOperations } from "./snapshots.js";
import { transfers } from "./transfers.js";
import { verify } from "./verify.js";

export type { PostgresOptions } from "./db.js";
export type { PostgresStoreOptions, ReplicaOptions } from "./replica.js";

/**
 * The shared PostgreSQL adapter: any number of processes may use one database. Every operation
 * that touches balances is one transaction whose row locks (or guarded UPDATEs) keep concurrent
 * requests from interleaving badly; driver failures leave as StoreUnavailableError (503).
 * `flows` are the ledger's operations (src/ledger/), given by the composer (src/ledger/postgres.ts).
 */
export function postgresStore(options: PostgresStoreOptions, flows: LedgerFlows): LedgerStore {
  const pool = createPool(options);
  const run = <T>(work: () => Promise<T>) => guard(pool, work);
  let closing: Promise<void> | null = null;
  // The flows (src/ledger/) run over it with awaits, each transaction on one pooled client, each
  // operation guarded as the reads below are.
  const ledger = flows(postgresLedger(pool), postgresLeaderboardReads(pool));
  // DATABASE_READ_URL: the reads that may be a replica's, routed (replica.ts); their window board requests stay the primary's.
  const replica = openReplica(options, pool, (readPool) => flows(postgresLedger(pool), postgresLeaderboardReads(readPool, pool)));
  const store: LedgerStore = {
    kind: "postgres",
    projectionAside: false,
    ...guardEach(pool, ledger),
    migrate: () => run(() => migrate(pool)),
    ping: () => run(() => probeWrites(pool)),
    // Idempotent, like the SQLite adapter's: shutdown paths may close the store more than once.
    close: () => (closing ??= Promise.all([pool.end(), replica?.close()]).then(() => undefined)),
    getOperator: (contract) => run(() => auth.readOperator(pool, contract)),
    listOperators: (query) => run(() => auth.listOperators(pool, query)),
    getBalances: (address, pointTypes) => run(() => accounts.readBalances(pool, address, pointTypes)),
    getAssetEarnings: (address) => run(() => credits.readAssetEarnings(pool, address)),
    pointTypesInUse: () => run(() => pointTypes.pointTypesInUse(pool)),
    getBatch: (contract, batchId) => run(() => batches.readBatch(pool, contract, batchId)),
    listBatches: (contract, query) => run(() => batches.listBatches(pool, contract, query)),
    nextFinalizeAtMs: () => run(() => batches.nextFinalizeAtMs(pool)),
    countFailingBatches: () => run(() => batches.countFailingBatches(pool)),
    countOverdueBatches: (dueBeforeMs, limit) => run(() => batches.countOverdueBatches(pool, dueBeforeMs, limit)),
    serverKey: (name, candidate) => run(() => auth.readOrStoreServerKey(pool, name, candidate)),
    useChallengeNonce: (nonce, expiresAtMs) => run(() => auth.insertUsedNonce(pool, nonce, expiresAtMs)),
    createToken: (token) => run(() => auth.insertToken(pool, token)),
    findToken: (tokenHash, nowMs) => run(() => auth.lookupToken(pool, tokenHash, nowMs)),
    purgeExpired: (nowMs) => run(() => auth.deleteExpired(pool, nowMs)),
    listApiKeys: (contract) => run(() => apiKeys.listApiKeys(pool, contract)),
    getApiKey: (contract, id) => run(() => apiKeys.readApiKey(pool, contract, id)),
    findApiKey: (secretHash) => run(() => apiKeys.lookupApiKey(pool, secretHash)),
    recordApiKeyUses: (uses) => run(() => apiKeys.writeLastUses(pool, uses)),
    verify: () => run(() => transaction(pool, (client) => verify.verifyLedger(client), { isolation: "REPEATABLE READ", readOnly: true })),
    onCommittedEvents: (listener) => committedEventsOf(pool).subscribe(listener),
    listEvents: (query) => run(() => listEvents(pool, query)),
    purgeEvents: (beforeMs, limit) => run(() => transaction(pool, (client) => purgeEvents(client, beforeMs, limit))),
    listTransfers: (contract, query) => run(() => transfers.listTransfers(pool, contract, query)),
    listAccountBalances: (query) => run(() => transfers.listAccountBalances(pool, query)),
    ...snapshotOperations(pool, run),
    ...historyOperations(pool, run),
    projectionState: () => run(() => projectionState(pool)),
    ...backupOperations(pool, run),
    // Without a replica, the reads a replica may serve are the store's own (defined just below).
    get replicaReads() {
      return replica?.reads ?? store;
    },
    checkReplica: async () => (replica === null ? null : replica.check()),
  };
  return store;
}
