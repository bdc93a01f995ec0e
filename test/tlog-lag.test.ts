import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  callOk,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * A log that cannot advance says so (issue 37): GET /v1/log/status and /metrics
 * (points_log_lag_seconds) give the age of the oldest committed event not logged yet, and
 * `points-ledger verify` fails while one older than a minute has no logIndex.
 */

const CATCH_UP_DEADLINE_MS = 30_000;

interface LogStatusBody {
  treeSize: number;
  checkpointSize: number | null;
  oldestUnloggedAt: string | null;
  lagSeconds: number;
}

async function logStatus(url: string): Promise<LogStatusBody> {
  const response = await fetch(`${url}/v1/log/status`);
  expect(response.status).toBe(200);
  return (await response.json()) as LogStatusBody;
}

async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} is not in /metrics`);
  return Number(line.split(" ")[1]);
}

describe("the transparency log's lag on SQLite", () => {
  it("verify fails while an event older than a minute is unlogged, and passes once the service has logged it", async () => {
    assertBuilt();
    const dir = tempDir("tlog-lag");
    const env = { DATABASE_URL: sqliteUrl(dir) };
    const credited = await runCli(["credit", randomAddress(), "PHASE2_POINTS", "5", "--id", "old-credit"], env);
    expect(credited.code, credited.stderr).toBe(0);
    expect((await runCli(["verify"], env)).code, "a fresh event is not a lag").toBe(0);
    // The event was committed two minutes ago as far as the log can tell, and nothing has logged it.
    const db = new Database(`${dir}/ledger.db`);
    db.prepare("UPDATE events SET occurred_at_ms = occurred_at_ms - 120000").run();
    db.close();
    const stalled = await runCli(["verify"], env);
    expect(stalled.code).toBe(1);
    expect(stalled.stdout).toMatch(/invariant 6: the transparency log has not logged an event committed 1[23]\d s ago \(bound 60 s/);

    const server = await startServerProcess(env);
    try {
      const status = await pollUntil("the log to catch up", CATCH_UP_DEADLINE_MS, async () => {
        const body = await logStatus(server.url);
        return body.oldestUnloggedAt === null && body.checkpointSize === body.treeSize ? body : undefined;
      });
      expect(status).toMatchObject({ treeSize: 1, checkpointSize: 1, oldestUnloggedAt: null, lagSeconds: 0 });
      expect(await metricValue(server.url, "points_log_lag_seconds")).toBe(0);
    } finally {
      await server.kill("SIGTERM");
    }
    const verified = await runCli(["verify"], env);
    expect(verified.code, verified.stdout).toBe(0);
  });
});

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

describe.skipIf(!DATABASE_URL_TEST)("the transparency log's lag on PostgreSQL", () => {
  let schema: TestSchema;
  let server: ServerProcess | null = null;
  afterAll(async () => {
    await server?.kill("SIGKILL");
    await schema?.drop();
  });

  it("a transaction left open holds the log back: status and /metrics show the lag grow, and it clears once the transaction ends", async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    const adminToken = newAdminToken();
    server = await startServerProcess({ DATABASE_URL: schema.connectionString, ADMIN_TOKEN: adminToken, PG_POOL_SIZE: "4" });
    const url = server.url;
    const credit = (id: string) =>
      callOk(url, "PUT", `/v1/admin/contracts/${randomAddress()}/credits/${id}`, adminToken, { pointType: "PHASE2_POINTS", points: "1" });
    await credit("before");
    await pollUntil("the first event logged", CATCH_UP_DEADLINE_MS, async () =>
      (await logStatus(url)).checkpointSize === 1 ? true : undefined,
    );
    // An open transaction with a transaction id: events committed after it began are not read past.
    const holder = new pg.Client({ connectionString: schema.connectionString });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT pg_current_xact_id()");
      await credit("held-back");
      const held = await pollUntil("the lag to pass a second", CATCH_UP_DEADLINE_MS, async () => {
        const body = await logStatus(url);
        return body.lagSeconds > 1 ? body : undefined;
      });
      expect(held.treeSize).toBe(1);
      expect(held.oldestUnloggedAt).not.toBeNull();
      expect(await metricValue(url, "points_log_lag_seconds")).toBeGreaterThan(1);
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    const caughtUp = await pollUntil("the log to catch up", CATCH_UP_DEADLINE_MS, async () => {
      const body = await logStatus(url);
      return body.checkpointSize === 2 ? body : undefined;
    });
    expect(caughtUp).toMatchObject({ treeSize: 2, oldestUnloggedAt: null, lagSeconds: 0 });
    expect(await metricValue(url, "points_log_lag_seconds")).toBe(0);
  });
});
