import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { DEPLOY_DIR, which } from "./helpers/deploy.js";
import {
  assertBuilt,
  creditPoints,
  freePort,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sleep,
  startServerProcess,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * The failover of deploy/patroni/ as shipped, on this machine (issue 38): one etcd, three Patroni
 * nodes running PostgreSQL 15 (synchronous_mode_strict, ttl 20, loop_wait 5, retry_timeout 5) and
 * HAProxy in front, from those files with only the ports and folders changed; the service's
 * DATABASE_URL is HAProxy's write port. Under four concurrent writers the leader's Patroni and
 * PostgreSQL are killed with SIGKILL: no answer is a 500, writes succeed again by themselves,
 * every batch answered 200 is on the new primary, and `verify` holds. Prints where the time went
 * (the new leader's promotion, HAProxy's switch, the first 200). Skipped, with how to run it,
 * where patroni, etcd or haproxy is not installed or the test cannot run PostgreSQL as `postgres`.
 */

const tools = { patroni: which("patroni"), etcd: which("etcd"), haproxy: which("haproxy") };
const missing = Object.entries(tools)
  .filter(([, path]) => !path)
  .map(([name]) => name);
const SKIP_REASON =
  missing.length > 0
    ? `patroni-failover skipped: ${missing.join(", ")} not installed (apt-get install -y patroni etcd-server haproxy postgresql-15)`
    : process.getuid?.() !== 0
      ? "patroni-failover skipped: it runs PostgreSQL as the postgres user through runuser, which needs root"
      : null;
if (SKIP_REASON) console.warn(SKIP_REASON);

const NODES = [1, 2, 3] as const;
const SUPERUSER_PASSWORD = `su-${randomBytes(6).toString("hex")}`;
const WRITERS = 4;
const POINT_TYPE = "PHASE2_POINTS";
const WRITES_BEFORE_KILL = 20;
const WRITES_AFTER_FAILOVER = 20;
const STACK_READY_MS = 180_000;
const TEST_TIMEOUT_MS = 400_000;

interface Node {
  name: string;
  restPort: number;
  pgPort: number;
  dataDir: string;
  /** runuser's pid; Patroni is its child. */
  runuser: ChildProcess;
}

async function clusterState(restPort: number): Promise<{ members: { name: string; role: string; state: string }[] } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${restPort}/cluster`, { signal: AbortSignal.timeout(2000) });
    return response.ok ? ((await response.json()) as { members: { name: string; role: string; state: string }[] }) : undefined;
  } catch {
    return undefined;
  }
}

function childPid(parent: number): number | null {
  const result = spawnSync("ps", ["-o", "pid=", "--ppid", String(parent)], { encoding: "utf8" });
  const pid = Number(result.stdout.trim().split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

describe.skipIf(SKIP_REASON !== null)("Patroni failover behind HAProxy (deploy/patroni/)", () => {
  const dir = mkdtempSync(join(tmpdir(), "pl-patroni-"));
  const nodes: Node[] = [];
  const processes: ChildProcess[] = [];
  let writePort = 0;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    assertBuilt();
    const owner = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const group = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(owner.stdout), Number(group.stdout));
    const etcdPort = await freePort();
    const etcdPeerPort = await freePort();
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    processes.push(
      spawn(
        tools.etcd!,
        [
          ...["--name", "e", "--data-dir", join(dir, "etcd"), "--listen-client-urls", etcdUrl, "--advertise-client-urls", etcdUrl],
          ...["--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", `e=${peerUrl}`],
        ],
        { stdio: "ignore" },
      ),
    );
    const config = readFileSync(join(DEPLOY_DIR, "patroni", "patroni.yml"), "utf8").replace(
      "hosts: 127.0.0.1:2379",
      `hosts: 127.0.0.1:${etcdPort}`,
    );
    writeFileSync(join(dir, "patroni.yml"), config);
    for (const index of NODES) {
      const node = { name: `node${index}`, restPort: await freePort(), pgPort: await freePort(), dataDir: join(dir, `node${index}`) };
      const env = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        PATRONI_NAME: node.name,
        PATRONI_RESTAPI_LISTEN: `127.0.0.1:${node.restPort}`,
        PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${node.restPort}`,
        PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${node.pgPort}`,
        PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${node.pgPort}`,
        PATRONI_POSTGRESQL_DATA_DIR: node.dataDir,
        PATRONI_POSTGRESQL_PGPASS: join(dir, `pgpass${index}`),
        PATRONI_POSTGRESQL_PARAMETERS_UNIX_SOCKET_DIRECTORIES: dir,
        PATRONI_SUPERUSER_PASSWORD: SUPERUSER_PASSWORD,
        PATRONI_REPLICATION_PASSWORD: `rep-${SUPERUSER_PASSWORD}`,
        PATRONI_REWIND_PASSWORD: `rw-${SUPERUSER_PASSWORD}`,
      };
      const runuser = spawn("runuser", ["-u", "postgres", "--", tools.patroni!, join(dir, "patroni.yml")], { env, stdio: "ignore" });
      processes.push(runuser);
      nodes.push({ ...node, runuser });
    }
    // HAProxy from deploy/patroni/haproxy.cfg with this test's ports.
    writePort = await freePort();
    const readPort = await freePort();
    let haproxyConfig = readFileSync(join(DEPLOY_DIR, "patroni", "haproxy.cfg"), "utf8")
      .replace("bind 127.0.0.1:5000", `bind 127.0.0.1:${writePort}`)
      .replace("bind 127.0.0.1:5001", `bind 127.0.0.1:${readPort}`);
    NODES.forEach((index, at) => {
      haproxyConfig = haproxyConfig
        .replaceAll(`127.0.0.1:${5432 + index}`, `127.0.0.1:${nodes[at]!.pgPort}`)
        .replaceAll(`check port ${8007 + index}`, `check port ${nodes[at]!.restPort}`);
    });
    writeFileSync(join(dir, "haproxy.cfg"), haproxyConfig);
    processes.push(spawn(tools.haproxy!, ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: "ignore" }));

    await pollUntil("a leader and two running standbys", STACK_READY_MS, async () => {
      const state = await clusterState(nodes[0]!.restPort);
      const running = state?.members.filter((member) => member.state === "running" || member.state === "streaming") ?? [];
      return running.length === 3 &&
        running.some((member) => member.role === "leader") &&
        running.some((member) => member.role === "sync_standby")
        ? true
        : undefined;
    });
    const admin = `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${writePort}`;
    await pollUntil("the write port to reach the leader", STACK_READY_MS, async () => {
      const client = new pg.Client({ connectionString: `${admin}/postgres` });
      client.on("error", () => undefined);
      try {
        await client.connect();
        await client.query("CREATE DATABASE points_ledger");
        return true;
      } catch {
        return undefined;
      } finally {
        await client.end().catch(() => undefined);
      }
    });
    const migrate = await runCli(["migrate"], { DATABASE_URL: `${admin}/points_ledger` }, STACK_READY_MS);
    expect(migrate.code, migrate.stderr).toBe(0);
  }, 2 * STACK_READY_MS);

  afterAll(async () => {
    await server?.kill("SIGKILL");
    for (const node of nodes) {
      const patroni = childPid(node.runuser.pid!);
      if (patroni) process.kill(patroni, "SIGTERM");
    }
    await sleep(3000);
    for (const node of nodes) {
      const patroni = childPid(node.runuser.pid!);
      if (patroni) process.kill(patroni, "SIGKILL");
      try {
        process.kill(Number(readFileSync(join(node.dataDir, "postmaster.pid"), "utf8").split("\n")[0]), "SIGKILL");
      } catch {
        // not running
      }
    }
    for (const child of processes) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "SIGKILL of the leader under four writers: no 500, writes again by themselves, every acknowledged batch on the new primary",
    async () => {
      const adminToken = newAdminToken();
      const databaseUrl = `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${writePort}/points_ledger`;
      server = await startServerProcess({
        DATABASE_URL: databaseUrl,
        ADMIN_TOKEN: adminToken,
        PG_POOL_SIZE: "4",
        MINIMUM_FINALIZE_SECONDS: "1",
      });
      const operator = privateKeyToAccount(generatePrivateKey());
      const contract = randomAddress();
      await setOperator(server.url, adminToken, contract, operator.address);
      await creditPoints(server.url, adminToken, contract, "failover-credit", POINT_TYPE, "1000000000");
      const token = await signIn(server.url, contract, operator);

      const acknowledged: string[] = [];
      const unexpected: string[] = [];
      const statuses: Record<string, number> = {};
      let killedAtMs: number | null = null;
      let firstOkAfterKillMs: number | null = null;
      let okAfterKill = 0;
      let stopped = false;
      const writer = async () => {
        while (!stopped && unexpected.length === 0) {
          const batchId = `failover-${randomBytes(6).toString("hex")}`;
          // Only a write sent after the kill shows the service writing again (one in flight may be answered after it).
          const sentAfterKillMs = killedAtMs;
          const response = await fetch(`${server!.url}/v1/contracts/${contract}/batches/${batchId}`, {
            method: "PUT",
            headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
            body: JSON.stringify({
              pointType: POINT_TYPE,
              transfers: [{ toAddress: randomAddress(), points: "1.5" }],
              secondsToFinalize: 1,
            }),
          }).catch(() => null);
          const text = (await response?.text()) ?? "no answer";
          const status = response?.status ?? 0;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status === 200) {
            acknowledged.push(batchId);
            if (sentAfterKillMs !== null) {
              okAfterKill += 1;
              firstOkAfterKillMs ??= Date.now() - sentAfterKillMs;
            }
          } else if (status === 503 && /^[0-9]+$/.test(response!.headers.get("retry-after") ?? "")) {
            await sleep(100);
          } else {
            unexpected.push(`${batchId}: ${status} ${text.slice(0, 200)}`);
          }
        }
      };
      const writers = Promise.all(Array.from({ length: WRITERS }, writer));
      await pollUntil("writes before the kill", STACK_READY_MS, async () =>
        acknowledged.length >= WRITES_BEFORE_KILL || unexpected.length > 0 ? true : undefined,
      );

      const before = await clusterState(nodes[0]!.restPort);
      const leaderName = before!.members.find((member) => member.role === "leader")!.name;
      const leader = nodes.find((node) => node.name === leaderName)!;
      const postmaster = Number(readFileSync(join(leader.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
      const patroni = childPid(leader.runuser.pid!)!;
      killedAtMs = Date.now();
      process.kill(patroni, "SIGKILL");
      process.kill(postmaster, "SIGKILL");

      const survivor = nodes.find((node) => node !== leader)!;
      const promotedAfterMs = await pollUntil("a new leader", STACK_READY_MS, async () => {
        const state = await clusterState(survivor.restPort);
        const newLeader = state?.members.find(
          (member) => member.role === "leader" && member.name !== leaderName && member.state === "running",
        );
        return newLeader ? Date.now() - killedAtMs! : undefined;
      });
      await pollUntil("writes after the failover", STACK_READY_MS, async () =>
        okAfterKill >= WRITES_AFTER_FAILOVER || unexpected.length > 0 ? true : undefined,
      );
      stopped = true;
      await writers;
      console.log(
        `patroni failover: ${JSON.stringify({ leader: leaderName, promotedAfterMs, firstOkAfterKillMs, statuses, acknowledged: acknowledged.length })}`,
      );
      expect(unexpected).toEqual([]);

      const stored = new Set(
        (await runQuery(databaseUrl, "SELECT batch_id FROM batches WHERE lower(contract) = lower($1)", [contract])).map(
          (row) => row.batch_id as string,
        ),
      );
      expect(acknowledged.filter((batchId) => !stored.has(batchId))).toEqual([]);
      const verify = await runCli(["verify"], { DATABASE_URL: databaseUrl }, STACK_READY_MS);
      expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});

async function runQuery(url: string, sql: string, values: unknown[]): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as Record<string, unknown>[];
  } finally {
    await client.end().catch(() => undefined);
  }
}
