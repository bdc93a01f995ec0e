import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { loadConfig } from "../src/config.js";
import { startCluster as startPostgres, type Cluster as Postgres } from "../test/helpers/pg-cluster.js";
import { newOperator, registerAndCredit, signIn, type Operator } from "./client.js";
import { buildTransfers, encodeBodies } from "./payload.js";
import { CLI_PATH, freePort, metricValue, scrapeMetrics, startChild, type ChildService } from "./server-process.js";
import { pollUntil, quantile, round, sleep } from "./stats.js";

/**
 * Reads from a replica (issue 38): the primary's finalized transfers per second with and without
 * 1,000 public readers of a leaderboard, those readers served by a streaming replica
 * (DATABASE_READ_URL). A primary (initdb, PostgreSQL's default settings) and a standby of it
 * (pg_basebackup -R) of the run's own, on their own ports (test/helpers/pg-cluster.ts: as root,
 * through runuser). One `serve` with FINALIZER_ENABLED=false takes the batches and serves the
 * readers; for each measure, a backlog of due batches is submitted through it, then a second
 * `serve` (the finalizer's) is started and drains it while the readers read (or not); the rate is
 * timed from the batches' own finalizedAt stamps, as bench/phases.ts drainPhase does. Measures
 * alternate without / with readers, `--pairs` times. On one machine the replica shares the
 * primary's cores: the pair shows that the reads leave the primary, not how far replicas scale.
 *
 * Run: npm run build && node dist/bench/replica-reads.js [--pairs 2] [--batches 150] [--readers 1000] [--reader-interval-seconds 1]
 */

const DEFAULTS = loadConfig({});
const POINT_TYPE = DEFAULTS.pointTypes[0]!;
const TRANSFERS_PER_BATCH = 2000;
const DISTINCT_BODIES = 16;
const CREDIT_POINTS = "1000000000000000";
/** Concurrent PUTs that submit a backlog. */
const SUBMITTERS = 4;
/** Readers start this long before the finalizer, so the drain is measured under their steady load. */
const READERS_WARMUP_MS = 3000;
const FINALIZED = "points_transfers_finalized_total";
const PROJECTED = "points_projection_transfers_total";
const FINALIZER_BATCHES_PER_PASS = 5;
const DRAIN_DEADLINE_MS = 600_000;

const log = (message: string) => process.stderr.write(`replica-reads: ${message}\n`);

