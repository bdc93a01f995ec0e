import type { LedgerEvent } from "../../domain/events.js";
import { StoreUnavailableError } from "../errors.js";
import type { EventsAppendPort, LedgerDatabaseOf, TransactOptions } from "../ports/ledger.js";
import { accounts } from "./accounts.js";
import { apiKeys } from "./api-keys.js";
import { auth } from "./auth.js";
import { batches } from "./batches.js";
import { credits } from "./credits.js";
import { toStoreError, type SqliteDb } from "./db.js";
import { appendEvents } from "./events.js";
import { projection, windowBoards } from "./leaderboards.js";
import * as webhooks from "./webhooks.js";
import { sqliteTransparencyLog as log } from "./tlog.js";
import { sqlitePublishers as publishers } from "./publishers.js";
import { sqliteChain as chain } from "./chain.js";

/**
 * Longest one finalization pass may hold the writer (and, better-sqlite3 being synchronous,
 * the event loop). Several batches per commit: each batch's 2000 recipient upserts dirty pages
 * all over the accounts B-tree, and writing them once per group instead of once per batch made
 * finalization 2.5× faster (docs/performance.md); the budget keeps request latency bounded.
 * Measured (bench, 8 connections): 15 ms gave 360,441 finalized/s, 30 ms 398,580–405,218, while the
 * p99 of a full-batch PUT at half the peak rate stayed 28.5–40.5 ms (target ≤ 50 ms).
 */
export const FINALIZE_TRANSACTION_BUDGET_MS = 30;

const events = {
  appendEvents: (db: SqliteDb, appended: readonly LedgerEvent[]) => appendEvents(db, appended),
} satisfies EventsAppendPort<SqliteDb, "sync">;

/** Thrown inside a transaction to roll it back, carrying the result the caller still returns. */
class Rollback<R> {
  constructor(readonly result: R) {}
}

/**
 * How a connection begins its write transactions: the ledger's writer IMMEDIATE (the write lock
 * taken at BEGIN, so a read inside cannot be invalidated by another process's write); the
 * projection's connection DEFERRED, since IMMEDIATE would lock every attached file and it writes
 * only its own (projection-file.ts), with one writer of it per process.
 */
export type Begin = "immediate" | "deferred";

/** One transaction begun as `begin` says; a result commitIf refuses is rolled back. */
function transact<R>(db: SqliteDb, work: (db: SqliteDb) => R, options: TransactOptions<R> = {}, begin: Begin = "immediate"): R {
  try {
    return db
      .transaction(() => {
        const result = work(db);
        if (options.commitIf && !options.commitIf(result)) throw new Rollback(result);
        return result;
      })
      [begin]();
  } catch (error) {
    if (error instanceof Rollback) return (error as Rollback<R>).result;
    throw error;
  }
}

/**
 * SQLite for the ledger flows (src/ledger/): synchronous ports, so each operation runs to
 * completion inside one transaction. `current` is the open connection (index.ts swaps it when
 * SQLite kept one read-only).
 */
export function sqliteLedger(current: () => SqliteDb, begin: Begin = "immediate"): LedgerDatabaseOf<SqliteDb, "sync"> {
  return {
    mode: "sync",
    // webhooks.ts's exports are its port's primitives, checked here against LedgerPorts (no list of names to keep twice).
    ports: { accounts, batches, credits, auth, apiKeys, events, projection, windowBoards, webhooks, log, publishers, chain },
    transact: (work, options) => transact(current(), work, options, begin),
    read: (work) => work(current()),
    finalizePass: (work) => {
      const db = current();
      return db.transaction(() => work(db)).immediate();
    },
    writePass: (work) => {
      const db = current();
      return db.transaction(() => work(db)).immediate();
    },
    // A nested better-sqlite3 transaction is a savepoint: a batch that throws is rolled back alone.
    finalizeAttempt: (pass, work) => pass.transaction(() => work(pass))(),
    finalizePassBudgetMs: FINALIZE_TRANSACTION_BUDGET_MS,
    // A full disk, a read-only file or a held lock is not the batch's fault.
    isDatabaseFailure: (error) => toStoreError(error) instanceof StoreUnavailableError,
  };
}
