import type { LedgerEvent } from "../../domain/events.js";
import type { AccountsPort } from "./accounts.js";
import type { ApiKeysPort } from "./api-keys.js";
import type { AuthPort } from "./auth.js";
import type { BatchesPort } from "./batches.js";
import type { CreditsPort } from "./credits.js";
import type { Io, Out } from "./io.js";
import type { ProjectionPort, WindowBoardsPort } from "./leaderboards.js";
import type { WebhooksPort } from "./webhooks.js";
import type { TransparencyLogPort } from "./tlog.js";
import type { PublishersPort } from "./publishers.js";
import type { ChainPort } from "./chain.js";

/** Appends events in the transition's own transaction (the outbox: an event exists iff its change committed). */
export interface EventsAppendPort<Db, out M extends Io = Io> {
  appendEvents(db: Db, events: readonly LedgerEvent[]): Out<M, void>;
}

/** Every table primitive the ledger flows use, one port per table group. */
export interface LedgerPorts<Db, out M extends Io = Io> {
  accounts: AccountsPort<Db, M>;
  batches: BatchesPort<Db, M>;
  credits: CreditsPort<Db, M>;
  auth: AuthPort<Db, M>;
  apiKeys: ApiKeysPort<Db, M>;
  events: EventsAppendPort<Db, M>;
  projection: ProjectionPort<Db, M>;
  log: TransparencyLogPort<Db, M>;
  windowBoards: WindowBoardsPort<Db, M>;
  webhooks: WebhooksPort<Db, M>;
  publishers: PublishersPort<Db, M>;
  chain: ChainPort<Db, M>;
}

export interface TransactOptions<R> {
  /** Decides from the result whether to COMMIT (default) or ROLLBACK, e.g. a refused submission. */
  commitIf?: (result: R) => boolean;
}

/**
 * One database as the flows (src/ledger/) see it: its ports, and its transactions. `M` says how
 * it answers (./io.ts); a flow is driven synchronously over a "sync" database, so a SQLite
 * operation still runs inside one synchronous transaction, and with awaits over an "async" one.
 */
export interface LedgerDatabaseOf<Db, M extends "sync" | "async"> {
  readonly mode: M;
  readonly ports: LedgerPorts<Db, M>;
  /** Runs `work` in one transaction, committed unless options.commitIf refuses its result. */
  transact<R>(work: (db: Db) => Out<M, R>, options?: TransactOptions<R>): Out<M, R>;
  /** Runs `work` outside any transaction (one statement, autocommit): the finalizer's ranking read. */
  read<R>(work: (db: Db) => Out<M, R>): Out<M, R>;
  /**
   * One finalization pass: the handle its reads and failure records use. SQLite: one write
   * transaction (its commits are what costs); PostgreSQL: the pool (each batch commits alone).
   */
  finalizePass<R>(work: (db: Db) => Out<M, R>): Out<M, R>;
  /** One batch's finalization inside a pass, atomic on its own: rolled back alone when it throws. */
  finalizeAttempt<R>(pass: Db, work: (db: Db) => Out<M, R>): Out<M, R>;
  /**
   * Runs `work` as writes that need no transaction of their own on PostgreSQL (the pool: each
   * statement commits alone, its row locks SKIP LOCKED or re-checked where it writes), and as one
   * write transaction on SQLite (one commit, the writer held without interleaving): the delivery
   * claim, single-statement writes.
   */
  writePass<R>(work: (db: Db) => Out<M, R>): Out<M, R>;
  /** Longest one pass goes on attempting batches (SQLite holds the writer and the event loop meanwhile). */
  readonly finalizePassBudgetMs: number;
  /** The database itself failed (unreachable, cannot write): not a batch's fault, so a pass stops. */
  isDatabaseFailure(error: unknown): boolean;
}

export type LedgerDatabase<Db> = LedgerDatabaseOf<Db, "sync"> | LedgerDatabaseOf<Db, "async">;
