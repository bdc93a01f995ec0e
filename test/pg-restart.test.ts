import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { CLUSTER_SKIP_REASON, startCluster, type Cluster } from "./helpers/pg-cluster.js";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sleep,
  startServerProcess,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * PostgreSQL shut down and started again under four concurrent writers (`pg_ctl stop -m fast`:
 * every session ends with 57P01; then `pg_ctl start`): the service answers only 200 or 503 with
 * Retry-After meanwhile, never 500, every batch answered 200 is there afterwards, `verify` holds,
 * and it writes again by itself, with no restart of its own. The time from the database
 * accepting connections to the first 200 is printed (issue 38: ≤ 1 s). Runs on a cluster of its
 * own (test/helpers/pg-cluster.ts); skipped where one cannot be made.
 */

if (CLUSTER_SKIP_REASON !== null) console.warn(CLUSTER_SKIP_REASON);

const WRITERS = 4;
const TRANSFER_POINTS = "1.5";
const POINT_TYPE = "PHASE2_POINTS";
const WRITES_BEFORE_STOP = 20;
const DOWN_MS = 2000;
const WRITES_AFTER_START = 20;
const CLUSTER_SETUP_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 180_000;

interface Sent {
  batchId: string;
  statuses: number[];
}

describe.skipIf(CLUSTER_SKIP_REASON !== null)("PostgreSQL restarted under concurrent writers", () => {
  let cluster: Cluster;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    assertBuilt();
    cluster = await startCluster();
    // The schema made before the server starts: a fresh database's migrations on a busy machine
    // would eat the server's start-up deadline.
    const migrate = await runCli(["migrate"], { DATABASE_URL: cluster.url() }, CLUSTER_SETUP_TIMEOUT_MS);
    expect(migrate.code, migrate.stderr).toBe(0);
  }, 2 * CLUSTER_SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await server?.kill("SIGKILL");
    await cluster?.remove();
  });

  it(
    "answers 200 or 503 with Retry-After, never 500, loses nothing acknowledged and writes again by itself",
    async () => {
      const adminToken = newAdminToken();
      server = await startServerProcess({
        DATABASE_URL: cluster.url(),
        ADMIN_TOKEN: adminToken,
        LOG_LEVEL: "warn",
        PG_POOL_SIZE: "4",
        MINIMUM_FINALIZE_SECONDS: "1",
      });
      const operator = privateKeyToAccount(generatePrivateKey());
      const contract = randomAddress();
      await setOperator(server.url, adminToken, contract, operator.address);
      await creditPoints(server.url, adminToken, contract, "restart-credit", POINT_TYPE, "1000000000");
      const token = await signIn(server.url, contract, operator);

      const sent: Sent[] = [];
      const unexpected: string[] = [];
      let stopped = false;
      const put = async (): Promise<number> => {
        const entry: Sent = { batchId: `restart-${randomBytes(6).toString("hex")}`, statuses: [] };
        sent.push(entry);
        const response = await fetch(`${server!.url}/v1/contracts/${contract}/batches/${entry.batchId}`, {
          method: "PUT",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({
            pointType: POINT_TYPE,
            transfers: [{ toAddress: randomAddress(), points: TRANSFER_POINTS }],
            secondsToFinalize: 1,
          }),
        }).catch((error: unknown) => {
          unexpected.push(`${entry.batchId}: no answer (${String(error)})`);
          return null;
        });
        if (response === null) return 0;
        const text = await response.text();
        if (response.status !== 200 && response.status !== 503) unexpected.push(text.slice(0, 200));
        entry.statuses.push(response.status);
        const proper503 = response.status === 503 && /^[0-9]+$/.test(response.headers.get("retry-after") ?? "");
        if (response.status === 200 || proper503) return response.status;
        unexpected.push(`${entry.batchId}: ${response.status}`);
        return 0;
      };
      let firstOkAfterStartMs: number | null = null;
      let startedAtMs: number | null = null;
      let okAfterStart = 0;
      const writer = async () => {
        while (!stopped) {
          const status = await put();
          if (status === 0) return;
          if (status === 200 && startedAtMs !== null) okAfterStart += 1;
          if (status === 200 && startedAtMs !== null && firstOkAfterStartMs === null) firstOkAfterStartMs = Date.now() - startedAtMs;
          // A well-behaved client waits a little before retrying; a short wait measures the recovery finely.
          if (status !== 200) await sleep(50);
        }
      };
      const writers = Promise.all(Array.from({ length: WRITERS }, writer));
      while (unexpected.length === 0 && sent.filter((entry) => entry.statuses[0] === 200).length < WRITES_BEFORE_STOP) await sleep(20);
      expect(unexpected).toEqual([]);

      await cluster.stop("fast");
      await sleep(DOWN_MS);
      await cluster.start();
      startedAtMs = Date.now();
      while (unexpected.length === 0 && okAfterStart < WRITES_AFTER_START) await sleep(20);
      stopped = true;
      await writers;
      const refused = sent.filter((entry) => !entry.statuses.includes(200)).length;
      console.log(`restart: ${JSON.stringify({ sent: sent.length, refused, firstOkAfterStartMs })}`);
      expect(unexpected).toEqual([]);
      expect(refused, "some writes met the database down").toBeGreaterThan(0);
      expect(firstOkAfterStartMs).not.toBeNull();

      const stored = new Set(
        (await cluster.query<{ batch_id: string }>("SELECT batch_id FROM batches WHERE lower(contract) = lower($1)", [contract])).map(
          (row) => row.batch_id,
        ),
      );
      expect(sent.filter((entry) => entry.statuses.includes(200) && !stored.has(entry.batchId)).map((entry) => entry.batchId)).toEqual([]);
      const verify = await runCli(["verify"], { DATABASE_URL: cluster.url() });
      expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});
