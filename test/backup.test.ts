/**
 * Issue 30, "backup and restore while it runs": a copy taken while the real built server accepts
 * and finalizes a load of batches holds every batch answered 200 before the copy began and none
 * sent after it ended; `points-ledger verify` holds on it; a service started on it (the restore)
 * serves those batches. SQLite: `points-ledger backup <file>`. PostgreSQL: pg_dump under load,
 * pg_restore into a new database (skipped without DATABASE_URL_TEST, or without pg_dump).
 */
import { execFile, spawnSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatPoints, parsePoints, sumUnits } from "../src/domain/points.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, withSearchPath, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  call,
  creditPoints,
  listAllBatches,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type BatchSummary,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

const run = promisify(execFile);

/** Concurrent PUTs kept in flight, and transfers per batch: enough pages that a copy takes a while. */
const CONCURRENCY = 4;
const TRANSFERS_PER_BATCH = 150;
/** The copy starts once this many batches were answered 200. */
const ACKNOWLEDGED_BEFORE_COPY = 40;
/** The load goes on after the copy until this many batches were sent (and answered) after it. */
const SENT_AFTER_COPY = 8;
const LOAD_DEADLINE_MS = 90_000;
const CREDIT_POINTS = "1000000000";

interface SentBatch {
  batchId: string;
  transferCount: number;
  points: string;
  sentMs: number;
  /** When the 200 arrived; null while in flight or if another answer came. */
  acknowledgedMs: number | null;
}

interface Session {
  contract: string;
  token: string;
}

async function prepareContract(server: ServerProcess, adminToken: string): Promise<Session> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "backup-credit", "PHASE2_POINTS", CREDIT_POINTS);
  return { contract, token: await signIn(server.url, contract, operator) };
}

