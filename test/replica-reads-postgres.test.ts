import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { CLUSTER_SKIP_REASON, startCluster, type Cluster } from "./helpers/pg-cluster.js";
import { DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * Reads from a replica (issue 38, DATABASE_READ_URL): a primary of the test's own and a real
 * streaming standby of it (pg_basebackup -R, test/helpers/pg-cluster.ts), the built server
 * pointed at both. Shown, in order, on one server with REPLICA_MAX_LAG_SECONDS=15 (room for a
 * busy machine between the pause and the read):
 * - a leaderboard read is the replica's: with replay paused, the answer is the replica's board and
 *   its `through` the replica's own projection position, while the primary has moved on; public
 *   balances are the replica's too, while the admin's and the operator's reads are the primary's
 *   (a credit and a batch written after the pause read back at once);
 * - paused past the bound, the replica is not used (the answers are the primary's), and after
 *   the replay resumes it is used again;
 * - the replica stopped: every read still answers 200, from the primary.
 * And with SQLite, DATABASE_READ_URL stops start-up with one line. Skipped without PostgreSQL's
 * server binaries (clusters of the test's own) or DATABASE_URL_TEST.
 */

const SKIP =
  CLUSTER_SKIP_REASON ?? (DATABASE_URL_TEST ? null : `${SKIP_REASON}; the replica test also runs only where DATABASE_URL_TEST is set`);
if (SKIP !== null) console.warn(`replica-reads-postgres skipped: ${SKIP}`);

const POINT_TYPE = "PHASE2_POINTS";
const MAX_LAG_SECONDS = 15;
/** The replica pool's connections as pg_stat_activity names them on the standby. */
const REPLICA_APPLICATION_NAME = "points-ledger-replica-reads";
const CLUSTER_SETUP_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 90_000;
/** Longer than the bound and a check interval, on a busy machine. */
const NOT_USED_DEADLINE_MS = (MAX_LAG_SECONDS + 15) * 1000;

interface Board {
  through: string;
  entries: { rank: number; address: string; points: string }[];
}

describe.skipIf(SKIP !== null)("reads from a streaming replica (DATABASE_READ_URL)", () => {
  let primary: Cluster;
  let standby: Cluster;
  let server: ServerProcess;
  const adminToken = newAdminToken();
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  let token: string;
  const boardPath = `/v1/contracts/${contract}/leaderboard?pointType=${POINT_TYPE}`;
  const recipients = { r1: randomAddress(), r2: randomAddress(), top: randomAddress(), credited: randomAddress() };

  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    if (match === null) throw new Error(`no ${name} in /metrics`);
    return Number(match[1]);
  };
  const servedBy = (server: "replica" | "primary") => metric(`points_database_replica_reads_total\\{served_by="${server}"\\}`);
  const inUse = (wanted: 0 | 1) =>
    pollUntil(`points_database_replica_in_use ${wanted}`, NOT_USED_DEADLINE_MS, async () =>
      (await metric("points_database_replica_in_use")) === wanted ? true : undefined,
    );
  const publicBoard = async (): Promise<Board> => (await callOk(server.url, "GET", boardPath, null)) as unknown as Board;
  const throughOn = async (cluster: Cluster) =>
    Number((await cluster.query<{ through_ms: string }>("SELECT through_ms FROM projection_state WHERE id = 1"))[0]!.through_ms);
  const finalizedAtOn = async (cluster: Cluster, batchId: string) => {
    const rows = await cluster.query<{ finalized_at_ms: string | null }>("SELECT finalized_at_ms FROM batches WHERE batch_id = $1", [
      batchId,
    ]);
    return rows[0]?.finalized_at_ms == null ? null : Number(rows[0].finalized_at_ms);
  };
  const hasBatch = async (cluster: Cluster, batchId: string) =>
    (await cluster.query("SELECT 1 FROM batches WHERE batch_id = $1", [batchId])).length === 1;
  const submit = (batchId: string, transfers: [string, string][], secondsToFinalize: number) =>
    callOk(server.url, "PUT", `/v1/contracts/${contract}/batches/${batchId}`, token, {
      pointType: POINT_TYPE,
      transfers: transfers.map(([toAddress, points]) => ({ toAddress, points })),
      secondsToFinalize,
    });
  /** Polls until the cluster's projection counts the batch. */
  const projected = (cluster: Cluster, batchId: string) =>
    pollUntil(`${batchId} in the leaderboards`, 30_000, async () => {
      const finalizedAtMs = await finalizedAtOn(cluster, batchId);
      return finalizedAtMs !== null && (await throughOn(cluster)) >= finalizedAtMs ? finalizedAtMs : undefined;
    });
  const earned = async (address: string, authorization: string | null) => {
    const body = await callOk(server.url, "GET", `/v1/addresses/${address}/point-balances`, authorization);
    return (body.balancesByPointType as Record<string, { earnedCumulative: string }>)[POINT_TYPE]!.earnedCumulative;
  };

  beforeAll(async () => {
    assertBuilt();
    primary = await startCluster();
    const migrate = await runCli(["migrate"], { DATABASE_URL: primary.url() }, CLUSTER_SETUP_TIMEOUT_MS);
    expect(migrate.code, migrate.stderr).toBe(0);
    standby = await primary.standby();
    const replicaUrl = new URL(standby.url());
    replicaUrl.searchParams.set("application_name", REPLICA_APPLICATION_NAME);
    server = await startServerProcess({
      DATABASE_URL: primary.url(),
      DATABASE_READ_URL: replicaUrl.toString(),
      REPLICA_MAX_LAG_SECONDS: String(MAX_LAG_SECONDS),
      ADMIN_TOKEN: adminToken,
      PUBLIC_READS: "true",
      PG_POOL_SIZE: "4",
      MINIMUM_FINALIZE_SECONDS: "1",
      FINALIZER_INTERVAL_MS: "100",
    });
    await setOperator(server.url, adminToken, contract, operator.address);
    await creditPoints(server.url, adminToken, contract, "replica-credit", POINT_TYPE, "1000000");
    token = await signIn(server.url, contract, operator);
  }, 2 * CLUSTER_SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await server?.kill("SIGKILL");
    await standby?.remove();
    await primary?.remove();
  });

  it(
    "a leaderboard read is the replica's, through exact for it; public balances too; the admin and the operator read their writes on the primary",
    async () => {
      await submit(
        "first",
        [
          [recipients.r1, "3"],
          [recipients.r2, "2"],
        ],
        1,
      );
      await projected(standby, "first");
      await inUse(1);
      await submit("second", [[recipients.top, "100"]], 2);
      await pollUntil("the second batch on the replica", 10_000, async () => ((await hasBatch(standby, "second")) ? true : undefined));
      await standby.query("SELECT pg_wal_replay_pause()");
      const pausedAtMs = Date.now();
      const replicaThroughMs = await throughOn(standby);

      // Written after the pause: the primary has them, the replica does not, and their writers read them back.
      await creditPoints(server.url, adminToken, recipients.credited, "after-pause", POINT_TYPE, "5");
      await submit("third", [[recipients.r1, "1"]], 3600);
      expect(await hasBatch(standby, "third")).toBe(false);
      const third = await callOk(server.url, "GET", `/v1/contracts/${contract}/batches/third`, token);
      expect((third.batch as { status: string }).status).toBe("PENDING");
      expect(await earned(recipients.credited, adminToken)).toBe("5");
      expect(await earned(recipients.credited, null), "a public balance is the replica's").toBe("0");

      // The second batch counted on the primary, not on the paused replica: the answer is the replica's board.
      const primaryFinalizedMs = await projected(primary, "second");
      const fromReplica = await publicBoard();
      expect(Date.now() - pausedAtMs, "the read came within the lag bound").toBeLessThan(MAX_LAG_SECONDS * 1000);
      expect(fromReplica.through).toBe(new Date(replicaThroughMs).toISOString());
      expect(replicaThroughMs).toBeLessThan(primaryFinalizedMs);
      const readersOnReplica = await standby.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1",
        [REPLICA_APPLICATION_NAME],
      );
      expect(Number(readersOnReplica[0]!.n), "the service's replica pool is connected to the standby").toBeGreaterThan(0);
      expect(fromReplica.entries).toEqual([
        { rank: 1, address: recipients.r1, points: "3" },
        { rank: 2, address: recipients.r2, points: "2" },
      ]);
      // A snapshot taken now is not on the paused replica: its reads ask the primary, never 404.
      await callOk(server.url, "PUT", "/v1/admin/snapshots/after-pause", adminToken, {
        pointType: POINT_TYPE,
        measure: "receivedCumulative",
      });
      expect((await call(server.url, "GET", "/v1/snapshots/after-pause", null)).status).toBe(200);
      expect((await call(server.url, "GET", `/v1/snapshots/after-pause/proofs/${recipients.top}`, null)).status).toBe(200);
      expect(await servedBy("replica")).toBeGreaterThan(0);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "paused past REPLICA_MAX_LAG_SECONDS the replica is not used: the answers are the primary's; after the replay resumes it is used again",
    async () => {
      await inUse(0);
      expect(await metric("points_database_replica_lag_seconds")).toBeGreaterThan(MAX_LAG_SECONDS);
      const primaryThroughMs = await throughOn(primary);
      const fromPrimary = await publicBoard();
      expect(fromPrimary.through).toBe(new Date(primaryThroughMs).toISOString());
      expect(fromPrimary.entries[0]).toEqual({ rank: 1, address: recipients.top, points: "100" });
      expect(await earned(recipients.credited, null)).toBe("5");

      await standby.query("SELECT pg_wal_replay_resume()");
      await inUse(1);
      expect(await metric("points_database_replica_lag_seconds")).toBeLessThan(MAX_LAG_SECONDS);
      const before = await servedBy("replica");
      const again = await publicBoard();
      expect(await servedBy("replica")).toBe(before + 1);
      expect(again.through).toBe(new Date(await throughOn(standby)).toISOString());
      expect(again.entries[0]).toEqual({ rank: 1, address: recipients.top, points: "100" });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "the replica stopped: every read still answers 200, from the primary",
    async () => {
      await standby.stop("fast");
      const before = await servedBy("primary");
      const statuses: number[] = [];
      for (let read = 0; read < 10; read++) {
        statuses.push((await call(server.url, "GET", boardPath, null)).status);
        statuses.push((await call(server.url, "GET", `/v1/addresses/${recipients.credited}/point-balances`, null)).status);
        statuses.push((await fetch(`${server.url}/v1/admin/balances.csv`, { headers: { authorization: `Bearer ${adminToken}` } })).status);
      }
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(await servedBy("primary")).toBeGreaterThanOrEqual(before + 30);
      const board = await publicBoard();
      expect(board.through).toBe(new Date(await throughOn(primary)).toISOString());
      await inUse(0);
      expect(await earned(recipients.credited, null)).toBe("5");
    },
    TEST_TIMEOUT_MS,
  );
});

describe("DATABASE_READ_URL with SQLite", () => {
  it("stops start-up with one line naming DATABASE_READ_URL", async () => {
    assertBuilt();
    const dir = tempDir("replica-sqlite");
    const result = await runCli(["serve"], {
      DATABASE_URL: sqliteUrl(dir),
      DATABASE_READ_URL: `postgres://reader@127.0.0.1:5432/points_${randomBytes(3).toString("hex")}`,
      PORT: "0",
    });
    expect(result.code).not.toBe(0);
    const lines = result.stderr.trim().split("\n");
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain("DATABASE_READ_URL");
    expect(lines[0]).toContain("SQLite has no replicas");
  });
});
