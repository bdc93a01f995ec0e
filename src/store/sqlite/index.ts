import { ledgerOperations } from "../../ledger/index.js";
import type { LedgerStore } from "../store.js";
import { readBalances } from "./accounts.js";
import { deleteExpired, insertToken, insertUsedNonce, listOperators, lookupToken, readOperator, readOrStoreServerKey } from "./auth.js";
import { countFailingBatches, findBatchRow, listBatches, nextFinalizeAtMs, withTransfers } from "./batches.js";
import { readAssetEarnings } from "./credits.js";
import { listEvents, purgeEvents, takeAppendedEvents } from "./events.js";
import { CommittedEvents } from "../committed-events.js";
import { cachedWriteProbe, guardOperations, migrate, openDatabase, ReadOnlyRecovery, type SqliteOptions } from "./db.js";
import { sqliteLedger } from "./ledger.js";
import { pointTypesInUse } from "./point-types.js";
import { snapshotOperations } from "./snapshots.js";
import { listAccountBalances, listTransfers } from "./transfers.js";
import { verifyLedger } from "./verify.js";
import { webhookOperations } from "./webhooks.js";

/**
 * The embedded SQLite adapter. better-sqlite3 is synchronous, so each operation below runs to
 * completion inside one transaction without interleaving; one process is the only writer.
 * Every operation's SQLite errors leave translated (db.ts toStoreError): a full disk, a read-only
 * file or a held lock is StoreUnavailableError, which the HTTP layer answers 503 + Retry-After.
 */
export function createSqliteStore(options: SqliteOptions): LedgerStore {
  let db = openDatabase(options);
  const probeWrites = cachedWriteProbe(options.path);
  const recovery = new ReadOnlyRecovery(options);
  const committed = new CommittedEvents();
  // The flows (src/ledger/) run synchronously over it: each one whole inside one transaction.
  const ledger = ledgerOperations(sqliteLedger(() => db));
  const store: LedgerStore = {
    kind: "sqlite",
    ...ledger,
    migrate: async () => migrate(db),
    ping: async () => probeWrites(db),
    close: async () => {
      if (db.open) db.close();
    },
    getOperator: async (contract) => readOperator(db, contract),
    listOperators: async (query) => listOperators(db, query),
    getBalances: async (address, pointTypes) => readBalances(db, address, pointTypes),
    getAssetEarnings: async (address) => readAssetEarnings(db, address),
    pointTypesInUse: async () => pointTypesInUse(db),
    getBatch: async (contract, batchId) => {
      const row = findBatchRow(db, contract, batchId);
      return row ? db.transaction(() => withTransfers(db, row))() : null;
    },
    listBatches: async (contract, query) => listBatches(db, contract, query),
    nextFinalizeAtMs: async () => nextFinalizeAtMs(db),
    countFailingBatches: async () => countFailingBatches(db),
    serverKey: async (name, candidate) => readOrStoreServerKey(db, name, candidate),
    useChallengeNonce: async (nonce, expiresAtMs) => insertUsedNonce(db, nonce, expiresAtMs),
    createToken: async (token) => insertToken(db, token),
    findToken: async (tokenHash, nowMs) => lookupToken(db, tokenHash, nowMs),
    purgeExpired: async (nowMs) => deleteExpired(db, nowMs),
    ...webhookOperations(() => db),
    verify: async () => db.transaction(() => verifyLedger(db))(),
    // Replaced below: a subscription is synchronous, not a guarded database operation.
    onCommittedEvents: () => () => undefined,
    listEvents: async (query) => db.transaction(() => listEvents(db, query))(),
    purgeEvents: async (beforeMs, limit) => db.transaction(() => purgeEvents(db, beforeMs, limit)).immediate(),
    listTransfers: async (contract, query) => listTransfers(db, contract, query),
    listAccountBalances: async (query) => listAccountBalances(db, query),
    ...snapshotOperations(options.path, () => db),
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