interface Options {
  pairs: number;
  batches: number;
  readers: number;
  /** Each reader reads once every this many seconds (the readers' total rate: readers / this). */
  readerIntervalSec: number;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      pairs: { type: "string", default: "2" },
      batches: { type: "string", default: "150" },
      readers: { type: "string", default: "1000" },
      "reader-interval-seconds": { type: "string", default: "1" },
    },
  });
  const whole = (name: string, raw: string) => {
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number ≥ 1, got "${raw}"`);
    return value;
  };
  return {
    pairs: whole("pairs", values.pairs),
    batches: whole("batches", values.batches),
    readers: whole("readers", values.readers),
    readerIntervalSec: whole("reader-interval-seconds", values["reader-interval-seconds"]),
  };
}

interface Setup {
  primary: Postgres;
  replica: Postgres;
  api: ChildService;
  adminToken: string;
  operator: Operator;
  token: string;
  bodies: Buffer[];
}

/** The environment of both `serve` processes: no admission or rate limit in the readers' way (they all come from 127.0.0.1). */
function serverEnv(setup: Pick<Setup, "primary" | "replica" | "adminToken">, finalizer: boolean): Record<string, string> {
  return {
    DATABASE_URL: setup.primary.url(),
    ...(finalizer ? {} : { DATABASE_READ_URL: setup.replica.url() }),
    FINALIZER_ENABLED: String(finalizer),
    // Small passes: the drain is timed from the passes' stamps (drainRate), so it needs many of them.
    FINALIZER_BATCHES_PER_PASS: String(FINALIZER_BATCHES_PER_PASS),
    HOST: "127.0.0.1",
    ADMIN_TOKEN: setup.adminToken,
    LOG_LEVEL: "warn",
    PUBLIC_READS: "true",
    MINIMUM_FINALIZE_SECONDS: "1",
    BEARER_TOKEN_TTL_SECONDS: String(24 * 3600),
    RATE_LIMIT_PER_MINUTE: "100000000",
    PUBLIC_READ_RATE_LIMIT_PER_MINUTE: "100000000",
    MAX_IN_FLIGHT_REQUESTS: "4000",
    MAX_IN_FLIGHT_PER_CLIENT: "4000",
    CLIENT_TURN_BUDGET_MS: "0",
    MAX_QUEUE_DELAY_MS: "0",
    MAX_EVENT_LOOP_DELAY_MS: "0",
  };
}

async function startServe(name: string, env: Record<string, string>): Promise<ChildService> {
  const port = await freePort();
  return startChild({ name, script: CLI_PATH, args: ["serve"], env: { ...env, PORT: String(port) }, port, readyPath: "/readyz" });
}

async function setUp(): Promise<Setup> {
  log("primary cluster (initdb) and a streaming standby (pg_basebackup -R)");
  const primary = await startPostgres({ defaults: true });
  const replica = await primary.standby();
  const adminToken = randomBytes(24).toString("base64url");
  const api = await startServe("api", serverEnv({ primary, replica, adminToken }, false));
  const operator = newOperator();
  await registerAndCredit(api.url, adminToken, operator, POINT_TYPE, CREDIT_POINTS);
  const token = await signIn(api.url, operator);
  const spec = { seed: 20261206, bodies: DISTINCT_BODIES, transfersPerBatch: TRANSFERS_PER_BATCH, pointType: POINT_TYPE };
  const bodies = encodeBodies(spec, buildTransfers(spec), 1);
  return { primary, replica, api, adminToken, operator, token, bodies };
}

/** Submits `count` full batches (due a second later) through the API server, SUBMITTERS at a time. */
async function submitBacklog(setup: Setup, tag: string, count: number): Promise<void> {
  let next = 0;
  const submitter = async () => {
    for (let n = next++; n < count; n = next++) {
      const response = await fetch(`${setup.api.url}/v1/contracts/${setup.operator.contract}/batches/${tag}-${n}`, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Bearer ${setup.token}` },
        body: new Uint8Array(setup.bodies[n % setup.bodies.length]!),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`PUT ${tag}-${n} → ${response.status}: ${text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: SUBMITTERS }, submitter));
}

interface Readers {
  stop(): Promise<{
    reads: number;
    non2xx: number;
    errors: number;
    seconds: number;
    p50Ms: number;
    p99Ms: number;
    beforeFinalizerP50Ms: number;
  }>;
}

/**
 * `readers` connections reading the contract's public leaderboard, together `readers /
 * intervalSec` times a second (each about once every intervalSec), until stopped; the replica's
 * state sampled every second meanwhile.
 */
function startReaders(setup: Setup, readers: number, intervalSec: number): Readers {
  const latenciesMs: number[] = [];
  const startedMs = performance.now();
  let finished: (result: autocannon.Result) => void = () => undefined;
  const done = new Promise<autocannon.Result>((resolve) => (finished = resolve));
  const instance = autocannon(
    {
      url: `${setup.api.url}/v1/contracts/${setup.operator.contract}/leaderboard?pointType=${POINT_TYPE}&limit=100`,
      connections: readers,
      overallRate: Math.max(1, Math.round(readers / intervalSec)),
      duration: 3600,
      timeout: 30,
    },
    (error, result) => {
      if (error) log(`readers failed: ${String(error)}`);
      finished(result);
    },
  );
  const warmupLatenciesMs: number[] = [];
  const statuses = new Map<number, number>();
  const replicaSamples: { inUse: number; lagSeconds: number }[] = [];
  const sampler = setInterval(() => {
    scrapeMetrics(setup.api)
      .then((text) =>
        replicaSamples.push({
          inUse: metricValue(text, "points_database_replica_in_use"),
          lagSeconds: metricValue(text, "points_database_replica_lag_seconds"),
        }),
      )
      .catch(() => undefined);
  }, 1000);
  instance.on("response", (_client, statusCode, _bytes, responseTimeMs) => {
    statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
    if (statusCode !== 200) return;
    latenciesMs.push(responseTimeMs);
    if (performance.now() - startedMs < READERS_WARMUP_MS) warmupLatenciesMs.push(responseTimeMs);
  });
  return {
    stop: async () => {
      instance.stop();
      clearInterval(sampler);
      const result = await done;
      const seconds = (performance.now() - startedMs) / 1000;
      return {
        reads: latenciesMs.length,
        non2xx: result.non2xx,
        errors: result.errors,
        seconds: round(seconds, 1),
        p50Ms: round(quantile(latenciesMs, 0.5), 1),
        p99Ms: round(quantile(latenciesMs, 0.99), 1),
        beforeFinalizerP50Ms: round(quantile(warmupLatenciesMs, 0.5), 1),
        statuses: Object.fromEntries(statuses),
        replicaInUseShare: round(replicaSamples.filter((sample) => sample.inUse === 1).length / Math.max(1, replicaSamples.length), 2),
        replicaLagMaxSeconds: round(Math.max(0, ...replicaSamples.map((sample) => sample.lagSeconds)), 1),
      };
    },
  };
}

/** Transfers finalized per second between the first and the last finalizedAt stamp of the tag's batches (the last pass's batches left out). */
async function drainRate(primary: Postgres, tag: string): Promise<{ transfersPerSec: number; seconds: number; batches: number }> {
  const rows = await primary.query<{ finalized_at_ms: string }>(
    "SELECT finalized_at_ms FROM batches WHERE batch_id LIKE $1 AND status = 'FINALIZED'",
    [`${tag}-%`],
  );
  const stamps = rows.map((row) => Number(row.finalized_at_ms));
  const first = Math.min(...stamps);
  const last = Math.max(...stamps);
  const timed = stamps.filter((stamp) => stamp < last).length;
  const seconds = (last - first) / 1000;
  return {
    transfersPerSec: seconds > 0 ? round((timed * TRANSFERS_PER_BATCH) / seconds) : 0,
    seconds: round(seconds, 2),
    batches: stamps.length,
  };
}

/** Transactions the server has committed (pg_stat_database, flushed by each backend within about a second): where the reads' work landed. */
async function transactionsOn(cluster: Postgres): Promise<number> {
  const rows = await cluster.query<{ commits: string }>(
    "SELECT xact_commit::text AS commits FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0]!.commits);
}

async function servedBy(api: ChildService): Promise<{ replica: number; primary: number }> {
  const text = await scrapeMetrics(api);
  return {
    replica: metricValue(text, 'points_database_replica_reads_total{served_by="replica"}'),
    primary: metricValue(text, 'points_database_replica_reads_total{served_by="primary"}'),
  };
}

/** One measure: a backlog, then the finalizer drains it with or without the readers. */
async function measure(setup: Setup, options: Options, withReaders: boolean, index: number) {
  const tag = `m${index}-${randomBytes(3).toString("hex")}`;
  log(`measure ${index}: ${withReaders ? `${options.readers} readers` : "no readers"}: submitting ${options.batches} batches`);
  await submitBacklog(setup, tag, options.batches);
  await sleep(1500);
  await pollUntil(
    "the replica in use",
    async () => (metricValue(await scrapeMetrics(setup.api), "points_database_replica_in_use") === 1 ? true : undefined),
    100,
    Date.now() + 60_000,
  );
  const before = await servedBy(setup.api);
  const transactionsBefore = { primary: await transactionsOn(setup.primary), replica: await transactionsOn(setup.replica) };
  const readers = withReaders ? startReaders(setup, options.readers, options.readerIntervalSec) : null;
  if (readers) await sleep(READERS_WARMUP_MS);
  const finalizer = await startServe(`finalizer-${index}`, serverEnv(setup, true));
  const expected = options.batches * TRANSFERS_PER_BATCH;
  await pollUntil(
    "the backlog finalized",
    async () => ((await scrapeMetrics(finalizer).then((text) => metricValue(text, FINALIZED))) >= expected ? true : undefined),
    100,
    Date.now() + DRAIN_DEADLINE_MS,
  );
  const reads = readers ? await readers.stop() : null;
  const after = await servedBy(setup.api);
  // Outside the timed drain: the boards count every batch before the next measure, so each reads a board of the same size.
  await pollUntil(
    "the projection caught up",
    async () => {
      const text = await scrapeMetrics(finalizer);
      return metricValue(text, PROJECTED) >= metricValue(text, FINALIZED) ? true : undefined;
    },
    100,
    Date.now() + DRAIN_DEADLINE_MS,
  );
  const transactions = {
    primary: (await transactionsOn(setup.primary)) - transactionsBefore.primary,
    replica: (await transactionsOn(setup.replica)) - transactionsBefore.replica,
  };
  await finalizer.stop();
  const drain = await drainRate(setup.primary, tag);
  const result = {
    index,
    readers: withReaders ? options.readers : 0,
    finalizedPerSec: drain.transfersPerSec,
    drainSeconds: drain.seconds,
    reads: reads === null ? null : { ...reads, perSec: round(reads.reads / reads.seconds) },
    servedByReplica: after.replica - before.replica,
    servedByPrimary: after.primary - before.primary,
    transactions,
  };
  log(JSON.stringify(result));
  return result;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function main(): Promise<void> {
  const options = parseOptions();
  const setup = await setUp();
  try {
    // Not reported: every body's recipients on the board once (the readers' board from the start), caches warm.
    await measure(setup, { ...options, batches: DISTINCT_BODIES }, false, -1);
    const measures = [];
    for (let pair = 0; pair < options.pairs; pair++) {
      // Alternating: without, with, without, with, so drift over the run falls on both sides.
      measures.push(await measure(setup, options, false, 2 * pair));
      measures.push(await measure(setup, options, true, 2 * pair + 1));
    }
    const without = measures.filter((m) => m.readers === 0);
    const withReaders = measures.filter((m) => m.readers > 0);
    const summary = {
      readers: options.readers,
      readerIntervalSec: options.readerIntervalSec,
      batchesPerMeasure: options.batches,
      finalizedPerSecWithoutReaders: median(without.map((m) => m.finalizedPerSec)),
      finalizedPerSecWithReaders: median(withReaders.map((m) => m.finalizedPerSec)),
      readsPerSec: median(withReaders.map((m) => m.reads!.perSec)),
      readP50Ms: median(withReaders.map((m) => m.reads!.p50Ms)),
      readP99Ms: median(withReaders.map((m) => m.reads!.p99Ms)),
      readsServedByReplica: withReaders.reduce((sum, m) => sum + m.servedByReplica, 0),
      readsServedByPrimary: withReaders.reduce((sum, m) => sum + m.servedByPrimary, 0),
      measures,
    };
    process.stdout.write(JSON.stringify(summary) + "\n");
  } finally {
    await setup.api.stop();
    await setup.replica.remove();
    await setup.primary.remove();
  }
}

await main();
