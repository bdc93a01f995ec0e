/**
 * What went wrong between this process and its database, counted for /metrics
 * (points_database_errors_total, points_database_connections_discarded_total): the errors that
 * made an operation unavailable, by kind, and the pooled connections thrown away, by why. One
 * tally per process, as the database connections are; each adapter counts its own driver's
 * failures (postgres/db.ts), and the metrics read the tally at each scrape.
 */

/** The kinds an unavailable database is counted under, each a different thing to look at. */
export type DatabaseErrorKind =
  /** The connection broke or could not be opened: reset, refused, terminated by the server. */
  | "connection"
  /** The server answers but cannot write: a standby, a demoted primary, a read-only setting (SQLSTATE 25006, or seen by the readiness probe). */
  | "read_only"
  /** The server is shutting down, crashing or still starting up (SQLSTATE 57P01–57P03). */
  | "shutdown"
  /** The host stopped answering: no answer on a fresh connection either (postgres/pool-watchdog.ts), or none to a query past its bound. */
  | "vanished"
  /** A statement ran past statement_timeout (SQLSTATE 57014). */
  | "timeout"
  /** The server or the pool had no room: too many connections, out of memory or disk (class 53), no free connection in time. */
  | "overloaded"
  /** Transactions in each other's way: serialization failure, deadlock, lock not available. */
  | "conflict";

/** Every kind, so each series exists (at 0) from the first scrape and rate() sees its first increase. */
export const DATABASE_ERROR_KINDS: readonly DatabaseErrorKind[] = [
  "connection",
  "read_only",
  "shutdown",
  "vanished",
  "timeout",
  "overloaded",
  "conflict",
];

const errors = new Map<DatabaseErrorKind, number>();
const discards = new Map<DatabaseErrorKind, number>();

export function countDatabaseError(kind: DatabaseErrorKind): void {
  errors.set(kind, (errors.get(kind) ?? 0) + 1);
}

/** A pooled connection closed instead of reused, because of an error of `kind`. */
export function countDiscardedConnection(kind: DatabaseErrorKind): void {
  discards.set(kind, (discards.get(kind) ?? 0) + 1);
}

/** The counts so far, for the metrics. */
export function databaseHealthCounts(): {
  errors: ReadonlyMap<DatabaseErrorKind, number>;
  discards: ReadonlyMap<DatabaseErrorKind, number>;
} {
  return { errors, discards };
}
