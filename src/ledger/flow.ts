import { assertInvariant } from "../domain/errors.js";
import type { LedgerDatabase, LedgerPorts, TransactOptions } from "../store/ports/ledger.js";

/**
 * How one flow serves both databases. Each operation is written once, as a generator that yields
 * every port call's answer (`yield* io(port.call(…))`) and gets back the value. Over SQLite the
 * answers are plain values and runSync feeds them straight back: the whole operation still runs
 * synchronously inside one better-sqlite3 transaction, with no microtask between two statements
 * (the reason SQLite is fast here, and single-writer safe). Over PostgreSQL runAsync awaits each
 * answer. A flow written against `T | Promise<T>` with helpers instead would need a callback per
 * step and lose the reading order; async functions would put an await (a microtask) between
 * SQLite's statements. A generator costs one resumption per step (tens of nanoseconds).
 */
export type Flow<R> = Generator<unknown, R, unknown>;

/** A port call's answer, as the flow sees it once the driver has it. */
export function* io<T>(answer: T | Promise<T>): Generator<T | Promise<T>, T, unknown> {
  // The drivers below hand back exactly what was yielded (awaited by runAsync): a T.
  return (yield answer) as T;
}

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Drives a flow whose port calls answer synchronously, to completion, without yielding to the event loop. */
export function runSync<R>(flow: Flow<R>): R {
  let step = flow.next();
  while (!step.done) {
    assertInvariant(!isPromise(step.value), "a synchronous database answered with a promise");
    step = flow.next(step.value);
  }
  return step.value;
}

/** Drives a flow whose port calls answer with promises; a rejection is thrown into the flow, where it may be caught. */
export async function runAsync<R>(flow: Flow<R>): Promise<R> {
  let step = flow.next();
  while (!step.done) {
    let answer: unknown;
    try {
      answer = await step.value;
    } catch (error) {
      step = flow.throw(error);
      continue;
    }
    step = flow.next(answer);
  }
  return step.value;
}

/** A flow over one transaction's handle `db`, with the ports that run there. */
export type TransactionFlow<Db, R> = (ports: LedgerPorts<Db>, db: Db) => Flow<R>;

/** Runs `flow` in one transaction of `database`, driven the way the database answers. */
export function inTransaction<Db, R>(
  database: LedgerDatabase<Db>,
  flow: TransactionFlow<Db, R>,
  options?: TransactOptions<R>,
): R | Promise<R> {
  if (database.mode === "sync") return database.transact((db) => runSync(flow(database.ports, db)), options);
  return database.transact((db) => runAsync(flow(database.ports, db)), options);
}

/** Runs `flow` as one finalization pass (LedgerDatabaseOf.finalizePass). */
export function inFinalizePass<Db, R>(database: LedgerDatabase<Db>, flow: (pass: Db) => Flow<R>): R | Promise<R> {
  if (database.mode === "sync") return database.finalizePass((pass) => runSync(flow(pass)));
  return database.finalizePass((pass) => runAsync(flow(pass)));
}

/** Runs `flow` as one batch's attempt inside a pass (LedgerDatabaseOf.finalizeAttempt). */
export function inFinalizeAttempt<Db, R>(database: LedgerDatabase<Db>, pass: Db, flow: TransactionFlow<Db, R>): R | Promise<R> {
  if (database.mode === "sync") return database.finalizeAttempt(pass, (db) => runSync(flow(database.ports, db)));
  return database.finalizeAttempt(pass, (db) => runAsync(flow(database.ports, db)));
}

/** Runs `flow` as one write pass (LedgerDatabaseOf.writePass). */
export function inWritePass<Db, R>(database: LedgerDatabase<Db>, flow: TransactionFlow<Db, R>): R | Promise<R> {
  if (database.mode === "sync") return database.writePass((db) => runSync(flow(database.ports, db)));
  return database.writePass((db) => runAsync(flow(database.ports, db)));
}

/** Runs `flow` outside any transaction, each statement on its own (LedgerDatabaseOf.read). */
export function readWith<Db, R>(database: LedgerDatabase<Db>, flow: TransactionFlow<Db, R>): R | Promise<R> {
  if (database.mode === "sync") return database.read((db) => runSync(flow(database.ports, db)));
  return database.read((db) => runAsync(flow(database.ports, db)));
}