/** A load of PUTs, `CONCURRENCY` at a time, each batch due within 1–3 s so the finalizer writes too. */
function startLoad(server: ServerProcess, session: Session) {
  const sent: SentBatch[] = [];
  const runId = randomBytes(4).toString("hex");
  let stopped = false;
  const failures: string[] = [];
  const worker = async () => {
    while (!stopped) {
      const amounts = Array.from({ length: TRANSFERS_PER_BATCH }, () => parsePoints("0.01")! + BigInt(randomInt(1_000_000_000_000)));
      const batch: SentBatch = {
        batchId: `backup-${runId}-${sent.length}`,
        transferCount: amounts.length,
        points: formatPoints(sumUnits(amounts)),
        sentMs: Date.now(),
        acknowledgedMs: null,
      };
      sent.push(batch);
      const response = await call(server.url, "PUT", `/v1/contracts/${session.contract}/batches/${batch.batchId}`, session.token, {
        pointType: "PHASE2_POINTS",
        secondsToFinalize: 1 + randomInt(3),
        transfers: amounts.map((units) => ({ toAddress: randomAddress(), points: formatPoints(units) })),
      });
      if (response.status === 200) batch.acknowledgedMs = Date.now();
      else failures.push(`${batch.batchId}: ${response.status} ${JSON.stringify(response.body)}`);
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, worker);
  return {
    sent,
    failures,
    acknowledged: () => sent.filter((batch) => batch.acknowledgedMs !== null),
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

interface Copy {
  /** Takes the copy while the service runs. */
  take(): Promise<void>;
  /** Makes the copy a database a service can start on; returns its DATABASE_URL. */
  restore(): Promise<string>;
}

interface CopyReport {
  acknowledgedBeforeCopy: number;
  sentAfterCopy: number;
  copyMs: number;
  /** Batches of the contract in the copy (those before, plus some in flight during the copy). */
  inCopy: number;
}

/**
 * The scenario on `databaseUrl`: load, copy under load, more load, restore, then verify and a
 * service on the copy. Returns what it saw; the expectations are checked here.
 */
async function copyUnderLoad(databaseUrl: string, serverEnv: Env, copy: Copy): Promise<CopyReport> {
  const adminToken = newAdminToken();
  const env: Env = { ...serverEnv, DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken, MINIMUM_FINALIZE_SECONDS: "1" };
  const server = await startServerProcess(env);
  let copyStartedMs = 0;
  let copyEndedMs = 0;
  let session: Session | undefined;
  let load: ReturnType<typeof startLoad> | undefined;
  try {
    session = await prepareContract(server, adminToken);
    const running = (load = startLoad(server, session));
    try {
      await pollUntil(`${ACKNOWLEDGED_BEFORE_COPY} acknowledged batches`, LOAD_DEADLINE_MS, async () =>
        running.acknowledged().length >= ACKNOWLEDGED_BEFORE_COPY || running.failures.length > 0 ? true : undefined,
      );
      copyStartedMs = Date.now();
      await copy.take();
      copyEndedMs = Date.now();
      await pollUntil(`${SENT_AFTER_COPY} batches sent and answered after the copy`, LOAD_DEADLINE_MS, async () =>
        running.acknowledged().filter((batch) => batch.sentMs > copyEndedMs).length >= SENT_AFTER_COPY || running.failures.length > 0
          ? true
          : undefined,
      );
    } finally {
      await running.stop();
    }
    expect(running.failures).toEqual([]);
  } finally {
    await server.kill("SIGTERM");
  }
  const { contract, token } = session;
  const before = load.sent.filter((batch) => batch.acknowledgedMs !== null && batch.acknowledgedMs < copyStartedMs);
  const after = load.sent.filter((batch) => batch.sentMs > copyEndedMs);
  expect(before.length).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_COPY);
  expect(after.length).toBeGreaterThanOrEqual(SENT_AFTER_COPY);

  const restoredUrl = await copy.restore();
  const restoredEnv: Env = { ...serverEnv, DATABASE_URL: restoredUrl, ADMIN_TOKEN: adminToken };
  const verified = await runCli(["verify"], restoredEnv);
  expect(verified.code, `${verified.stdout}\n${verified.stderr}`).toBe(0);
  expect(verified.stdout).toContain("ledger verified: all invariants hold");

  const restored = await startServerProcess(restoredEnv);
  let inCopy = 0;
  try {
    const stored = new Map<string, BatchSummary>((await listAllBatches(restored.url, token, contract)).map((batch) => [batch.id, batch]));
    inCopy = stored.size;
    const missing = before.filter((batch) => !stored.has(batch.batchId)).map((batch) => batch.batchId);
    expect(missing, "batches answered 200 before the copy began, absent from it").toEqual([]);
    for (const batch of before) {
      expect(stored.get(batch.batchId), batch.batchId).toMatchObject({ transferCount: batch.transferCount, points: batch.points });
    }
    const later = after.filter((batch) => stored.has(batch.batchId)).map((batch) => batch.batchId);
    expect(later, "batches sent after the copy ended, present in it").toEqual([]);
    // The restored service finalizes what was pending in the copy, and its ledger still adds up.
    await pollUntil("every batch of the copy FINALIZED on the restored service", LOAD_DEADLINE_MS, async () => {
      const batches = await listAllBatches(restored.url, token, contract);
      return batches.every((batch) => batch.status === "FINALIZED") ? true : undefined;
    });
  } finally {
    await restored.kill("SIGTERM");
  }
  const reverified = await runCli(["verify"], restoredEnv);
  expect(reverified.code, `${reverified.stdout}\n${reverified.stderr}`).toBe(0);
  return {
    acknowledgedBeforeCopy: before.length,
    sentAfterCopy: after.length,
    copyMs: copyEndedMs - copyStartedMs,
    inCopy,
  };
}

describe("points-ledger backup (SQLite) while the service runs", () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir("backup");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("copies every batch answered 200 before it began and none sent after it; verify holds on the copy and a service starts on it", async () => {
    const file = join(dir, "backup.db");
    const report = await copyUnderLoad(
      sqliteUrl(dir),
      {},
      {
        take: async () => {
          const result = await runCli(["backup", file], { DATABASE_URL: sqliteUrl(dir) });
          expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
          expect(result.stdout).toMatch(/^backed up .* to .*backup\.db: \d+ pages, \d+ bytes, schema version \d+, in \d+ ms\n$/);
        },
        restore: async () => `sqlite:${file}`,
      },
    );
    console.log(`SQLite backup under load: ${JSON.stringify(report)}`);
  }, 240_000);

  it("never overwrites a file, never creates a missing database, and leaves no partial file", async () => {
    const file = join(dir, "existing.db");
    const source = sqliteUrl(dir, "source.db");
    expect((await runCli(["migrate"], { DATABASE_URL: source })).code).toBe(0);
    expect((await runCli(["backup", file], { DATABASE_URL: source })).code).toBe(0);
    const again = await runCli(["backup", file], { DATABASE_URL: source });
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(`points-ledger: ${file} already exists: a backup never overwrites a file; name a new one\n`);

    const missing = sqliteUrl(dir, "nothing-here.db");
    const refused = await runCli(["backup", join(dir, "never.db")], { DATABASE_URL: missing });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("there is no SQLite database at");
    expect(existsSync(join(dir, "nothing-here.db"))).toBe(false);
    expect(existsSync(join(dir, "never.db"))).toBe(false);
    expect(readdirSync(dir).filter((name) => name.includes(".partial-"))).toEqual([]);
  });

  it("says pg_dump is the tool for PostgreSQL and exits 2", async () => {
    const result = await runCli(["backup", join(dir, "pg.db")], { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("pg_dump");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(existsSync(join(dir, "pg.db"))).toBe(false);
  });
});

const HAVE_PG_DUMP = spawnSync("pg_dump", ["--version"]).status === 0 && spawnSync("pg_restore", ["--version"]).status === 0;
if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
else if (!HAVE_PG_DUMP)
  console.warn("pg_dump or pg_restore is not installed (apt-get install postgresql-client): the PostgreSQL backup test is skipped");

async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The URL of another database on the same server as `url`. */
function databaseUrlNamed(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  parsed.search = "";
  return parsed.toString();
}

describe.skipIf(!DATABASE_URL_TEST || !HAVE_PG_DUMP)(
  `pg_dump while the service runs (PostgreSQL)${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    let dir: string;
    const restoredDatabase = `plt_restored_${randomBytes(6).toString("hex")}`;
    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
      dir = tempDir("pg-dump");
    });
    afterAll(async () => {
      await runSql(DATABASE_URL_TEST!, `DROP DATABASE IF EXISTS ${restoredDatabase} WITH (FORCE)`);
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("restores a dump taken under load into a new database: every batch acknowledged before it, verify holds, a service starts on it", async () => {
      const file = join(dir, "points.dump");
      const report = await copyUnderLoad(
        schema.connectionString,
        { PG_POOL_SIZE: "4", PG_STATEMENT_TIMEOUT_MS: "30000" },
        {
          take: async () => {
            // The test database is shared: only this test's schema is dumped (docs/operations.md dumps it all).
            await run("pg_dump", ["--format=custom", `--schema=${schema.schema}`, `--file=${file}`, DATABASE_URL_TEST!]);
          },
          restore: async () => {
            await runSql(DATABASE_URL_TEST!, `CREATE DATABASE ${restoredDatabase}`);
            const restoredUrl = databaseUrlNamed(DATABASE_URL_TEST!, restoredDatabase);
            await run("pg_restore", ["--no-owner", "--exit-on-error", `--dbname=${restoredUrl}`, file]);
            return withSearchPath(restoredUrl, schema.schema);
          },
        },
      );
      console.log(`PostgreSQL pg_dump under load: ${JSON.stringify(report)}`);
    }, 240_000);
  },
);
