import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Config } from "../config.js";
import { openStore } from "../ledger/open.js";
import { assertPointTypesConfigured } from "../store/point-types.js";
import type { MigrationStatus } from "../store/migration-status.js";
import { backups } from "../store/sqlite/backups.js";
import { printableDatabaseUrl } from "./startup-errors.js";
import { UsageError } from "./commands.js";

/**
 * The operator's upkeep commands (docs/operations.md): `migrate [--status]`, `backup <file>` and
 * `backup --record`.
 * They work on DATABASE_URL directly, like `verify`, while the service runs.
 */
export const OPS_USAGE = `  migrate [--status]                      bring the database schema up to date; --status lists the applied and
                                          pending migrations without applying anything
  backup <file>                           a consistent copy of the live SQLite database in <file> (a new file),
                                          taken while the service runs; its completion is recorded in the live
                                          database (/metrics). PostgreSQL: use pg_dump (docs/operations.md)
  backup --record                         records in the database that a backup made by another tool (pg_dump,
                                          pgBackRest) completed now: /metrics exports the time of the last one`;

/** Milliseconds the backup's read waits for a writer's lock (the service's commits are short). */
const BACKUP_BUSY_TIMEOUT_MS = 5000;
/**
 * Pages the backup copies per step: all of them. SQLite restarts a backup whose source another
 * connection wrote between two steps, and the service writes all the time, so a backup in small
 * steps might never finish; one step is one read transaction, a consistent copy, and in WAL mode
 * it blocks no writer.
 */
const ALL_PAGES = 0x7fffffff;

type ConfigSource = () => Config;

