import pg from "pg";
import { InvariantViolation, validationFailed } from "../../domain/errors.js";
import type { LedgerEvent } from "../../domain/events.js";
import { CommittedEvents } from "../committed-events.js";
import { StoreUnavailableError } from "../errors.js";
import { countDatabaseError, countDiscardedConnection, type DatabaseErrorKind } from "../database-health.js";
import { isVanishedHostError, watchForVanishedHost } from "./pool-watchdog.js";
import { MIGRATIONS } from "./migrations/index.js";
import { migrationStatusOf, refuseNewerSchema, type MigrationStatus } from "../migration-status.js";

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;
/** Anything that runs a query: the pool (one statement, autocommit) or a client inside a transaction. */
export type Queryable = pg.Pool | pg.PoolClient;

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  statementTimeoutMs: number;
}

/**
 * How long a caller waits for a connection (a free one, or a new one being opened) before the
 * request is answered 503 + Retry-After. The wait is bounded by time, not by how many wait: the
 * HTTP layer's admission (MAX_IN_FLIGHT_REQUESTS, queueing time) is the one bound on how many
 * requests are in progress, and a count below it refused 29 of 200 concurrent reads right after
 * a restart while the pool was still opening its connections (issue 19). A request that has not
 * had a connection within this is better told to retry than kept waiting.
 */
const POOL_WAIT_TIMEOUT_MS = 2000;
/**
 * Client-side bound on one query, past the server's statement_timeout: the server would have
 * cancelled the statement by then, so an answer that has not come means this one connection is
 * dead while the server still answers others (a vanished host is caught sooner, in seconds, by
 * pool-watchdog.ts, which asks the server on a fresh connection). The query fails as unavailable
 * and its connection is discarded instead of hanging forever.
 */
const QUERY_TIMEOUT_MARGIN_MS = 3000;
/**
 * TCP keepalive on every connection, first probe after this much silence (then, as libuv sets
 * them, one probe a second, ten of them): an idle pooled connection to a host that vanished
 * without a reset is closed in about 12 s instead of the system's two hours, so the pool opens a
 * new one rather than handing out a dead one.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 2000;
/** Idle connections are closed after this, so a quiet instance gives its connections back. */
const IDLE_TIMEOUT_MS = 30_000;
/** Seconds a client is told to wait (Retry-After) when the database is unreachable or overloaded. */
const RETRY_AFTER_SECONDS = 1;
/** Key of the advisory lock that serializes migrations across processes; any constant unique to this service. */
const MIGRATION_LOCK_KEY = "7061221907";

/**
 * Clients whose connection failed, with the failure. pg marks such a client unqueryable and the
 * pool discards it when it is released with an error (transaction() passes this one) or when the
 * failure reaches it idle; it is never handed out again.
 */
const lostConnections = new WeakMap<pg.PoolClient, Error>();

/**
 * Settings of every session, sent in the start-up packet's `options` before the URL's own
 * `options` (which pg would otherwise let replace them), so a URL can still set each one back:
 *
 * - `jit=off`: the service's statements are index reads and writes of a few ms, and PostgreSQL
 *   JIT-compiles any statement whose estimate passes jit_above_cost, however cheap it really is.
 *   A balance asOf (history.ts: its straddling-day part is costed as if it read every transfer
 *   of its batches) spent 24 ms of 52 compiling, on every call; p50 20.7 → 0.61 ms, and each
 *   page of a snapshot asOf likewise (docs/performance.md, 10,000,000 transfers).
 */
const SESSION_OPTIONS = "-c jit=off";

function withSessionOptions(connectionString: string): { connectionString: string; options: string } {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return { connectionString, options: SESSION_OPTIONS };
  }
  const own = url.searchParams.get("options");
  url.searchParams.delete("options");
  return { connectionString: url.toString(), options: own ? `${SESSION_OPTIONS} ${own}` : SESSION_OPTIONS };
}

