import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../src/config.js";
import { openStore } from "../src/ledger/open.js";
import { createBenchSchema } from "./postgres-schema.js";
import { measureHttpCeiling, measureStorageCeiling } from "./ceilings.js";
import { createApiKey, newOperator, registerAndCredit, signIn, type Operator } from "./client.js";
import { startCluster } from "./cluster.js";
import { runLeaderboardsBench } from "./leaderboards.js";
import { runTlogProofsBench } from "./tlog-proofs.js";
import { PublishWatch } from "./publish-lag.js";
import { parseLeaderboardsOptions, parseOptions, USAGE, type BenchOptions } from "./options.js";
import { buildTransfers, encodeBodies, type PayloadSpec } from "./payload.js";
import {
  acceptPhase,
  balancePhase,
  drainPhase,
  halfRatePhase,
  mixedPhase,
  projectionCatchUpPhase,
  untilDue,
  type PhaseContext,
} from "./phases.js";
import { CLI_PATH } from "./server-process.js";
import { soakPhase } from "./soak.js";
import { runSnapshotBench } from "./snapshot.js";
import { round } from "./stats.js";
import { summarize, sustainableTransfersPerSec, type RunFigures } from "./summary.js";

/** Batches finalize this many seconds after they are accepted (MINIMUM_FINALIZE_SECONDS). */
const MINIMUM_FINALIZE_SECONDS = 1;
/** Bodies in rotation, each with its own 2000 recipients. */
const DISTINCT_BODIES = 16;
/** More than any run can spend: 10^15 points, far below the 10^18 an account may hold. */
const CREDIT_POINTS = "1000000000000000";
const BODY_SEED = 20240601;
const DEFAULTS = loadConfig({});
/** The servers run with the default POINT_TYPES; the bench moves the first of them. */
const BENCH_POINT_TYPE = DEFAULTS.pointTypes[0]!;

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

interface Run {
  options: BenchOptions;
  url: string;
  ceilingUrl: string;
  adminToken: string;
  payload: PayloadSpec;
  ctx: PhaseContext;
}

/** Where the database lives: a fresh SQLite file or PostgreSQL schema; null = skip the run. */
async function database(options: BenchOptions, dir: string): Promise<{ url: string; drop(): Promise<void> } | null> {
  if (options.db === "sqlite") return { url: `sqlite:${join(dir, "server.db")}`, drop: async () => {} };
  const baseUrl = process.env.BENCH_DATABASE_URL;
  if (!baseUrl) return skip("--db postgres needs BENCH_DATABASE_URL");
  try {
    const store = await openStore(loadConfig({ DATABASE_URL: baseUrl }));
    await store.close();
  } catch (error) {
    if (error instanceof Error && /not built yet/.test(error.message)) return skip(error.message);
    throw error;
  }
  return createBenchSchema(baseUrl);
}

function skip(reason: string): null {
  log(`skipped: ${reason}`);
  process.stdout.write(JSON.stringify({ skipped: true, reason }) + "\n");
  return null;
}

/** The children also inherit this process's environment, so e.g. SQLITE_SYNCHRONOUS passes through. */
function serverEnv(run: Run, url: string, finalizer: boolean, publish = true): Record<string, string> {
  const perPass = run.options.finalizerBatchesPerPass;
  return {
    DATABASE_URL: url,
    HOST: "127.0.0.1",
    ADMIN_TOKEN: run.adminToken,
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "100000000",
    MINIMUM_FINALIZE_SECONDS: String(MINIMUM_FINALIZE_SECONDS),
    BEARER_TOKEN_TTL_SECONDS: String(7 * 24 * 3600),
    FINALIZER_ENABLED: String(finalizer),
    ...(perPass === null ? {} : { FINALIZER_BATCHES_PER_PASS: String(perPass) }),
    // --publisher: the service's own processes publish (not the ceilings', which measure without it).
    ...(publish && run.ctx.publishWatch !== null ? run.ctx.publishWatch.env() : {}),
  };
}

function nodeArgsFor(options: BenchOptions, name: string): string[] {
  if (options.cpuProfDir === null) return [];
  const dir = resolve(options.cpuProfDir);
  mkdirSync(dir, { recursive: true });
  return ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-name", `${name}.${Date.now()}.cpuprofile`];
}

/** `points-ledger verify` on the database the run wrote: the bench must leave a consistent ledger. */
function verifyLedger(url: string): { ok: boolean; ms: number } {
  const start = performance.now();
  const result = spawnSync(process.execPath, [CLI_PATH, "verify"], { env: { ...process.env, DATABASE_URL: url }, encoding: "utf8" });
  if (result.status !== 0) log(`verify failed:\n${result.stdout}${result.stderr}`);
  return { ok: result.status === 0, ms: round(performance.now() - start) };
}