function parse(argv: string[], options: { status?: { type: "boolean" }; record?: { type: "boolean" } }) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function dateOf(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * SQLite and PostgreSQL number their migrations separately: SQLite has steps PostgreSQL does not
 * need (a readiness table, points as integer limbs, the projection moved to its own file), so a
 * release's SQLite schema version is higher than its PostgreSQL one (docs/operations.md).
 */
const NUMBERING_NOTE =
  "(SQLite and PostgreSQL number their migrations separately, SQLite having steps PostgreSQL does not need: the same release shows a higher version on SQLite)";

function statusLines(status: MigrationStatus, where: string): string[] {
  const summary =
    status.unknown.length > 0
      ? `schema version ${status.databaseVersion}, newer than this version knows (${status.knownVersion}): this version will not start on it`
      : status.pending.length === 0
        ? `schema version ${status.databaseVersion}, up to date`
        : `schema version ${status.databaseVersion}, ${status.pending.length} migration(s) pending (this version knows ${status.knownVersion})`;
  const lines = [`${where}: ${summary}`];
  for (const migration of status.applied)
    lines.push(`applied  ${String(migration.version).padStart(3)}  ${migration.name}  ${dateOf(migration.appliedAtMs)}`);
  for (const migration of status.unknown) {
    lines.push(
      `unknown  ${String(migration.version).padStart(3)}  ${migration.name}  ${dateOf(migration.appliedAtMs)}  (applied by a newer version)`,
    );
  }
  for (const migration of status.pending) lines.push(`pending  ${String(migration.version).padStart(3)}  ${migration.name}`);
  lines.push(NUMBERING_NOTE);
  return lines;
}

/** The status read without writing: a SQLite file that does not exist yet is not created. */
async function readMigrationStatus(config: Config): Promise<MigrationStatus> {
  if (config.databaseUrl.startsWith("sqlite:")) {
    const path = config.databaseUrl.slice("sqlite:".length);
    const [{ default: Database }, { migrationStatus }] = await Promise.all([import("better-sqlite3"), import("../store/sqlite/db.js")]);
    // No file yet: every migration is pending (an empty database says so without creating one).
    // Not opened read-only: a read-only connection would leave the WAL's files behind it.
    const db = existsSync(path) ? new Database(path, { fileMustExist: true }) : new Database(":memory:");
    try {
      db.pragma(`busy_timeout = ${BACKUP_BUSY_TIMEOUT_MS}`);
      return migrationStatus(db);
    } finally {
      db.close();
    }
  }
  const { createPool, migrationStatus } = await import("../store/postgres/db.js");
  const pool = createPool({ connectionString: config.databaseUrl, poolSize: 1, statementTimeoutMs: config.pgStatementTimeoutMs });
  try {
    return await migrationStatus(pool);
  } finally {
    await pool.end();
  }
}

async function migrate(argv: string[], config: ConfigSource): Promise<number> {
  const { values, positionals } = parse(argv, { status: { type: "boolean" } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const settings = config();
  const where = printableDatabaseUrl(settings.databaseUrl);
  if (values.status) {
    const status = await readMigrationStatus(settings);
    console.log(statusLines(status, where).join("\n"));
    return status.unknown.length > 0 ? 1 : 0;
  }
  const before = await readMigrationStatus(settings);
  const store = await openStore(settings);
  try {
    await store.migrate();
    // As serve does: a POINT_TYPES that drops a type the ledger holds is refused (exit 2, naming it).
    await assertPointTypesConfigured(store, settings.pointTypes);
  } finally {
    await store.close();
  }
  console.log(migratedLine(store.kind, before));
  return 0;
}

/** What `migrate` did, from the status read before it: how many it applied, or that there was nothing to do. */
function migratedLine(kind: string, before: MigrationStatus): string {
  const count = before.pending.length;
  if (count === 0) return `schema of the ${kind} database was already up to date (version ${before.databaseVersion}): nothing applied`;
  const applied = `${count} migration${count === 1 ? "" : "s"}`;
  return `applied ${applied} to the ${kind} database (version ${before.databaseVersion} → ${before.knownVersion}): its schema is up to date`;
}

/** Flushes `path` (a file or a folder) to the disk: SQLite's backup does not sync a rename. */
function fsyncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function hasTable(db: import("better-sqlite3").Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * The copy is another copy of the ledger: a new ledger_id (SQLite migration 19), so a service
 * started on it rebuilds the read models' projection file from its own batches rather than use a
 * projection file left beside it by the live ledger, which may count batches the copy lacks
 * (src/store/sqlite/projection-file.ts). A copy older than that migration gets it at its start.
 * Its transparency log begins a new epoch at its first start (new_epoch_due, SQLite migration 21).
 * Its last backup is itself (backup_state, SQLite migration 23): restored, it tells by its age how
 * old the restored data is, until the next backup of it.
 */
function newLedgerCopy(Database: typeof import("better-sqlite3"), path: string, copiedAtMs: number): void {
  const copy = new Database(path);
  try {
    const hasId = copy.prepare("SELECT 1 FROM pragma_table_info('projection_state') WHERE name = 'ledger_id'").get() !== undefined;
    if (hasId) copy.exec("UPDATE projection_state SET ledger_id = lower(hex(randomblob(16))), through_ms = 0");
    // Started, the copy begins a new epoch of the transparency log (domain/log-epoch.ts): the live
    // log goes on past it, and a copy that logged new events as the same log would rewrite history.
    const hasEpochs = copy.prepare("SELECT 1 FROM pragma_table_info('log_state') WHERE name = 'new_epoch_due'").get() !== undefined;
    if (hasEpochs) copy.exec("UPDATE log_state SET new_epoch_due = 1");
    if (hasTable(copy, "backup_state")) copy.transaction(() => backups.recordBackup(copy, copiedAtMs)).immediate();
  } finally {
    copy.close();
  }
}

/**
 * Records the backup just written in the live database, once the copy is whole on disk: the
 * record is what PointsLedgerBackupTooOld watches. Returns why it could not, or null.
 */
function recordBackupIn(source: import("better-sqlite3").Database): string | null {
  // A schema from before the record (SQLite migration 23): the copy is good, but nothing watches it.
  if (!hasTable(source, "backup_state")) return "its schema predates the record; run points-ledger migrate";
  try {
    source.transaction(() => backups.recordBackup(source, Date.now())).immediate();
    return null;
  } catch (error) {
    // Locked past the busy timeout, or read-only: the copy stands, the next backup records.
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * Copies the SQLite database at `sourcePath` into `file`, through a temporary file renamed at
 * the end, so `file` is either the whole consistent copy or absent.
 */
async function backupSqlite(
  sourcePath: string,
  file: string,
): Promise<{ pages: number; schemaVersion: number; notRecorded: string | null }> {
  const { default: Database } = await import("better-sqlite3");
  // Never created here: a backup of a mistyped path must not make an empty database.
  const source = new Database(sourcePath, { fileMustExist: true });
  const partial = join(dirname(file), `.${basename(file)}.partial-${process.pid}`);
  try {
    source.pragma(`busy_timeout = ${BACKUP_BUSY_TIMEOUT_MS}`);
    if (!hasTable(source, "schema_migrations"))
      throw new UsageError(`${sourcePath} is not a points-ledger database (no schema_migrations table)`);
    const { version } = source.prepare("SELECT coalesce(max(version), 0) AS version FROM schema_migrations").get() as { version: number };
    const { totalPages } = await source.backup(partial, { progress: () => ALL_PAGES });
    newLedgerCopy(Database, partial, Date.now());
    fsyncPath(partial);
    renameSync(partial, file);
    fsyncPath(dirname(resolve(file)));
    return { pages: totalPages, schemaVersion: version, notRecorded: recordBackupIn(source) };
  } finally {
    source.close();
    rmSync(partial, { force: true });
  }
}

async function backup(argv: string[], config: ConfigSource): Promise<number> {
  const { values, positionals } = parse(argv, { record: { type: "boolean" } });
  const [file, extra] = positionals;
  if (values.record) {
    if (file !== undefined) throw new UsageError(`backup --record takes no <file> (unexpected ${file})`);
    return recordExternalBackup(config());
  }
  if (file === undefined) throw new UsageError("missing <file>");
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`);
  const settings = config();
  if (!settings.databaseUrl.startsWith("sqlite:")) {
    console.error(
      'points-ledger: backup copies a SQLite database; for PostgreSQL use its own tools: pg_dump --format=custom --file=<file> "$DATABASE_URL" for a logical copy, or base backups with WAL archiving for point-in-time recovery, then points-ledger backup --record (docs/operations.md)',
    );
    return 2;
  }
  const sourcePath = settings.databaseUrl.slice("sqlite:".length);
  if (sourcePath === ":memory:") throw new UsageError("DATABASE_URL=sqlite::memory: has nothing on disk to back up");
  if (existsSync(file)) {
    console.error(`points-ledger: ${file} already exists: a backup never overwrites a file; name a new one`);
    return 2;
  }
  if (!existsSync(dirname(resolve(file)))) {
    console.error(`points-ledger: the folder of ${file} does not exist`);
    return 2;
  }
  if (!existsSync(sourcePath)) {
    console.error(`points-ledger: there is no SQLite database at ${sourcePath} (DATABASE_URL=${settings.databaseUrl})`);
    return 1;
  }
  const startedMs = performance.now();
  const { pages, schemaVersion, notRecorded } = await backupSqlite(sourcePath, file);
  const bytes = statSync(file).size;
  const ms = Math.round(performance.now() - startedMs);
  console.log(`backed up ${sourcePath} to ${file}: ${pages} pages, ${bytes} bytes, schema version ${schemaVersion}, in ${ms} ms`);
  if (notRecorded === null) return 0;
  console.error(`points-ledger: the backup is written but was not recorded in the database (${notRecorded})`);
  return 1;
}

/**
 * `backup --record`: an operator's own backup (pg_dump, pgBackRest, a file-system snapshot)
 * completed just now; run it after that tool succeeded (`pg_dump … && points-ledger backup --record`).
 * Written into the database the service reads, whose /metrics then exports the time.
 */
async function recordExternalBackup(settings: Config): Promise<number> {
  const where = printableDatabaseUrl(settings.databaseUrl);
  if (settings.databaseUrl.startsWith("sqlite:") && !existsSync(settings.databaseUrl.slice("sqlite:".length))) {
    console.error(`points-ledger: there is no SQLite database at ${where}: nothing to record a backup in`);
    return 1;
  }
  const status = await readMigrationStatus(settings);
  if (status.pending.length > 0 || status.unknown.length > 0) {
    console.error(`points-ledger: ${statusLines(status, where)[0]}: run points-ledger migrate (the service does at its start) first`);
    return 1;
  }
  const store = await openStore(settings);
  try {
    const completedAtMs = Date.now();
    await store.recordBackup(completedAtMs);
    console.log(`recorded a backup of ${where} completed at ${dateOf(completedAtMs)}`);
  } finally {
    await store.close();
  }
  return 0;
}

/** `migrate` and `backup`, by name; their own options. */
export const opsCommands: Record<string, (argv: string[], config: ConfigSource) => Promise<number>> = { migrate, backup };
