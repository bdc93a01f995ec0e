import type { LedgerFlows, LedgerStore } from "../store.js";
import { accounts } from "./accounts.js";
import { apiKeys } from "./api-keys.js";
import { auth } from "./auth.js";
import { batches } from "./batches.js";
import { credits } from "./credits.js";
import { listEvents, purgeEvents, takeAppendedEvents } from "./events.js";
import { CommittedEvents } from "../committed-events.js";
import { cachedWriteProbe, guardOperations, migrate, openDatabase, ReadOnlyRecovery, type SqliteOptions } from "./db.js";
import { historyOperations } from "./history.js";
import { projectionState, sqliteLeaderboardReads } from "./leaderboards.js";
import { sqliteLedger } from "./ledger.js";
import { pointTypes } from "./point-types.js";
import { snapshotOperations } from "./snapshots.js";
import { transfers } from "./transfers.js";
import { verify } from "./verify.js";

/**
 * The embedded SQLite adapter. better-sqlite3 is synchronous, so each operation below runs to
 * completion inside one transaction without interleaving; one process is the only writer.
 * Every operation's SQLite errors leave translated (db.ts toStoreError): a full disk, a read-only
 * file or a held lock is StoreUnavailableError, which the HTTP layer answers 503 + Retry-After.
 * `flows` are the ledger's operations (src/ledger/), given by the composer (src/ledger/sqlite.ts).
 */
export function sqliteStore(options: SqliteOptions, flows: LedgerFlows): LedgerStore {
  let db = openDatabase(options);
  const probeWrites = cachedWriteProbe(options.path);
  const recovery = new ReadOnlyRecovery(options);
  const committed = new CommittedEvents();
  // The flows (src/ledger/) run synchronously over it: each one whole inside one transaction.
  const ledger = flows(
    sqliteLedger(() => db),
    sqliteLeaderboardReads(() => db),
  );
  const store: LedgerStore = {
    kind: "sqlite",
    ...ledger,
    migrate: async () => migrate(db),
    ping: async () => probeWrites(db),
    close: async () => {
      if (db.open) db.close();
    },
    getOperator: async (contract) => auth.readOperator(db, contract),
    listOperators: async (query) => auth.listOperators(db, query),
    getBalances: async (address, pointTypes) => accounts.readBalances(db, address, pointTypes),
    getAssetEarnings: async (address) => credits.readAssetEarnings(db, address),
    pointTypesInUse: async () => pointTypes.pointTypesInUse(db),
    getBatch: async (contract, batchId) => batches.readBatch(db, contract, batchId),
    listBatches: async (contract, query) => batches.listBatches(db, contract, query),
    nextFinalizeAtMs: async () => batches.nextFinalizeAtMs(db),
    countFailingBatches: async () => batches.countFailingBatches(db),
    countOverdueBatches: async (dueBeforeMs, limit) => batches.countOverdueBatches(db, dueBeforeMs, limit),
    serverKey: async (name, candidate) => auth.readOrStoreServerKey(db, name, candidate),
    useChallengeNonce: async (nonce, expiresAtMs) => auth.insertUsedNonce(db, nonce, expiresAtMs),
    createToken: async (token) => auth.insertToken(db, token),
    findToken: async (tokenHash, nowMs) => auth.lookupToken(db, tokenHash, nowMs),
    purgeExpired: async (nowMs) => auth.deleteExpired(db, nowMs),
    listApiKeys: async (contract) => apiKeys.listApiKeys(db, contract),
    getApiKey: async (contract, id) => apiKeys.readApiKey(db, contract, id),
    findApiKey: async (secretHash) => apiKeys.lookupApiKey(db, secretHash),
    recordApiKeyUses: async (uses) => db.transaction(() => apiKeys.writeLastUses(db, uses)).immediate(),
    verify: async () => db.transaction(() => verify.verifyLedger(db))(),
    // Replaced below: a subscription is synchronous, not a guarded database operation.
    onCommittedEvents: () => () => undefined,
    listEvents: async (query) => db.transaction(() => listEvents(db, query))(),
    purgeEvents: async (beforeMs, limit) => db.transaction(() => purgeEvents(db, beforeMs, limit)).immediate(),
    listTransfers: async (contract, query) => transfers.listTransfers(db, contract, query),
    listAccountBalances: async (query) => transfers.listAccountBalances(db, query),
    ...snapshotOperations(options.path, () => db),
    ...historyOperations(() => db),
    projectionState: async () => projectionState(db),
  };
  const guarded = guardOperations(
    store,
    (error) => {
      const fresh = db.open ? recovery.replacement(error) : null;
      if (fresh) {
        db.close();
        db = fresh;
      }
    },
    (succeeded) => {
      const events = takeAppendedEvents(db);
      if (succeeded) committed.emit(events);
    },
  );
  return { ...guarded, onCommittedEvents: (listener) => committed.subscribe(listener) };
}