async function ceilings(run: Run) {
  const { options, ctx, payload } = run;
  log("HTTP ceiling");
  const http = await measureHttpCeiling({
    env: serverEnv(run, run.ceilingUrl, false, false),
    bodies: ctx.dueSoonBodies,
    contract: ctx.operator.contract,
    connections: options.connections,
    durationSec: options.durationSec,
    warmupSec: warmupSec(options),
    transfersPerBatch: payload.transfersPerBatch,
    nodeArgs: nodeArgsFor(options, "http-ceiling"),
  });
  log("storage ceiling");
  const concurrency = options.db === "sqlite" ? 1 : options.connections;
  const storage = await measureStorageCeiling(
    { payload, durationSec: options.durationSec, concurrency, secondsToFinalize: DEFAULTS.defaultFinalizeSeconds },
    serverEnv(run, run.ceilingUrl, false),
    nodeArgsFor(options, "storage-ceiling"),
  );
  return { http, storage };
}

const warmupSec = (options: BenchOptions) => (options.short ? 1 : 3);

/**
 * Start 1, finalizer off: set-up, then the accept phase. Its batches pile up as the backlog
 * start 2 drains, and it runs nothing else, so a --cpu-prof profile of it is the accept path.
 */
async function acceptStart(run: Run) {
  const cluster = await startCluster({
    processes: run.options.processes,
    env: serverEnv(run, run.url, false),
    nodeArgs: nodeArgsFor(run.options, "server-accept"),
    label: "server-accept",
  });
  try {
    await registerAndCredit(cluster.urls[0]!, run.adminToken, run.ctx.operator, BENCH_POINT_TYPE, CREDIT_POINTS);
    run.ctx.token = await signIn(cluster.urls[0]!, run.ctx.operator);
    // --api-key: the accept phase submits as a backend would, with a key instead of the operator's token.
    if (run.options.apiKey) run.ctx.token = await createApiKey(cluster.urls[0]!, run.ctx.token, run.ctx.operator, ["submit", "read"]);
    const accept = await acceptPhase(cluster, run.ctx, warmupSec(run.options));
    return { accept, startupToReadyMs: cluster.services[0]!.startupToReadyMs, peakRssMb: await cluster.stop() };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Start 2, finalizer on: drain the backlog; half-rate PUTs and balance reads; the mixed steady state; the soak. */
async function finalizeStart(run: Run, accept: Awaited<ReturnType<typeof acceptPhase>>) {
  const { ctx, options } = run;
  const cluster = await startCluster({
    processes: options.processes,
    env: serverEnv(run, run.url, true),
    nodeArgs: nodeArgsFor(options, "server-finalize"),
    label: "server-finalize",
  });
  try {
    const drain = await drainPhase(cluster, ctx, accept.backlogTransfers, accept.startedAtMs);
    const projection = await projectionCatchUpPhase(cluster, ctx, drain);
    const half = await halfRatePhase(cluster, ctx, accept.batchesPerSec, warmupSec(options));
    const balances = await balancePhase(cluster, ctx);
    const sustainable = sustainableTransfersPerSec(accept.transfersPerSec, drain.transfersPerSec);
    const mixed = await mixedPhase(cluster, ctx, sustainable / run.payload.transfersPerBatch);
    const soak = options.soakMinutes > 0 ? await soakPhase(cluster, ctx, options.soakMinutes, accept.batchesPerSec) : null;
    return {
      drain,
      projection,
      half,
      balances,
      mixed,
      soak,
      startupToReadyMs: cluster.services[0]!.startupToReadyMs,
      peakRssMb: await cluster.stop(),
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

function prepare(options: BenchOptions, dir: string, url: string): Run {
  const operator: Operator = newOperator();
  const payload: PayloadSpec = {
    seed: BODY_SEED,
    bodies: DISTINCT_BODIES,
    transfersPerBatch: DEFAULTS.maxTransfersPerBatch,
    pointType: BENCH_POINT_TYPE,
  };
  const transfers = buildTransfers(payload, new Set([operator.contract.toLowerCase()]));
  const ctx: PhaseContext = {
    operator,
    token: "",
    connections: options.connections,
    durationSec: options.durationSec,
    transfersPerBatch: payload.transfersPerBatch,
    dueSoonBodies: encodeBodies(payload, transfers, MINIMUM_FINALIZE_SECONDS),
    dueLaterBodies: encodeBodies(payload, transfers, DEFAULTS.defaultFinalizeSeconds),
    // batchIds unique per run: a PostgreSQL database may keep batches of earlier runs.
    runTag: `b${Date.now().toString(36)}`,
    pointType: BENCH_POINT_TYPE,
    publishWatch: null,
    minDrainBatches: drainBatchesNeeded(options),
    log,
  };
  const ceilingUrl = options.db === "sqlite" ? `sqlite:${join(dir, "ceiling.db")}` : url;
  return { options, url, ceilingUrl, adminToken: randomBytes(24).toString("base64url"), payload, ctx };
}

/**
 * PostgreSQL's finalizer takes FINALIZER_BATCHES_PER_PASS batches a pass and stamps them with the
 * pass's start; the drain is timed between the first and the last stamp, so n passes measure n − 1
 * intervals. A short run's backlog made 3 passes (issue 41: the figure moved 0.68–0.95 between
 * runs); at least MIN_DRAIN_PASSES keeps one pass's jitter to a tenth of the figure. SQLite
 * finalizes a backlog in many more, smaller steps and keeps the accept phase's backlog.
 */
const MIN_DRAIN_PASSES = 11;

function drainBatchesNeeded(options: BenchOptions): number {
  if (options.db !== "postgres") return 0;
  const perPass =
    options.finalizerBatchesPerPass ??
    loadConfig({ FINALIZER_BATCHES_PER_PASS: process.env.FINALIZER_BATCHES_PER_PASS }).finalizerBatchesPerPass;
  return MIN_DRAIN_PASSES * perPass;
}

async function runBench(options: BenchOptions, dir: string): Promise<number> {
  const db = await database(options, dir);
  if (db === null) return 0;
  try {
    const run = prepare(options, dir, db.url);
    if (options.publisher === "nats") run.ctx.publishWatch = await PublishWatch.start(run.ctx.runTag);
    try {
      return await measure(run);
    } finally {
      await run.ctx.publishWatch?.close();
    }
  } finally {
    await db.drop();
  }
}

async function measure(run: Run): Promise<number> {
  const { options, url } = run;
  log(`bodies: ${DISTINCT_BODIES} × ${run.payload.transfersPerBatch} transfers, ${round(run.ctx.dueSoonBodies[0]!.length / 1024)} KB each`);
  const { http, storage } = await ceilings(run);
  const first = await acceptStart(run);
  await untilDue(first.accept.endedAtMs, MINIMUM_FINALIZE_SECONDS);
  const second = await finalizeStart(run, first.accept);
  const verify = verifyLedger(url);
  const figures: RunFigures = {
    http,
    storage,
    ...second,
    accept: first.accept,
    startupToReadyMs: { emptyDatabase: first.startupToReadyMs, withBacklog: second.startupToReadyMs },
    peakRssMb: { accept: first.peakRssMb, finalize: second.peakRssMb },
    verify,
    config: runConfig(options, run),
  };
  process.stdout.write(JSON.stringify(summarize(figures), null, 2) + "\n");
  return verify.ok ? 0 : 1;
}

function runConfig(options: BenchOptions, run: Run): Record<string, unknown> {
  const inherited = loadConfig({
    SQLITE_SYNCHRONOUS: process.env.SQLITE_SYNCHRONOUS,
    FINALIZER_BATCHES_PER_PASS: process.env.FINALIZER_BATCHES_PER_PASS,
    LOG_CHECKPOINT_SECONDS: process.env.LOG_CHECKPOINT_SECONDS,
  });
  return {
    db: options.db,
    processes: options.processes,
    connections: options.connections,
    durationSec: options.durationSec,
    short: options.short,
    credential: options.apiKey ? "api key" : "bearer token",
    publisher: options.publisher,
    transfersPerBatch: run.payload.transfersPerBatch,
    bodyBytes: run.ctx.dueSoonBodies[0]!.length,
    distinctBodies: DISTINCT_BODIES,
    minimumFinalizeSeconds: MINIMUM_FINALIZE_SECONDS,
    finalizerBatchesPerPass: options.finalizerBatchesPerPass ?? inherited.finalizerBatchesPerPass,
    sqliteSynchronous: inherited.sqliteSynchronous,
    // The server inherits the bench's environment: its checkpoint interval sets the log lag's bound.
    logCheckpointSeconds: inherited.logCheckpointSeconds,
  };
}

async function main(): Promise<number> {
  if (process.argv.includes("--snapshot")) return runSnapshotBench(process.argv.slice(2));
  if (process.argv.includes("--tlog-proofs")) return runTlogProofsBench(process.argv.slice(2));
  if (process.argv.includes("--leaderboards")) return runLeaderboardsBench(parseLeaderboardsOptions(process.argv.slice(2)));
  const options = parseOptions(process.argv.slice(2));
  if (options === "help") {
    console.log(USAGE);
    return 0;
  }
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-bench-"));
  try {
    return await runBench(options, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  },
);
