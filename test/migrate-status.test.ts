/**
 * Issue 30, "upgrades and rollback": `points-ledger migrate --status` lists the applied and the
 * pending migrations (version and name) without applying any, and a version that finds a schema
 * newer than it knows refuses to start (serve, migrate, verify) with one line and a non-zero
 * exit, leaving the database as it was. On the built CLI, over SQLite and PostgreSQL (the latter
 * skipped without DATABASE_URL_TEST).
 */
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { assertBuilt, runCli, tempDir, type CliResult, type Env } from "./helpers/process.js";

interface Listed {
  summary: string;
  applied: { version: number; name: string }[];
  pending: { version: number; name: string }[];
  unknown: { version: number; name: string }[];
}

/**
 * `migrate --status` output: a summary line, one `applied|pending|unknown <version> <name> …` line
 * each, and the note on the two databases' numbering last.
 */
function parseStatus(stdout: string): Listed {
  const [summary = "", ...lines] = stdout.trimEnd().split("\n");
  expect(lines.pop()).toMatch(/^\(SQLite and PostgreSQL number their migrations separately/);
  const listed: Listed = { summary, applied: [], pending: [], unknown: [] };
  for (const line of lines) {
    const match = /^(applied|pending|unknown) +(\d+) {2}(\S+)/.exec(line);
    if (!match) throw new Error(`unexpected line in migrate --status: ${JSON.stringify(line)}`);
    listed[match[1] as "applied" | "pending" | "unknown"].push({ version: Number(match[2]), name: match[3]! });
  }
  return listed;
}

async function status(env: Env): Promise<{ result: CliResult; listed: Listed }> {
  const result = await runCli(["migrate", "--status"], env);
  return { result, listed: parseStatus(result.stdout) };
}

/** One line on stderr, no stack frame. */
function expectOneLine(result: CliResult): string {
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

/** The checks shared by both databases; `sql` runs one statement on the database under test. */
function migrationSuite(databaseUrl: () => string, sql: (statement: string) => Promise<void>, rows: () => Promise<number[]>) {
  const env = (): Env => ({ DATABASE_URL: databaseUrl(), LOG_LEVEL: "warn" });
  let known: { version: number; name: string }[] = [];

  it("lists every migration as pending on an empty database, and applies none", async () => {
    const { result, listed } = await status(env());
    expect(result.code, result.stderr).toBe(0);
    expect(listed.applied).toEqual([]);
    expect(listed.pending.length).toBeGreaterThan(10);
    expect(listed.pending.map((migration) => migration.version)).toEqual(listed.pending.map((_, index) => index + 1));
    expect(listed.summary).toMatch(new RegExp(`: schema version 0, ${listed.pending.length} migration\\(s\\) pending`));
    known = listed.pending;
    expect(await rows()).toEqual([]);
  });

  it("lists every migration as applied, with its name, once migrate ran", async () => {
    const migrated = await runCli(["migrate"], env());
    expect(migrated.code, migrated.stderr).toBe(0);
    // A fresh database: it says what it applied, not only that the schema is now up to date.
    expect(migrated.stdout).toContain(`applied ${known.length} migrations to the`);
    expect(migrated.stdout).toContain(`(version 0 → ${known.at(-1)!.version})`);
    const again = await runCli(["migrate"], env());
    expect(again.stdout).toContain(`was already up to date (version ${known.at(-1)!.version}): nothing applied`);
    const { result, listed } = await status(env());
    expect(result.code).toBe(0);
    expect(listed.applied).toEqual(known);
    expect(listed.pending).toEqual([]);
    expect(listed.summary).toMatch(new RegExp(`: schema version ${known.at(-1)!.version}, up to date$`));
  });

  it("lists what an upgrade will run: a migration the database has not had is pending, and stays so", async () => {
    const last = known.at(-1)!;
    // The database as the previous version left it, as far as the bookkeeping goes.
    await sql(`DELETE FROM schema_migrations WHERE version = ${last.version}`);
    try {
      for (let round = 0; round < 2; round++) {
        const { result, listed } = await status(env());
        expect(result.code).toBe(0);
        expect(listed.pending).toEqual([last]);
        expect(listed.summary).toContain(`schema version ${last.version - 1}, 1 migration(s) pending (this version knows ${last.version})`);
      }
      expect(await rows()).not.toContain(last.version);
    } finally {
      await sql(`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (${last.version}, '${last.name}', 0)`);
    }
  });

  it("refuses a schema newer than it knows: serve, migrate and verify exit 1 with one line, and change nothing", async () => {
    const knownVersion = known.at(-1)!.version;
    const newer = knownVersion + 2;
    await sql(`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (${newer}, 'from_the_future', 0)`);
    const before = await rows();
    const expected = new RegExp(
      `^points-ledger: the database at \\S+ has schema version ${newer}, newer than this version of points-ledger knows \\(${knownVersion}\\): upgrade points-ledger or restore a backup$`,
    );
    for (const command of [["serve"], ["migrate"], ["verify"]]) {
      const result = await runCli(command, { ...env(), PORT: "0" });
      expect(result.code, `${command[0]}: ${result.stderr}`).toBe(1);
      expect(expectOneLine(result)).toMatch(expected);
    }
    const { result, listed } = await status(env());
    expect(result.code).toBe(1);
    expect(listed.unknown).toEqual([{ version: newer, name: "from_the_future" }]);
    expect(listed.summary).toContain(`schema version ${newer}, newer than this version knows (${knownVersion})`);
    expect(await rows()).toEqual(before);
  });
}

describe("migrate --status and a newer schema (SQLite)", () => {
  let dir: string;
  const path = () => join(dir, "ledger.db");
  const withDb = <T>(use: (db: Database.Database) => T): T => {
    const db = new Database(path());
    try {
      return use(db);
    } finally {
      db.close();
    }
  };
  beforeAll(() => {
    assertBuilt();
    dir = tempDir("migrate-status");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("does not create the database file it reports on", async () => {
    const { result, listed } = await status({ DATABASE_URL: `sqlite:${join(dir, "absent.db")}` });
    expect(result.code).toBe(0);
    expect(listed.applied).toEqual([]);
    expect(listed.pending.length).toBeGreaterThan(10);
    expect(existsSync(join(dir, "absent.db"))).toBe(false);
  });

  migrationSuite(
    () => `sqlite:${path()}`,
    async (statement) => void withDb((db) => db.exec(statement)),
    async () =>
      existsSync(path())
        ? withDb((db) => {
            const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").get();
            if (table === undefined) return [];
            return (db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[]).map(
              (row) => row.version,
            );
          })
        : [],
  );
});

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

describe.skipIf(!DATABASE_URL_TEST)(
  `migrate --status and a newer schema (PostgreSQL)${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
    });
    afterAll(async () => schema?.drop());

    migrationSuite(
      () => schema.connectionString,
      async (statement) => void (await schema.query(statement)),
      async () => {
        const [table] = await schema.query<{ found: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS found");
        if (!table?.found) return [];
        return (await schema.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).map(
          (row) => row.version,
        );
      },
    );
  },
);
