import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createPool, probeWrites, toStoreError, transaction, type PgPool } from "../src/store/postgres/db.js";
import { StoreUnavailableError } from "../src/store/errors.js";
import { databaseHealthCounts, type DatabaseErrorKind } from "../src/store/database-health.js";
import { CLUSTER_SKIP_REASON, startCluster, type Cluster } from "./helpers/pg-cluster.js";

/**
 * The pool against a real server failing in each way a failover or a restart fails it (issue 38):
 * a backend terminated mid-transaction, a server turned read-only under open connections (a
 * demoted primary), a streaming standby (the address pointing at the wrong node). Each failure is
 * the store's StoreUnavailableError (503 + Retry-After, never 500), the connection that saw it is
 * closed rather than handed out again, and readiness says "not ready" whenever a write would fail.
 * Runs on clusters of its own (test/helpers/pg-cluster.ts); skipped where they cannot be made.
 */

if (CLUSTER_SKIP_REASON !== null) console.warn(CLUSTER_SKIP_REASON);

const STATEMENT_TIMEOUT_MS = 10_000;
const CLUSTER_SETUP_TIMEOUT_MS = 120_000;
const GONE_DEADLINE_MS = 10_000;
const POLL_MS = 50;

function discards(kind: DatabaseErrorKind): number {
  return databaseHealthCounts().discards.get(kind) ?? 0;
}

function errors(kind: DatabaseErrorKind): number {
  return databaseHealthCounts().errors.get(kind) ?? 0;
}

async function pidOf(db: pg.PoolClient): Promise<number> {
  return (await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
}

/** The store's translation of whatever `work` threw, or null when it succeeded. */
async function failureOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
    return null;
  } catch (error) {
    return toStoreError(error);
  }
}

/** Waits until none of `pids` is a session on `cluster`: their connections were closed, not pooled. */
async function expectClosed(cluster: Cluster, pids: number[]): Promise<void> {
  const deadline = Date.now() + GONE_DEADLINE_MS;
  for (;;) {
    const rows = await cluster.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])", [pids]);
    if (rows.length === 0) return;
    if (Date.now() > deadline) throw new Error(`sessions ${rows.map((row) => row.pid).join(", ")} still open`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

describe.skipIf(CLUSTER_SKIP_REASON !== null)("the PostgreSQL pool when the server fails under it", () => {
  let primary: Cluster;
  let standby: Cluster;
  const pools: PgPool[] = [];
  const poolOn = (url: string, poolSize: number) => {
    const pool = createPool({ connectionString: url, poolSize, statementTimeoutMs: STATEMENT_TIMEOUT_MS });
    pools.push(pool);
    return pool;
  };

  beforeAll(async () => {
    primary = await startCluster();
    await primary.query("CREATE TABLE notes (id SERIAL PRIMARY KEY, text TEXT NOT NULL)");
    standby = await primary.standby();
  }, CLUSTER_SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
    await standby?.remove();
    await primary?.remove();
  });

  it("a backend terminated mid-transaction: 503, that connection closed, the next operation on a new one", async () => {
    const pool = poolOn(primary.url(), 1);
    const before = discards("shutdown") + discards("connection");
    let terminatedPid = 0;
    const failure = await failureOf(() =>
      transaction(pool, async (db) => {
        terminatedPid = await pidOf(db);
        await primary.query("SELECT pg_terminate_backend($1)", [terminatedPid]);
        await db.query("INSERT INTO notes (text) VALUES ('after the termination')");
      }),
    );
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).retryAfterSeconds).toBeGreaterThan(0);
    expect(discards("shutdown") + discards("connection")).toBe(before + 1);
    const nextPid = await transaction(pool, (db) => pidOf(db));
    expect(nextPid).not.toBe(terminatedPid);
  });

  it("a server turned read-only under open connections: writes 503, every such connection closed, readiness fails, then recovers", async () => {
    const pool = poolOn(primary.url(), 3);
    // Three connections open and idle in the pool, as after any busy moment.
    const pids = await Promise.all(
      [1, 2, 3].map(() =>
        transaction(pool, async (db) => {
          await db.query("SELECT pg_sleep(0.05)");
          return pidOf(db);
        }),
      ),
    );
    expect(new Set(pids).size).toBe(3);
    await primary.query("ALTER SYSTEM SET default_transaction_read_only = on");
    await primary.query("SELECT pg_reload_conf()");
    try {
      const errorsBefore = errors("read_only");
      const discardsBefore = discards("read_only");
      for (let attempt = 0; attempt < pids.length; attempt += 1) {
        const failure = await failureOf(() => transaction(pool, (db) => db.query("INSERT INTO notes (text) VALUES ('refused')")));
        expect(failure).toBeInstanceOf(StoreUnavailableError);
        expect((failure as Error).message).toMatch(/read-only/);
      }
      expect(await failureOf(() => probeWrites(pool))).toBeInstanceOf(StoreUnavailableError);
      // None of the connections that answered read-only went back to the pool.
      await expectClosed(primary, pids);
      expect(errors("read_only") - errorsBefore).toBe(pids.length + 1);
      expect(discards("read_only") - discardsBefore).toBe(pids.length + 1);
    } finally {
      await primary.query("ALTER SYSTEM RESET default_transaction_read_only");
      await primary.query("SELECT pg_reload_conf()");
    }
    await probeWrites(pool);
    await transaction(pool, (db) => db.query("INSERT INTO notes (text) VALUES ('writable again')"));
  });

  it("a streaming standby: reads answer, readiness and writes fail as unavailable and the connection is closed", async () => {
    const pool = poolOn(standby.url(), 2);
    const { rows } = await pool.query<{ count: number }>("SELECT count(*)::int AS count FROM notes");
    expect(rows[0]!.count).toBeGreaterThanOrEqual(0);
    const readiness = await failureOf(() => probeWrites(pool));
    expect(readiness).toBeInstanceOf(StoreUnavailableError);
    expect((readiness as Error).message).toMatch(/standby/);
    let pid = 0;
    const write = await failureOf(() =>
      transaction(pool, async (db) => {
        pid = await pidOf(db);
        await db.query("INSERT INTO notes (text) VALUES ('on a standby')");
      }),
    );
    expect(write).toBeInstanceOf(StoreUnavailableError);
    await expectClosed(standby, [pid]);
  });
});
