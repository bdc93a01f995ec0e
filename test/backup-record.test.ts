/**
 * Issue 38, "the last backup older than a bound": the backup leaves something to watch. A backup
 * records its completion time in the database it copied (`points-ledger backup <file>` on SQLite;
 * `points-ledger backup --record` after an operator's own pg_dump or pgBackRest run, on either
 * database), and the running service's /metrics exports it as
 * points_backup_last_success_timestamp_seconds (0 before any), which PointsLedgerBackupTooOld
 * watches (deploy/alerts.yml). Against the real built server and CLI; the PostgreSQL part skips
 * without DATABASE_URL_TEST.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backups as postgresBackups } from "../src/store/postgres/backups.js";
import { backups as sqliteBackups } from "../src/store/sqlite/backups.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { assertBuilt, newAdminToken, runCli, sqliteUrl, startServerProcess, tempDir, type ServerProcess } from "./helpers/process.js";

const run = promisify(execFile);
const METRIC = "points_backup_last_success_timestamp_seconds";

/** The metric's value on the server's /metrics, or undefined when it is not exported. */
async function lastBackupSeconds(server: ServerProcess): Promise<number | undefined> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = new RegExp(`^${METRIC} (\\S+)$`, "m").exec(text);
  return line ? Number(line[1]) : undefined;
}

/** Runs `backup` with `args` and returns its completion window in Unix seconds (the command's start and end). */
async function timedBackup(args: string[], databaseUrl: string): Promise<{ fromSeconds: number; toSeconds: number; stdout: string }> {
  const fromSeconds = Date.now() / 1000;
  const result = await runCli(["backup", ...args], { DATABASE_URL: databaseUrl });
  expect(result.code, result.stdout + result.stderr).toBe(0);
  return { fromSeconds, toSeconds: Date.now() / 1000, stdout: result.stdout };
}

describe("the backup record (SQLite)", () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    assertBuilt();
    dir = tempDir("backup-record");
    server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: newAdminToken() });
  }, 30_000);
  afterAll(async () => {
    await server?.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("/metrics says 0 before any backup, then the time `backup <file>` completed; the copy records itself as its last backup", async () => {
    expect(await lastBackupSeconds(server)).toBe(0);
    const file = join(dir, "copy.db");
    const { fromSeconds, toSeconds } = await timedBackup([file], sqliteUrl(dir));
    const recorded = await lastBackupSeconds(server);
    expect(recorded).toBeGreaterThanOrEqual(fromSeconds);
    expect(recorded).toBeLessThanOrEqual(toSeconds);

    const copy = new Database(file, { readonly: true });
    try {
      const copied = copy.prepare("SELECT last_success_at_ms FROM backup_state").pluck().get() as number;
      expect(copied / 1000).toBeGreaterThanOrEqual(fromSeconds);
      expect(copied / 1000).toBeLessThanOrEqual(recorded!);
    } finally {
      copy.close();
    }
  });

  it("`backup --record` records another tool's backup now, and the time never moves back", async () => {
    const before = (await lastBackupSeconds(server))!;
    const { fromSeconds, toSeconds, stdout } = await timedBackup(["--record"], sqliteUrl(dir));
    expect(stdout).toMatch(/^recorded a backup of sqlite:\S+ completed at \d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    const recorded = (await lastBackupSeconds(server))!;
    expect(recorded).toBeGreaterThanOrEqual(Math.max(before, fromSeconds));
    expect(recorded).toBeLessThanOrEqual(toSeconds);

    // A late record of an older backup (through the adapter, as a clock set back would) changes nothing.
    const db = new Database(join(dir, "ledger.db"));
    try {
      db.transaction(() => sqliteBackups.recordBackup(db, 1000)).immediate();
    } finally {
      db.close();
    }
    expect(await lastBackupSeconds(server)).toBe(recorded);
  });

  it("`backup --record` refuses a database that does not exist or is not migrated, creating nothing; an unrecorded backup exits 1", async () => {
    const missing = await runCli(["backup", "--record"], { DATABASE_URL: sqliteUrl(dir, "nothing.db") });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("there is no SQLite database at");
    expect(existsSync(join(dir, "nothing.db"))).toBe(false);

    const empty = new Database(join(dir, "empty.db"));
    empty.close();
    const unmigrated = await runCli(["backup", "--record"], { DATABASE_URL: sqliteUrl(dir, "empty.db") });
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toMatch(/migration\(s\) pending .*: run points-ledger migrate/);

    const both = await runCli(["backup", "--record", join(dir, "x.db")], { DATABASE_URL: sqliteUrl(dir) });
    expect(both.code).toBe(2);
    expect(existsSync(join(dir, "x.db"))).toBe(false);

    // A database without the record's table (a schema from before it): the copy is written, the
    // command says it was not recorded and exits 1, so the cron job's failure shows.
    const older = sqliteUrl(dir, "older.db");
    expect((await runCli(["migrate"], { DATABASE_URL: older })).code).toBe(0);
    const db = new Database(join(dir, "older.db"));
    db.exec("DROP TABLE backup_state");
    db.close();
    const unrecorded = await runCli(["backup", join(dir, "older-copy.db")], { DATABASE_URL: older });
    expect(unrecorded.code).toBe(1);
    expect(unrecorded.stdout).toMatch(/^backed up /);
    expect(unrecorded.stderr).toBe(
      "points-ledger: the backup is written but was not recorded in the database (its schema predates the record; run points-ledger migrate)\n",
    );
    expect(existsSync(join(dir, "older-copy.db"))).toBe(true);
  });
});

const HAVE_PG_DUMP = spawnSync("pg_dump", ["--version"]).status === 0;
if (!DATABASE_URL_TEST) console.warn(`backup-record: PostgreSQL part skipped: ${SKIP_REASON}`);

describe.skipIf(!DATABASE_URL_TEST)(`the backup record (PostgreSQL)${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`, () => {
  let schema: TestSchema;
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    dir = tempDir("backup-record-pg");
    server = await startServerProcess({ DATABASE_URL: schema.connectionString, ADMIN_TOKEN: newAdminToken() });
  }, 30_000);
  afterAll(async () => {
    await server?.kill("SIGTERM");
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("`pg_dump … && points-ledger backup --record`: /metrics of the running service moves from 0 to the record's time, never back", async () => {
    expect(await lastBackupSeconds(server)).toBe(0);
    // docs/operations.md's cron line: the dump, then the record only if the dump succeeded.
    if (HAVE_PG_DUMP)
      await run("pg_dump", ["--format=custom", `--schema=${schema.schema}`, `--file=${join(dir, "points.dump")}`, DATABASE_URL_TEST!]);
    const { fromSeconds, toSeconds } = await timedBackup(["--record"], schema.connectionString);
    const recorded = await lastBackupSeconds(server);
    expect(recorded).toBeGreaterThanOrEqual(fromSeconds);
    expect(recorded).toBeLessThanOrEqual(toSeconds);
    // A `backup <file>` on PostgreSQL still points at pg_dump, and now at --record too, and records nothing.
    const refused = await runCli(["backup", join(dir, "pg.db")], { DATABASE_URL: schema.connectionString });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("backup --record");
    expect(await lastBackupSeconds(server)).toBe(recorded);
    // A late record of an older backup, through the adapter: the time never moves back.
    const pool = new pg.Pool({ connectionString: schema.connectionString, max: 1 });
    try {
      await postgresBackups.recordBackup(pool, 1000);
    } finally {
      await pool.end();
    }
    expect(await lastBackupSeconds(server)).toBe(recorded);
  });
});
