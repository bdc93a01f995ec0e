import type { LedgerEvent } from "../../domain/events.js";
import type { EventsAppendPort, LedgerDatabaseOf } from "../ports/ledger.js";
import * as accounts from "./accounts.js";
import * as apiKeys from "./api-keys.js";
import * as auth from "./auth.js";
import * as batches from "./batches.js";
import * as credits from "./credits.js";
import { mustDiscard, transaction, type PgClient, type PgPool, type Queryable } from "./db.js";
import { appendEvents } from "./events.js";
import { projection } from "./leaderboard-projection.js";
import { windowBoards } from "./leaderboard-windows.js";
import * as webhooks from "./webhooks.js";
import { postgresTransparencyLog as log } from "./tlog.js";
import { postgresPublishers as publishers } from "./publishers.js";
import { postgresChain as chain } from "./chain.js";

/** A client checked out of the pool (a transaction's), rather than the pool itself. */
function isClient(db: Queryable): db is PgClient {
  return typeof (db as Partial<PgClient>).release === "function";
}

const events = {
  appendEvents: async (db: Queryable, appended: readonly LedgerEvent[]) => {
    // Events leave at COMMIT (db.ts transaction): an append outside a transaction would leave at once.
    if (!isClient(db)) throw new Error("events are appended inside a transaction");
    await appendEvents(db, appended);
  },
} satisfies EventsAppendPort<Queryable, "async">;

/**
 * PostgreSQL for the ledger flows (src/ledger/): ports answer with promises, each transaction
 * runs on one pooled client, and several processes share the database (row locks, SKIP LOCKED).
 */
export function postgresLedger(pool: PgPool): LedgerDatabaseOf<Queryable, "async"> {
  return {
    mode: "async",
    // Each table file's exports are its port's primitives, checked here against LedgerPorts (no list of names kept
    // beside the port's); projection, windowBoards and log are still objects of their files.
    ports: { accounts, batches, credits, auth, apiKeys, events, projection, windowBoards, webhooks, log, publishers, chain },
    transact: (work, options) => transaction(pool, work, options),
    read: (work) => work(pool),
    // Each batch commits alone (finalizeAttempt), so the pass itself holds no transaction: its
    // failure records are single statements on the pool.
    finalizePass: (work) => work(pool),
    finalizeAttempt: (_pass, work) => transaction(pool, work),
    writePass: (work) => work(pool),
    // No budget: nothing is held across batches, and several instances share the work.
    finalizePassBudgetMs: Number.POSITIVE_INFINITY,
    // A lost connection, or a server that cannot write (a standby) or is going away, is the
    // database's failure, not the batch's: the pass fails and no failure is recorded on the batch.
    isDatabaseFailure: mustDiscard,
  };
}
