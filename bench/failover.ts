import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.js";
import { newOperator, registerAndCredit, signIn } from "./client.js";
import { startWrites, startWatcher, type Watcher, type WriteRecord, type Writes } from "./failover-load.js";
import { createDatabase, findStackTools, queryStack, startStack, type Stack } from "./failover-stack.js";
import { fromLogs, probeFailover, resumed } from "./failover-timeline.js";
import { buildTransfers, encodeBodies } from "./payload.js";
import { CLI_PATH, freePort, startChild } from "./server-process.js";
import { pollUntil, quantile, round, sleep } from "./stats.js";

/**
 * `npm run bench:failover` (issue 38): deploy/patroni/ on this machine (bench/failover-stack.ts),
 * the service on HAProxy's write port under load shaped like the bench's mixed phase
 * (failover-load.ts), and the leader's Patroni and PostgreSQL killed together with SIGKILL
 * --kills times in a row, the killed node started again (it rejoins as a standby) between kills.
 * Per kill: where the time to the first 200 went (failover-timeline.ts), the answers by status,
 * and the background work moving again. At the end: every acknowledged batch on the last primary,
 * none finalized twice (two batch.finalized events), every batch finalized, `verify`. Prints one
 * JSON line; the nodes' and the service's logs stay in --out. Needs root, patroni, etcd, haproxy.
 */

const USAGE = `usage: npm run bench:failover -- [--kills N] [--rate N] [--transfers N] [--settle SECONDS] [--out DIR]
  --kills N         leaders killed one after the other (default 3)
  --rate N          batches PUT per second, due after the minimum delay (default 10)
  --transfers N     transfers per batch (default 200)
  --settle SECONDS  steady load before each kill (default 15)
  --out DIR         where the logs are kept (default a new folder under the system's temporary one)
  --pg NAME=VALUE   a PostgreSQL setting added to patroni.yml's (repeatable), to measure it against the file as shipped`;

/** deploy/patroni/patroni.yml's bootstrap.dcs.ttl: the leader key lives this long after its last renewal. */
const PATRONI_TTL_SECONDS = 20;
const POINT_TYPE = loadConfig({}).pointTypes[0]!;
const DATABASE = "points_ledger";
const STACK_READY_MS = 180_000;
/** Bound on the failover itself: far past ttl + loop_wait + the standby's re-attach. */
const FAILOVER_DEADLINE_MS = 90_000;
/** What is measured after writes resume: the background work within 10 s, the finalization rate over 10 s. */
const AFTER_RESUME_MS = 15_000;
/** How much longer the bench waits for `through` and the checkpoint to move, past that window. */
const LATE_RESUME_MS = 60_000;
const DRAIN_DEADLINE_MS = 120_000;
const VERIFY_TIMEOUT_MS = 600_000;
const MAX_IN_FLIGHT = 32;
const BODIES = 16;

const log = (message: string) => process.stderr.write(`bench:failover: ${message}\n`);

function repoRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "deploy", "patroni", "patroni.yml"))) return dir;
  }
  throw new Error("deploy/patroni/patroni.yml not found above this script");
}