export function createPool(options: PostgresOptions): PgPool {
  const connection: pg.ClientConfig = {
    ...withSessionOptions(options.connectionString),
    // Sent in the start-up packet, so it holds for every statement of every connection.
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
    // A process that stalls mid-transaction must not hold ledger row locks forever.
    idle_in_transaction_session_timeout: options.statementTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  };
  const pool = new pg.Pool({
    ...connection,
    max: options.poolSize,
    // Also the bound on opening a new connection: a host that does not answer costs this, not TCP's minutes.
    connectionTimeoutMillis: POOL_WAIT_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
  });
  // An idle client whose connection drops (server restart, network) is discarded by the pool;
  // without a listener the 'error' event would crash the process. It is counted, not logged: the
  // next operation that needs the database reports the outage (src/http/outage-log.ts).
  pool.on("error", (error) => countDiscardedConnection(errorKindOf(error) ?? "connection"));
  // pg-pool closes a client released with an error (transaction() passes the ones that must not be reused).
  pool.on("release", (error: Error | undefined) => {
    if (error) countDiscardedConnection(errorKindOf(error) ?? "connection");
  });
  watchForVanishedHost(pool, connection);
  // pg-pool emits 'connect' once per client, synchronously, before it first hands the client out
  // (and before that, while connecting, errors go to the connect callback), so from here on the
  // client is never without an 'error' listener. The pool's own listener is attached only while
  // the client is idle, and a caller's only once its pool.connect() promise resumes: one socket
  // read can carry both the ReadyForQuery that hands the client to a waiting caller and the FATAL
  // of a terminated backend, and in that gap an unheard 'error' crashed the process.
  pool.on("connect", (client) => {
    client.on("error", (error: Error) => lostConnections.set(client, error));
  });
  return pool;
}

/** SQLSTATE classes and codes that mean "try again later", not "your request is wrong", by kind. */
const TRANSIENT_SQLSTATES = new Map<string, DatabaseErrorKind>([
  ["40001", "conflict"], // serialization_failure
  ["40P01", "conflict"], // deadlock_detected
  ["55P03", "conflict"], // lock_not_available
  ["57014", "timeout"], // query_canceled: statement_timeout
  ["57P01", "shutdown"], // admin_shutdown (also pg_terminate_backend)
  ["57P02", "shutdown"], // crash_shutdown
  ["57P03", "shutdown"], // cannot_connect_now: starting up, shutting down, in recovery without hot standby
  // read_only_sql_transaction: the server behind the address is a standby or a demoted primary (a
  // failover in progress, a proxy or DNS name on the wrong node). Our own statements never write in
  // a READ ONLY transaction (the tests would say so), so it always means the server cannot write.
  ["25006", "read_only"],
]);
/**
 * Errors after which a connection is closed, never reused: it reached a server that cannot write
 * (after a failover the same server stays a standby; a new connection may reach the new primary)
 * or that is going away. Connection errors (isConnectionError) are discarded too.
 */
const DISCARDING_KINDS: ReadonlySet<DatabaseErrorKind> = new Set(["read_only", "shutdown", "connection", "vanished"]);
const TRANSIENT_SQLSTATE_CLASSES = ["08", "53"]; // connection exception, insufficient resources
const NETWORK_ERROR_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EPIPE", "EHOSTUNREACH", "EAI_AGAIN"]);
/** node-postgres reports a lost or unobtainable connection as a plain Error with one of these messages. */
const CONNECTION_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error",
  "Client was closed and is not queryable",
  "Query read timeout", // query_timeout: no answer at all, past statement_timeout
];

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (isVanishedHostError(error)) return true;
  // A FATAL error (57P01 from pg_terminate_backend, a shutdown) means the server ends the session.
  const severity = (error as { severity?: unknown }).severity;
  if (severity === "FATAL" || severity === "PANIC") return true;
  const code = codeOf(error);
  if (code !== undefined && NETWORK_ERROR_CODES.has(code)) return true;
  if (code !== undefined && TRANSIENT_SQLSTATE_CLASSES.includes(code.slice(0, 2)) && code.length === 5) return true;
  return CONNECTION_MESSAGES.some((message) => error.message.includes(message));
}

/** Why the database was unavailable to `error`, or undefined when the error is not about availability. */
export function errorKindOf(error: unknown): DatabaseErrorKind | undefined {
  const code = codeOf(error);
  const byCode = code === undefined ? undefined : TRANSIENT_SQLSTATES.get(code);
  if (byCode !== undefined) return byCode;
  if (!isConnectionError(error)) return undefined;
  const message = (error as Error).message;
  if (isVanishedHostError(error) || message.includes("Query read timeout")) return "vanished";
  if (code?.startsWith("53") || message.includes("timeout exceeded when trying to connect")) return "overloaded";
  return "connection";
}

/**
 * A connection that saw `error` must be closed rather than handed out again: the connection
 * failed, or its server cannot write or is going away. The database's failure, not the request's.
 */
export function mustDiscard(error: unknown): boolean {
  const kind = errorKindOf(error);
  return kind !== undefined && DISCARDING_KINDS.has(kind);
}

/** Errors already counted in points_database_errors_total (one failure can be translated twice: a transaction inside a guarded operation). */
const countedErrors = new WeakSet<object>();

/**
 * Data exceptions (SQLSTATE class 22) that only text sent by a client can cause: PostgreSQL
 * cannot store it, so the request is refused as invalid instead of failing as a 500. Input
 * validation should have refused it first; this is the last line. Other class 22 codes stay
 * internal errors: 22003 numeric overflow or 22012 division by zero would be this service's bug.
 */
