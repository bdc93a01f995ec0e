import type { AddressKey } from "../../domain/address.js";
import { batchMatchesRequest, type NewBatch } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import {
  availableOf,
  type BatchQuery,
  type CancelResult,
  type FinalizedBatch,
  type LedgerStore,
  type SubmitResult,
} from "../store.js";
import { creditRecipients, readBalance, readBalances, writeBalance } from "./accounts.js";
import { deleteExpired, insertChallenge, insertToken, lookupToken, readOperator, takeChallenge, writeOperator } from "./auth.js";
import {
  dueBatchSeqs,
  findBatchRow,
  insertBatch,
  listBatches,
  nextFinalizeAtMs,
  readBatchBySeq,
  setStatus,
  toBatch,
  withTransfers,
} from "./batches.js";
import { applyCredit } from "./credits.js";
import { migrate, openDatabase, type SqliteDb, type SqliteOptions } from "./db.js";
import { verifyLedger } from "./verify.js";

/**
 * The embedded SQLite adapter. better-sqlite3 is synchronous, so each operation below runs to
 * completion inside one transaction without interleaving; one process is the only writer.
 */
export function createSqliteStore(options: SqliteOptions): LedgerStore {
  const db = openDatabase(options);
  return {
    kind: "sqlite",
    migrate: async () => migrate(db),
    ping: async () => {
      db.prepare("SELECT 1").get();
    },
    close: async () => {
      if (db.open) db.close();
    },
    getOperator: async (contract) => readOperator(db, contract),
    setOperator: async (contract, operator, nowMs) => {
      db.transaction(() => writeOperator(db, contract, operator, nowMs)).immediate();
    },
    credit: async (credit) => db.transaction(() => applyCredit(db, credit)).immediate(),
    getBalances: async (address) => readBalances(db, address),
    submitBatch: async (batch) => db.transaction(() => submit(db, batch)).immediate(),
    getBatch: async (contract, batchId) => {
      const row = findBatchRow(db, contract, batchId);
      return row ? db.transaction(() => withTransfers(db, row))() : null;
    },
    listBatches: async (contract: AddressKey, query: BatchQuery) => listBatches(db, contract, query),
    cancelBatch: async (contract, batchId, nowMs) =>
      db.transaction(() => cancel(db, contract, batchId, nowMs)).immediate(),
    finalizeDue: async (nowMs, limit) => finalizeDue(db, nowMs, limit),
    nextFinalizeAtMs: async () => nextFinalizeAtMs(db),
    createChallenge: async (challenge) => insertChallenge(db, challenge),
    consumeChallenge: async (challengeId, nowMs) => takeChallenge(db, challengeId, nowMs),
    createToken: async (token) => insertToken(db, token),
    findToken: async (tokenHash, nowMs) => lookupToken(db, tokenHash, nowMs),
    purgeExpired: async (nowMs) => deleteExpired(db, nowMs),
    verify: async () => db.transaction(() => verifyLedger(db))(),
  };
}

function submit(db: SqliteDb, batch: NewBatch): SubmitResult {
  const existing = findBatchRow(db, batch.contract, batch.batchId);
  if (existing) {
    const matchesRequest = batchMatchesRequest(withTransfers(db, existing), batch);
    return { kind: "exists", status: toBatch(existing).status, matchesRequest };
  }
  const balance = readBalance(db, batch.contract, batch.pointType);
  const available = availableOf(balance);
  if (available < batch.total) return { kind: "insufficient", available, requested: batch.total };
  writeBalance(db, batch.contract, batch.pointType, { ...balance, pendingSent: balance.pendingSent + batch.total });
  const seq = insertBatch(db, batch);
  return { kind: "accepted", batch: toBatch(readBatchBySeq(db, seq)) };
}

function cancel(db: SqliteDb, contract: AddressKey, batchId: string, nowMs: number): CancelResult {
  const row = findBatchRow(db, contract, batchId);
  if (!row) return { kind: "not_found" };
  const batch = toBatch(row);
  if (batch.status === "CANCELLED") return { kind: "cancelled", batch, changed: false };
  if (batch.status !== "PENDING" || nowMs >= batch.finalizeAtMs) return { kind: "not_cancellable", batch };
  assertInvariant(setStatus(db, row.seq, "PENDING", "CANCELLED", nowMs), `batch ${batchId} changed under its lock`);
  const balance = readBalance(db, contract, batch.pointType);
  writeBalance(db, contract, batch.pointType, { ...balance, pendingSent: balance.pendingSent - batch.total });
  return { kind: "cancelled", batch: toBatch(readBatchBySeq(db, row.seq)), changed: true };
}

/**
 * Longest one finalizer transaction may hold the writer (and, better-sqlite3 being synchronous,
 * the event loop). Several batches per commit: each batch's 2000 recipient upserts dirty pages
 * all over the accounts B-tree, and writing them once per group instead of once per batch made
 * finalization 2.5× faster (docs/performance.md); the budget keeps request latency bounded.
 */
const FINALIZE_TRANSACTION_BUDGET_MS = 15;

/**
 * Finalizes due batches, oldest first, in one transaction until the time budget is spent. Each
 * batch moves PENDING → FINALIZED under a status guard, so it happens once. If any batch of the
 * group cannot be applied, the group rolls back and is retried one batch per transaction, so a
 * batch that fails blocks only itself; its error surfaces when nothing else could be finalized.
 */
function finalizeDue(db: SqliteDb, nowMs: number, limit: number): FinalizedBatch[] {
  const seqs = dueBatchSeqs(db, nowMs, limit);
  try {
    return db.transaction(() => {
      const startedMs = performance.now();
      const finalized: FinalizedBatch[] = [];
      for (const seq of seqs) {
        const batch = applyFinalization(db, seq, nowMs);
        if (batch) finalized.push(batch);
        if (performance.now() - startedMs >= FINALIZE_TRANSACTION_BUDGET_MS) break;
      }
      return finalized;
    }).immediate();
  } catch (groupError) {
    const finalized: FinalizedBatch[] = [];
    for (const seq of seqs) {
      try {
        const batch = db.transaction(() => applyFinalization(db, seq, nowMs)).immediate();
        if (batch) finalized.push(batch);
      } catch {
        // Reported below through the group's error when this batch is all that is left.
      }
    }
    if (finalized.length === 0) throw groupError;
    return finalized;
  }
}

/** PENDING → FINALIZED for one batch, sender and recipients updated; null if it was not PENDING. */
function applyFinalization(db: SqliteDb, seq: bigint, nowMs: number): FinalizedBatch | null {
  const batch = toBatch(readBatchBySeq(db, seq));
  if (!setStatus(db, seq, "PENDING", "FINALIZED", nowMs)) return null;
  const balance = readBalance(db, batch.contract, batch.pointType);
  assertInvariant(balance.pendingSent >= batch.total, `pendingSent of ${batch.contract} below batch ${batch.batchId}`);
  writeBalance(db, batch.contract, batch.pointType, {
    ...balance,
    pendingSent: balance.pendingSent - batch.total,
    finalizedSentCumulative: balance.finalizedSentCumulative + batch.total,
  });
  const recipients = creditRecipients(db, Number(seq), batch.pointType);
  assertInvariant(recipients === batch.transferCount, `batch ${batch.batchId} has ${recipients} stored transfers`);
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    transferCount: batch.transferCount,
    finalizeAtMs: batch.finalizeAtMs,
    finalizedAtMs: nowMs,
  };
}