function options() {
  const { values } = parseArgs({
    options: {
      kills: { type: "string" },
      rate: { type: "string" },
      transfers: { type: "string" },
      settle: { type: "string" },
      out: { type: "string" },
      pg: { type: "string", multiple: true },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const positive = (name: string, value: string | undefined, fallback: number) => {
    const parsed = value === undefined ? fallback : Number(value);
    if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive number\n${USAGE}`);
    return parsed;
  };
  return {
    kills: positive("kills", values.kills, 3),
    rate: positive("rate", values.rate, 10),
    transfers: positive("transfers", values.transfers, 200),
    settleMs: positive("settle", values.settle, 15) * 1000,
    out: values.out ?? mkdtempSync(join(tmpdir(), "pl-bench-failover-")),
    pg: Object.fromEntries(
      (values.pg ?? []).map((pair) => {
        const at = pair.indexOf("=");
        if (at <= 0) throw new Error(`--pg takes NAME=VALUE, not ${pair}\n${USAGE}`);
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
    ),
  };
}

function cli(args: string[], env: Record<string, string>): void {
  const result = spawnSync(process.execPath, [CLI_PATH, ...args], {
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: VERIFY_TIMEOUT_MS,
  });
  if (result.status !== 0) throw new Error(`points-ledger ${args.join(" ")} exited ${result.status}: ${result.stdout}\n${result.stderr}`);
}

function countStatuses(records: WriteRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const record of records) counts[record.status] = (counts[record.status] ?? 0) + 1;
  return counts;
}

async function main(): Promise<void> {
  const opts = options();
  const tools = findStackTools();
  const reason = Array.isArray(tools)
    ? `${tools.join(", ")} not installed (apt-get install -y patroni etcd-server haproxy postgresql-15)`
    : process.getuid?.() !== 0
      ? "it runs PostgreSQL as the postgres user through runuser, which needs root"
      : null;
  if (reason !== null || Array.isArray(tools)) {
    log(`skipped: ${reason}`);
    process.stdout.write(`${JSON.stringify({ skipped: true, reason })}\n`);
    return;
  }
  log(`logs in ${opts.out}`);
  const stack = await startStack(tools, join(repoRoot(), "deploy"), opts.pg);
  try {
    await run(stack, opts);
  } finally {
    await stack.stop(opts.out);
  }
}

type Options = ReturnType<typeof options>;

async function run(stack: Stack, opts: Options): Promise<void> {
  await stack.waitHealthy(STACK_READY_MS);
  await createDatabase(stack, DATABASE, STACK_READY_MS);
  const databaseUrl = stack.url(DATABASE);
  for (const name of Object.keys(opts.pg)) {
    const [row] = await queryStack<{ value: string }>(stack, "postgres", `SELECT current_setting($1) AS value`, [name]);
    log(`${name} = ${row!.value} on the leader`);
  }
  cli(["migrate"], { DATABASE_URL: databaseUrl });
  const adminToken = randomBytes(24).toString("hex");
  const port = await freePort();
  const service = await startChild({
    name: "failover",
    script: CLI_PATH,
    args: ["serve"],
    env: {
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN: adminToken,
      MINIMUM_FINALIZE_SECONDS: "1",
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
    },
    port,
    readyPath: "/readyz",
  });
  try {
    const operator = newOperator();
    await registerAndCredit(service.url, adminToken, operator, POINT_TYPE, "1000000000000000");
    const token = await signIn(service.url, operator);
    const spec = { seed: 20240601, bodies: BODIES, transfersPerBatch: opts.transfers, pointType: POINT_TYPE };
    const bodies = encodeBodies(spec, buildTransfers(spec), 1);
    const target = { url: service.url, token, contract: operator.contract };
    const watcher = startWatcher({ ...target, pointType: POINT_TYPE });
    const writes = startWrites({ ...target, bodies, ratePerSec: opts.rate, maxInFlight: MAX_IN_FLIGHT, prefix: `fo-${Date.now()}` });
    log(`${opts.rate} batches/s of ${opts.transfers} transfers, due after 1 s`);
    const kills = [];
    for (let kill = 1; kill <= opts.kills; kill++) kills.push(await killLeader(stack, writes, watcher, kill, opts));
    await stack.waitHealthy(STACK_READY_MS);
    await writes.stop();
    await watcher.stop();
    const totals = { ...(await checkLastPrimary(stack, operator.contract, writes.records)), watcherReads: watcher.statuses };
    const summary = { settings: { ...opts, ttl: PATRONI_TTL_SECONDS, loopWait: 5, retryTimeout: 5, haproxyCheckMs: 1000 }, kills, totals };
    writeFileSync(join(opts.out, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    if (totals.acknowledgedLost > 0 || totals.finalizedTwice > 0 || totals.unexpected.length > 0) process.exitCode = 1;
  } finally {
    writeFileSync(join(opts.out, "server.log"), service.output());
    await service.stop();
  }
}

/** One kill of the leader after the settle time, measured (failover-timeline.ts); the killed node is started again at the end. */
async function killLeader(stack: Stack, writes: Writes, watcher: Watcher, kill: number, opts: Options) {
  await stack.waitHealthy(STACK_READY_MS);
  await sleep(opts.settleMs);
  const leaderName = (await stack.members())!.find((member) => member.role === "leader")!.name;
  const leader = stack.nodes.find((node) => node.name === leaderName)!;
  const killedAtMs = stack.kill(leader);
  log(`kill ${kill}: SIGKILL of ${leaderName}'s Patroni and PostgreSQL`);
  const probed = await probeFailover(stack, leader, killedAtMs, killedAtMs + FAILOVER_DEADLINE_MS);
  await pollUntil(
    "writes succeeding again",
    async () => (writes.records.some((record) => record.sentMs >= killedAtMs && record.status === 200) ? true : undefined),
    100,
    killedAtMs + FAILOVER_DEADLINE_MS,
  );
  await sleep(AFTER_RESUME_MS);
  // Past that window, wait (bounded) for `through` and the checkpoint to move, so a late one has a figure too.
  await pollUntil(
    "the projection's through past the kill and a larger checkpoint",
    async () => {
      const moved = resumed(writes.records, watcher.samples, killedAtMs);
      return moved.throughPastKillAfterMs !== null && moved.checkpointGrewAfterMs !== null ? true : undefined;
    },
    250,
    Date.now() + LATE_RESUME_MS,
  ).catch(() => log(`kill ${kill}: the projection or the log did not move within ${LATE_RESUME_MS} ms more`));
  const windowRecords = writes.records.filter((record) => record.sentMs >= killedAtMs - opts.settleMs);
  const beforeKillMs = windowRecords
    .filter((record) => record.sentMs < killedAtMs && record.status === 200)
    .map((record) => record.answeredMs - record.sentMs);
  const figures = {
    kill,
    killed: leaderName,
    ...probed,
    logs: fromLogs(stack, leader, probed.newLeader, killedAtMs, PATRONI_TTL_SECONDS),
    ...resumed(writes.records, watcher.samples, killedAtMs),
    answers: countStatuses(windowRecords),
    putP99MsBeforeKill: round(quantile(beforeKillMs, 0.99)),
  };
  log(JSON.stringify(figures));
  stack.start(leader);
  return figures;
}

/**
 * On the last primary, once every batch is FINALIZED (bounded): the acknowledged batches missing,
 * the batches with two `batch.finalized` events, the answers other than 200 or 503 with
 * Retry-After, and `points-ledger verify` (which throws when it fails).
 */
async function checkLastPrimary(stack: Stack, contract: string, records: WriteRecord[]) {
  const acknowledged = records.filter((record) => record.status === 200);
  const unexpected = records.filter((record) => record.status !== 200 && !(record.status === 503 && record.retryAfter !== null));
  log(`load stopped: ${acknowledged.length} acknowledged; checking the last primary`);
  const stored = await pollUntil(
    "every acknowledged batch finalized",
    async () => {
      const rows = await queryStack<{ batch_id: string; status: string }>(
        stack,
        DATABASE,
        "SELECT batch_id, status FROM batches WHERE lower(contract) = lower($1)",
        [contract],
      ).catch(() => undefined);
      return rows !== undefined && rows.every((row) => row.status === "FINALIZED") ? rows : undefined;
    },
    1000,
    Date.now() + DRAIN_DEADLINE_MS,
  );
  const storedIds = new Set(stored.map((row) => row.batch_id));
  const perBatch = await queryStack<{ finalized: number; batches: number }>(
    stack,
    DATABASE,
    `SELECT finalized, count(*)::int AS batches FROM (
       SELECT count(*)::int AS finalized FROM events
       WHERE type = 'batch.finalized' AND lower(stream) = lower($1) GROUP BY data->'batch'->>'id'
     ) per_batch GROUP BY finalized`,
    [contract],
  );
  // verify reads every transfer: more than the default statement timeout allows at millions of them on a busy machine.
  cli(["verify"], { DATABASE_URL: stack.url(DATABASE), PG_STATEMENT_TIMEOUT_MS: String(VERIFY_TIMEOUT_MS) });
  return {
    requests: records.length,
    answers: countStatuses(records),
    acknowledged: acknowledged.length,
    acknowledgedLost: acknowledged.filter((record) => !storedIds.has(record.batchId)).length,
    storedBatches: stored.length,
    storedNotAcknowledged: stored.length - acknowledged.filter((record) => storedIds.has(record.batchId)).length,
    finalizedOnce: perBatch.find((row) => row.finalized === 1)?.batches ?? 0,
    finalizedTwice: perBatch.filter((row) => row.finalized > 1).reduce((sum, row) => sum + row.batches, 0),
    answers500: records.filter((record) => record.status >= 500 && record.status !== 503).length,
    unexpected: unexpected.slice(0, 5).map((record) => `${record.status} ${record.body}`),
    verify: "ok",
  };
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