const CLIENT_TEXT_SQLSTATES = new Map([
  ["22021", "contains characters the database cannot store (e.g. NUL)"], // character_not_in_repertoire
  ["22P05", "contains characters the database cannot store (e.g. NUL)"], // untranslatable_character
  ["22001", "contains a value longer than the database can store"], // string_data_right_truncation
  ["22P02", "contains a value the database cannot read"], // invalid_text_representation
]);

/**
 * Translates driver errors into the store's vocabulary: unreachable or overloaded database →
 * StoreUnavailableError (503 + Retry-After); a violated CHECK constraint is a broken ledger
 * invariant; text the database cannot take is a 400; anything else is passed on unchanged.
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || error instanceof InvariantViolation) return error;
  const code = codeOf(error);
  const kind = errorKindOf(error);
  if (kind !== undefined) {
    if (!countedErrors.has(error as object)) countDatabaseError(kind);
    countedErrors.add(error as object);
    const reason = error instanceof Error ? error.message : String(error);
    return new StoreUnavailableError(`the database is unavailable: ${reason}`, RETRY_AFTER_SECONDS, { cause: error });
  }
  if (code === "23514") {
    return new InvariantViolation(`a CHECK constraint failed: ${(error as Error).message}`);
  }
  const refusal = code === undefined ? undefined : CLIENT_TEXT_SQLSTATES.get(code);
  if (refusal !== undefined) return validationFailed([{ path: "(request)", message: refusal }]);
  return error;
}

/**
 * Runs `work`, rethrowing failures as store errors (see toStoreError): a caller that waited
 * POOL_WAIT_TIMEOUT_MS for a connection gets StoreUnavailableError (503 + Retry-After).
 */
export async function guard<T>(pool: PgPool, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toStoreError(error);
  }
}

/**
 * Every operation of `operations` guarded as one: the ledger's flows (src/ledger/), each argument
 * passed on whole (an optional one, like the actor, cannot be dropped by a wrapper that lists them).
 */
export function guardEach<T extends Record<keyof T, (...args: never[]) => Promise<unknown>>>(pool: PgPool, operations: T): T {
  const guarded: Record<string, unknown> = {};
  for (const [name, operation] of Object.entries<(...args: never[]) => Promise<unknown>>(operations)) {
    guarded[name] = (...args: never[]) => guard(pool, () => operation(...args));
  }
  return guarded as T;
}

/**
 * The advisory lock of one job in this service's schema: advisory locks belong to the database,
 * not to a schema, so two services (or two test files) in two schemas of one database would
 * otherwise take each other's job locks, and a tried step would be skipped for another
 * service's work. A hash collision between two schemas only makes them take turns.
 */
const SCHEMA_LOCK = "hashtextextended(current_schema() || ':' || $1, 0)";

/** Takes the transaction advisory lock `key` (of this schema) if no other transaction holds it, never waiting: a step another instance is taking is skipped. */
export async function tryTransactionLock(db: Queryable, name: string, key: string): Promise<boolean> {
  const { rows } = await db.query<{ claimed: boolean }>({
    name,
    text: `SELECT pg_try_advisory_xact_lock(${SCHEMA_LOCK}) AS claimed`,
    values: [key],
  });
  return rows[0]!.claimed;
}

/** Waits for the transaction advisory lock `key` of this schema (tryTransactionLock's). */
export async function transactionLock(db: Queryable, name: string, key: string): Promise<void> {
  await db.query({ name, text: `SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`, values: [key] });
}

export interface TransactionOptions<T> {
  /** Decides from the result whether to COMMIT (default) or ROLLBACK, e.g. a refused submission. */
  commitIf?: (result: T) => boolean;
  isolation?: "READ COMMITTED" | "REPEATABLE READ";
  readOnly?: boolean;
  /** A snapshot another open transaction exported (pg_export_snapshot()): this one reads the same database state. */
  snapshot?: string;
}

/** What pg_export_snapshot() returns, e.g. 00000003-0000001B-1 (SET TRANSACTION SNAPSHOT takes no parameter). */
const EXPORTED_SNAPSHOT = /^[0-9A-F]+(-[0-9A-F]+)+$/i;

/**
 * Runs `work` in one transaction on one pooled connection. A connection that failed, or whose
 * server cannot write or is going away (mustDiscard), is destroyed rather than returned to the
 * pool: failures seen here, and any 'error' event the client emitted
 * while checked out (connection lost between two statements, or before this call resumed; the
 * listener createPool attaches records it), are passed to release().
 */
