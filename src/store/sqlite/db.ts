import Database from "better-sqlite3";
import { mkdirSync, statfsSync } from "node:fs";
import { dirname } from "node:path";
import { InvariantViolation } from "../../domain/errors.js";
import { UNITS_PER_POINT } from "../../domain/points.js";
import { StoreUnavailableError } from "../errors.js";
import { MIGRATIONS } from "./migrations/index.js";
import { migrationStatusOf, refuseNewerSchema, type MigrationStatus } from "../migration-status.js";

export type SqliteDb = Database.Database;
export type SqliteStatement = Database.Statement;

export interface SqliteOptions {
  path: string;
  synchronous: "FULL" | "NORMAL";
}

/** Milliseconds a writer waits for another process's lock (e.g. `points-ledger credit` beside a server). */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens the database read-write. A file the process may not write still opens (SQLite falls back
 * to read-only: reads work, writes fail with SQLITE_READONLY until it is reopened, see index.ts);
 * a database SQLite cannot open at all fails here as a StoreUnavailableError naming why.
 */
export function openDatabase(options: SqliteOptions): SqliteDb {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  let db: SqliteDb | undefined;
  try {
    db = new Database(options.path);
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous}`);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    return db;
  } catch (error) {
    db?.close();
    const translated = toStoreError(error);
    if (translated instanceof StoreUnavailableError) {
      throw new StoreUnavailableError(`cannot open ${options.path}: ${translated.message}`, translated.retryAfterSeconds, { cause: error });
    }
    throw translated;
  }
}

/** Seconds a client is told to wait while SQLite is busy (another process holds the write lock). */
const BUSY_RETRY_AFTER_SECONDS = 1;
/** Seconds to wait while the database cannot write at all: an operator has to free space or fix permissions. */
const CANNOT_WRITE_RETRY_AFTER_SECONDS = 5;

/**
 * SQLite result codes (primary code, so every extended one: SQLITE_READONLY_DIRECTORY,
 * SQLITE_IOERR_WRITE, …) that mean "the database cannot serve this now" rather than a bug.
 * Each leaves the connection usable: SQLite rolls the failed transaction back.
 */
const UNAVAILABLE_CONDITIONS: Record<string, { message: string; retryAfterSeconds: number }> = {
  SQLITE_FULL: { message: "the database is full (no space left on its disk)", retryAfterSeconds: CANNOT_WRITE_RETRY_AFTER_SECONDS },
  SQLITE_READONLY: { message: "the database is read-only", retryAfterSeconds: CANNOT_WRITE_RETRY_AFTER_SECONDS },
  SQLITE_IOERR: { message: "the database cannot read or write its disk", retryAfterSeconds: CANNOT_WRITE_RETRY_AFTER_SECONDS },
  SQLITE_CANTOPEN: { message: "the database files cannot be opened", retryAfterSeconds: CANNOT_WRITE_RETRY_AFTER_SECONDS },
  SQLITE_PERM: { message: "the database files may not be written", retryAfterSeconds: CANNOT_WRITE_RETRY_AFTER_SECONDS },
  SQLITE_BUSY: { message: "the database is busy", retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS },
  SQLITE_LOCKED: { message: "the database is busy", retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS },
  SQLITE_PROTOCOL: { message: "the database is busy", retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS },
};

/** Whether `error` is one of UNAVAILABLE_CONDITIONS: the database cannot serve this now (full, read-only, busy, …). */
export function isUnavailableCondition(error: unknown): boolean {
  const code = sqliteCodeOf(error);
  return code !== undefined && code in UNAVAILABLE_CONDITIONS;
}

/** The primary SQLite result code of `error` ("SQLITE_READONLY" for SQLITE_READONLY_DIRECTORY), if any. */
export function sqliteCodeOf(error: unknown): string | undefined {
  if (!(error instanceof Database.SqliteError)) return undefined;
  const match = /^SQLITE_[A-Z]+/.exec(error.code);
  return match ? match[0] : undefined;
}

/**
 * Translates SQLite's errors for the port: conditions of UNAVAILABLE_CONDITIONS become
 * StoreUnavailableError (503 + Retry-After); a failed CHECK constraint is a broken ledger
 * invariant; anything else is passed on unchanged (a bug: 500).
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || error instanceof InvariantViolation) return error;
  const code = sqliteCodeOf(error);
  const condition = code === undefined ? undefined : UNAVAILABLE_CONDITIONS[code];
  if (condition) {
    return new StoreUnavailableError(`${condition.message} (${(error as { code: string }).code})`, condition.retryAfterSeconds, {
      cause: error,
    });
  }
  if (code === "SQLITE_CONSTRAINT" && (error as { code: string }).code === "SQLITE_CONSTRAINT_CHECK") {
    return new InvariantViolation(`a CHECK constraint failed: ${(error as Error).message}`);
  }
  return error;
}

type Operation = (...args: never[]) => Promise<unknown>;

/**
 * `target` with every method's failures passed through toStoreError, after `observe` has seen
 * the original error (index.ts reopens a connection that SQLite opened read-only); `settled`
 * hears whether each operation succeeded (index.ts hands committed events on).
 */
export function guardOperations<T extends Record<keyof T, unknown>>(
  target: T,
  observe: (error: unknown) => void,
  settled: (succeeded: boolean) => void = () => undefined,
): T {
  const guarded: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(target)) {
    if (typeof value !== "function") {
      guarded[name] = value;
      continue;
    }
    const operation = value as Operation;
    guarded[name] = async (...args: never[]) => {
      try {
        const result = await operation(...args);
        settled(true);
        return result;
      } catch (error) {
        settled(false);
        observe(error);
        throw toStoreError(error);
      }
    };
  }
  return guarded as T;
}

const statementCache = new WeakMap<SqliteDb, Map<string, SqliteStatement>>();

/**
 * Prepares `sql` once per database and returns the cached statement; every statement reads
 * integers as bigint, so amounts never pass through a float.
 */
export function statement(db: SqliteDb, sql: string): SqliteStatement {
  let cache = statementCache.get(db);
  if (!cache) {
    cache = new Map();
    statementCache.set(db, cache);
  }
  let prepared = cache.get(sql);
  if (!prepared) {
    prepared = db.prepare(sql);
    if (prepared.reader) prepared.safeIntegers(true);
    cache.set(sql, prepared);
  }
  return prepared;
}

/** Units as the (whole, fraction) pair the schema stores; small values bind as numbers. */
export function toPair(units: bigint): [number | bigint, number] {
  const whole = units / UNITS_PER_POINT;
  const fraction = Number(units % UNITS_PER_POINT);
  return [whole <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(whole) : whole, fraction];
}

export function fromPair(whole: unknown, fraction: unknown): bigint {
  return BigInt(whole as bigint) * UNITS_PER_POINT + BigInt(fraction as bigint);
}

/**
 * Whole points per unit of the `_q` limb that cumulative columns add (migration 3): they keep
 * `_w` below 10^18, so `_w` plus one amount (≤ 10^18 points) stays far below 2^63.
 */
export const WHOLE_POINTS_PER_Q = 10n ** 18n;

/** Units as the (q, whole, fraction) triple of a cumulative column. */
export function toTriple(units: bigint): [number | bigint, number | bigint, number] {
  const [whole, fraction] = toPair(units);
  const q = BigInt(whole) / WHOLE_POINTS_PER_Q;
  const rest = BigInt(whole) % WHOLE_POINTS_PER_Q;
  return [Number(q), rest <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(rest) : rest, fraction];
}

export function fromTriple(q: unknown, whole: unknown, fraction: unknown): bigint {
  return (BigInt(q as bigint) * WHOLE_POINTS_PER_Q + BigInt(whole as bigint)) * UNITS_PER_POINT + BigInt(fraction as bigint);
}

export function toNumber(value: unknown): number {
  return Number(value as bigint);
}

export function toNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value as bigint);
}

/**
 * Free space on the database's disk below which it counts as full for readiness: roughly what
 * the largest batch (10,000 transfers) adds to the WAL and the tables. Writes that still fit
 * keep being accepted; readiness warns before they start failing.
 */
const MIN_FREE_DISK_BYTES = 1024 * 1024;

/**
 * Throws StoreUnavailableError unless the database accepts writes: a committed write (so a
 * read-only file, a lost write lock or an I/O error shows) and enough free disk (WAL mode
 * reuses its file, so a small write can still succeed on a disk with no room for a batch).
 */
export function probeWrites(db: SqliteDb, path: string, nowMs: number): void {
  db.transaction(() => {
    statement(
      db,
      "INSERT INTO readiness_probe (id, probed_at_ms) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at_ms = excluded.probed_at_ms",
    ).run(nowMs);
  }).immediate();
  if (path === ":memory:") return;
  const disk = statfsSync(dirname(path), { bigint: true });
  const freeBytes = disk.bavail * disk.bsize;
  if (freeBytes < BigInt(MIN_FREE_DISK_BYTES)) {
    throw new StoreUnavailableError(`the database is full (${freeBytes} bytes free on its disk)`, CANNOT_WRITE_RETRY_AFTER_SECONDS);
  }
}

/**
 * How long one write probe's result answers readiness: /readyz may be polled many times a
 * second, and each probe is a commit (an fsync with synchronous=FULL).
 */
const READINESS_PROBE_TTL_MS = 1000;

/** probeWrites, run at most once per READINESS_PROBE_TTL_MS; its outcome (pass or error) is reused meanwhile. */
export function cachedWriteProbe(path: string): (db: SqliteDb) => void {
  let last: { atMs: number; error: unknown } | null = null;
  return (db) => {
    const nowMs = Date.now();
    if (last === null || nowMs - last.atMs >= READINESS_PROBE_TTL_MS) {
      last = { atMs: nowMs, error: null };
      try {
        probeWrites(db, path, nowMs);
      } catch (error) {
        last.error = error;
      }
    }
    if (last.error !== null) throw last.error;
  };
}

/** Shortest time between two reopenings of a connection that SQLite keeps read-only. */
const REOPEN_INTERVAL_MS = 1000;

/**
 * SQLite opens a file the process may not write read-only and keeps the connection so, even
 * after the permissions are fixed. After an operation failed with SQLITE_READONLY, `replacement`
 * opens a fresh connection (at most once per REOPEN_INTERVAL_MS) for the caller to swap in, so
 * writes recover without a restart. better-sqlite3 is synchronous: no other operation runs
 * during the swap, and the failed one has already rolled back.
 */
export class ReadOnlyRecovery {
  private reopenedAtMs = 0;

  constructor(private readonly options: SqliteOptions) {}

  replacement(error: unknown): SqliteDb | null {
    if (sqliteCodeOf(error) !== "SQLITE_READONLY") return null;
    const nowMs = Date.now();
    if (nowMs - this.reopenedAtMs < REOPEN_INTERVAL_MS) return null;
    this.reopenedAtMs = nowMs;
    try {
      return openDatabase(this.options);
    } catch {
      return null; // Still unopenable: keep the read-only connection, which serves reads.
    }
  }
}

function appliedVersions(db: SqliteDb): Set<number> {
  return new Set((db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((row) => row.version));
}

function hasMigrationsTable(db: SqliteDb): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
}

/** What `migrate` would apply, read without writing (`points-ledger migrate --status`). */
export function migrationStatus(db: SqliteDb): MigrationStatus {
  const rows = hasMigrationsTable(db)
    ? (db.prepare("SELECT version, name, applied_at_ms FROM schema_migrations").all() as {
        version: number;
        name: string;
        applied_at_ms: number;
      }[])
    : [];
  const applied = rows.map((row) => ({ version: row.version, name: row.name, appliedAtMs: row.applied_at_ms }));
  return migrationStatusOf(applied, MIGRATIONS);
}

/**
 * Applies pending migrations inside one IMMEDIATE transaction, so concurrent starters serialize.
 * An up-to-date schema is only read, so a server starts on a database it cannot write (and
 * answers reads) instead of failing to start. A schema newer than this version knows is refused
 * (SchemaTooNewError), before and inside the transaction: another process may upgrade meanwhile.
 */
export function migrate(db: SqliteDb): void {
  if (hasMigrationsTable(db)) {
    const applied = appliedVersions(db);
    refuseNewerSchema(applied, MIGRATIONS);
    if (MIGRATIONS.every((migration) => applied.has(migration.version))) return;
  }
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
  const apply = db.transaction(() => {
    const applied = appliedVersions(db);
    refuseNewerSchema(applied, MIGRATIONS);
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)").run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
  });
  apply.immediate();
}

/** An error as a worker thread sends it (structured clone keeps neither SqliteError's class nor InvariantViolation's). */
export interface WireError {
  name: string;
  message: string;
  code?: string;
}

export function toWireError(error: unknown): WireError {
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  const code = (error as { code?: unknown } | null)?.code;
  return { name, message, code: typeof code === "string" ? code : undefined };
}

/** The error a worker thread sent, as the class it had there: toStoreError then translates it as it would have. */
export function fromWireError(wire: WireError): Error {
  if (wire.code !== undefined && wire.code.startsWith("SQLITE_")) return new Database.SqliteError(wire.message, wire.code);
  if (wire.name === "InvariantViolation") return new InvariantViolation(wire.message.replace(/^ledger invariant violated: /, ""));
  return Object.assign(new Error(wire.message), { name: wire.name });
}
