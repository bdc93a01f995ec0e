import type { AddressKey } from "../../domain/address.js";
import { batchMatchesRequest, type NewBatch } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { cancelTransition, submitTransition } from "../../domain/transitions.js";
import { type BatchQuery, type CancelResult, type LedgerStore, type SubmitResult } from "../store.js";
import { changeBalance, readBalance, readBalances } from "./accounts.js";
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
  listBatches,
  nextFinalizeAtMs,
  setStatus,
  toBatch,
  withTransfers,
} from "./batches.js";
import { applyCredit, readAssetEarnings } from "./credits.js";
import { appendEvents, listEvents, purgeEvents, takeAppendedEvents } from "./events.js";
import { CommittedEvents } from "../committed-events.js";
import { finalizeDue } from "./finalize.js";
import { cachedWriteProbe, guardOperations, migrate, openDatabase, ReadOnlyRecovery, type SqliteDb, type SqliteOptions } from "./db.js";
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
  const store: LedgerStore = {
    kind: "sqlite",
    migrate: async () => migrate(db),
    ping: async () => probeWrites(db),
    close: async () => {
      if (db.open) db.close();
    },
    getOperator: async (contract) => readOperator(db, contract),
    setOperator: async (contract, operator, nowMs) => {
      db.transaction(() => writeOperator(db, contract, operator, nowMs)).immediate();
    },
    listOperators: async (query) => listOperators(db, query),
    credit: async (credit) => db.transaction(() => applyCredit(db, credit)).immediate(),
    getBalances: async (address, pointTypes) => readBalances(db, address, pointTypes),
    getAssetEarnings: async (address) => readAssetEarnings(db, address),
    pointTypesInUse: async () => pointTypesInUse(db),
    submitBatch: async (batch) => db.transaction(() => submit(db, batch)).immediate(),
    getBatch: async (contract, batchId) => {
      const row = findBatchRow(db, contract, batchId);
      return row ? db.transaction(() => withTransfers(db, row))() : null;
    },
    listBatches: async (contract: AddressKey, query: BatchQuery) => listBatches(db, contract, query),
    cancelBatch: async (contract, batchId, nowMs) => db.transaction(() => cancel(db, contract, batchId, nowMs)).immediate(),
    finalizeDue: async (nowMs, limit, onFailure) => finalizeDue(db, nowMs, limit, onFailure),
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

function submit(db: SqliteDb, batch: NewBatch): SubmitResult {
  const existing = findBatchRow(db, batch.contract, batch.batchId);
  if (existing) {
    const matchesRequest = batchMatchesRequest(withTransfers(db, existing), batch);
    return { kind: "exists", status: toBatch(existing).status, matchesRequest };
  }
  const transition = submitTransition(batch, readBalance(db, batch.contract, batch.pointType));
  if (transition.kind === "insufficient") return transition;
  changeBalance(db, batch.contract, batch.pointType, transition.senderChange);
  insertBatch(db, batch);
  appendEvents(db, transition.events);
  return { kind: "accepted", batch: transition.batch };
}

function cancel(db: SqliteDb, contract: AddressKey, batchId: string, nowMs: number): CancelResult {
  const row = findBatchRow(db, contract, batchId);
  if (!row) return { kind: "not_found" };
  const batch = toBatch(row);
  const transition = cancelTransition(batch, nowMs);
  if (transition.kind === "already_cancelled") return { kind: "cancelled", batch, changed: false };
  if (transition.kind === "not_cancellable") return { kind: "not_cancellable", batch };
  assertInvariant(setStatus(db, row.seq, "PENDING", "CANCELLED", nowMs), `batch ${batchId} changed under its lock`);
  changeBalance(db, contract, batch.pointType, transition.senderChange);
  appendEvents(db, transition.events);
  return { kind: "cancelled", batch: transition.batch, changed: true };
}
