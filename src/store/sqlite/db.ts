import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { UNITS_PER_POINT } from "../../domain/points.js";
import { MIGRATIONS } from "./migrations/index.js";

export type SqliteDb = Database.Database;
export type SqliteStatement = Database.Statement;

export interface SqliteOptions {
  path: string;
  synchronous: "FULL" | "NORMAL";
}

/** Milliseconds a writer waits for another process's lock (e.g. `points-ledger credit` beside a server). */
const BUSY_TIMEOUT_MS = 5000;

export function openDatabase(options: SqliteOptions): SqliteDb {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${options.synchronous}`);
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.pragma("foreign_keys = ON");
  return db;
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

export function toNumber(value: unknown): number {
  return Number(value as bigint);
}

export function toNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value as bigint);
}

/** Applies pending migrations inside one IMMEDIATE transaction, so concurrent starters serialize. */
export function migrate(db: SqliteDb): void {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
  const apply = db.transaction(() => {
    const applied = new Set(
      (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((row) => row.version),
    );
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