/** Events appended by a transaction in progress, by its connection; handed on at COMMIT, dropped at ROLLBACK. */
const appendedEvents = new WeakMap<PgClient, LedgerEvent[]>();
/** Per pool (one store), the listeners of events its transactions committed. */
const committedEvents = new WeakMap<PgPool, CommittedEvents>();

/** Records events appended inside the transaction on `client` (events.ts appendEvents). */
export function noteAppendedEvents(client: PgClient, events: readonly LedgerEvent[]): void {
  appendedEvents.set(client, [...(appendedEvents.get(client) ?? []), ...events]);
}

export function committedEventsOf(pool: PgPool): CommittedEvents {
  let events = committedEvents.get(pool);
  if (!events) {
    events = new CommittedEvents();
    committedEvents.set(pool, events);
  }
  return events;
}

export async function transaction<T>(
  pool: PgPool,
  work: (client: PgClient) => Promise<T>,
  options: TransactionOptions<T> = {},
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const mode = `${options.isolation ?? "READ COMMITTED"}${options.readOnly ? " READ ONLY" : ""}`;
    await client.query(`BEGIN ISOLATION LEVEL ${mode}`);
    if (options.snapshot !== undefined) {
      if (!EXPORTED_SNAPSHOT.test(options.snapshot)) throw new Error(`not an exported snapshot: ${options.snapshot}`);
      await client.query(`SET TRANSACTION SNAPSHOT '${options.snapshot}'`);
    }
    const result = await work(client);
    const commit = !options.commitIf || options.commitIf(result);
    await client.query(commit ? "COMMIT" : "ROLLBACK");
    const appended = appendedEvents.get(client);
    if (commit && appended) committedEventsOf(pool).emit(appended);
    return result;
  } catch (error) {
    if (!lostConnections.has(client) && !mustDiscard(error)) {
      await client.query("ROLLBACK").catch((rollbackError: Error) => {
        broken = rollbackError;
      });
    } else {
      broken = error as Error;
    }
    throw error;
  } finally {
    appendedEvents.delete(client);
    client.release(lostConnections.get(client) ?? broken);
  }
}

/**
 * Readiness (GET /readyz, points_database_up): the server answers and a write would succeed, so
 * a standby, or a primary set read-only, is not ready although it answers SELECT 1 (behind a
 * proxy or DNS name that points at the wrong node mid-failover, every write failed while
 * readiness said 200). The connection that found a server unable to write is discarded, as a
 * write's would be (25006), and the failure is the store's 503.
 */
export async function probeWrites(pool: PgPool): Promise<void> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    const { rows } = await client.query<{ recovery: boolean; read_only: string }>(
      "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only",
    );
    const why = rows[0]!.recovery ? "a standby (in recovery)" : rows[0]!.read_only === "on" ? "set read-only" : null;
    if (why !== null) failure = Object.assign(new Error(`the database server cannot write: it is ${why}`), { code: "25006" });
  } catch (error) {
    failure = error as Error;
  } finally {
    client.release(lostConnections.get(client) ?? failure);
  }
  if (failure) throw failure;
}

/** NUMERIC(40,0) columns arrive as decimal strings; they become bigint without touching a float. */
export function toUnits(value: unknown): bigint {
  if (typeof value !== "string" || !/^[0-9]+$/.test(value)) {
    throw new InvariantViolation(`not a non-negative integer amount: ${String(value)}`);
  }
  return BigInt(value);
}

/** BIGINT columns arrive as strings; epoch milliseconds fit a double exactly. */
export function toNumber(value: unknown): number {
  return Number(value as string);
}

export function toNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value as string);
}

/** What `migrate` would apply, read without writing (`points-ledger migrate --status`). */
export async function migrationStatus(pool: PgPool): Promise<MigrationStatus> {
  const { rows: tables } = await pool.query<{ found: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS found");
  const { rows } = tables[0]?.found
    ? await pool.query<{ version: number; name: string; applied_at_ms: string }>(
        "SELECT version, name, applied_at_ms FROM schema_migrations",
      )
    : { rows: [] };
  const applied = rows.map((row) => ({ version: row.version, name: row.name, appliedAtMs: toNumber(row.applied_at_ms) }));
  return migrationStatusOf(applied, MIGRATIONS);
}

/**
 * Applies pending migrations in one transaction holding an advisory lock, so processes that
 * start at the same time apply each migration once; the others wait, then find nothing to do.
 * A schema newer than this version knows is refused (SchemaTooNewError) before anything runs.
 */
export async function migrate(pool: PgPool): Promise<void> {
  await transaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)",
    );
    const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
    const applied = new Set(rows.map((row) => row.version));
    refuseNewerSchema(applied, MIGRATIONS);
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query("INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)", [
        migration.version,
        migration.name,
        Date.now(),
      ]);
    }
  });
}
