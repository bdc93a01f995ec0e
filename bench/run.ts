import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../src/config.js";
import { openStore } from "../src/store/open.js";
import { measureHttpCeiling, measureStorageCeiling } from "./ceilings.js";
import { newOperator, registerAndCredit, signIn } from "./client.js";
import { startCluster, type Cluster } from "./cluster.js";
import { parseOptions, USAGE, type BenchOptions } from "./options.js";
import { buildTransfers, encodeBodies, type PayloadSpec } from "./payload.js";
import { acceptPhase, balancePhase, drainPhase, halfRatePhase, mixedPhase, untilDue, type PhaseContext } from "./phases.js";
import { CLI_PATH } from "./server-process.js";
import { soakPhase } from "./soak.js";
import { round } from "./stats.js";

/** Batches finalize this many seconds after they are accepted (MINIMUM_FINALIZE_SECONDS). */
const MINIMUM_FINALIZE_SECONDS = 1;
/** Bodies in rotation, each with its own 2000 recipients. */
const DISTINCT_BODIES = 16;
/** More than any run can spend: 10^15 points, far below the 10^18 an account may hold. */
const CREDIT_POINTS = "1000000000000000";
const BODY_SEED = 20240601;

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

/** Where the database lives: a fresh SQLite file, or BENCH_DATABASE_URL; null = skip the run. */
async function databaseUrl(options: BenchOptions, dir: string, name: string): Promise<string | null> {
  if (options.db === "sqlite") return `sqlite:${join(dir, `${name}.db`)}`;
  const url = process.env.BENCH_DATABASE_URL;
  if (!url) return skip("--db postgres needs BENCH_DATABASE_URL");
  try {
    const store = await openStore(loadConfig({ DATABASE_URL: url }));
    await store.close();
  } catch (error) {
    if (error instanceof Error && /not built yet/.test(error.message)) return skip(error.message);
    throw error;
  }
  return url;
}

function skip(reason: string): null {
  log(`skipped: ${reason}`);
  process.stdout.write(JSON.stringify({ skipped: true, reason }) + "\n");
  return null;
}

function serverEnv(url: string, adminToken: string, finalizer: boolean, options: BenchOptions): Record<string, string> {
  return {
    DATABASE_URL: url,
    HOST: "127.0.0.1",
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "100000000",
    MINIMUM_FINALIZE_SECONDS: String(MINIMUM_FINALIZE_SECONDS),
    BEARER_TOKEN_TTL_SECONDS: String(7 * 24 * 3600),
    FINALIZER_ENABLED: String(finalizer),
    ...(options.finalizerBatchesPerPass === null ? {} : { FINALIZER_BATCHES_PER_PASS: String(options.finalizerBatchesPerPass) }),
  };
}

function nodeArgsFor(options: BenchOptions, name: string): string[] {
  if (options.cpuProfDir === null) return [];
  const dir = resolve(options.cpuProfDir);
  mkdirSync(dir, { recursive: true });
  return ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-name", `${name}.${Date.now()}.cpuprofile`];
}

/** One process that must both accept and finalize every transfer: the two costs add up. */
function sustainableTransfersPerSec(accepted: number, finalized: number | null): number {
  return finalized === null ? accepted / 2 : 1 / (1 / accepted + 1 / finalized);
}

/** `points-ledger verify` on the database the run wrote: the bench must leave a consistent ledger. */
function verifyLedger(url: string): { ok: boolean; ms: number } {
  const start = performance.now();
  const result = spawnSync(process.execPath, [CLI_PATH, "verify"], { env: { ...process.env, DATABASE_URL: url }, encoding: "utf8" });
  if (result.status !== 0) log(`verify failed:\n${result.stdout}${result.stderr}`);
  return { ok: result.status === 0, ms: round(performance.now() - start) };
}

async function run(options: BenchOptions, dir: string): Promise<number> {
  const url = await databaseUrl(options, dir, "server");
  if (url === null) return 0;
  const ceilingUrl = options.db === "sqlite" ? `sqlite:${join(dir, "ceiling.db")}` : url;
  const adminToken = randomBytes(24).toString("base64url");
  const operator = newOperator();
  const payload: PayloadSpec = { seed: BODY_SEED, bodies: DISTINCT_BODIES, transfersPerBatch: loadConfig({}).maxTransfersPerBatch, pointType: "PHASE2_POINTS" };
  const transfers = buildTransfers(payload, new Set([operator.contract.toLowerCase()]));
  const dueSoonBodies = encodeBodies(payload, transfers, MINIMUM_FINALIZE_SECONDS);
  const dueLaterBodies = encodeBodies(payload, transfers, loadConfig({}).defaultFinalizeSeconds);
  const warmupSec = options.short ? 1 : 3;
  log(`bodies: ${dueSoonBodies.length} × ${payload.transfersPerBatch} transfers, ${round(dueSoonBodies[0]!.length / 1024)} KB each`);

  log("HTTP ceiling");
  const http = await measureHttpCeiling({
    env: serverEnv(ceilingUrl, adminToken, false, options),
    bodies: dueSoonBodies,
    contract: operator.contract,
    connections: options.connections,
    durationSec: options.durationSec,
    warmupSec,
    transfersPerBatch: payload.transfersPerBatch,
    nodeArgs: nodeArgsFor(options, "http-ceiling"),
  });
  log("storage ceiling");
  const storage = await measureStorageCeiling(
    { payload, durationSec: options.durationSec, concurrency: options.db === "sqlite" ? 1 : options.connections, secondsToFinalize: loadConfig({}).defaultFinalizeSeconds },
    serverEnv(ceilingUrl, adminToken, false, options),
    nodeArgsFor(options, "storage-ceiling"),
  );

  // Start 1, finalizer off: the accepted batches pile up as a backlog that start 2 drains.
  const start1 = await startCluster({ processes: options.processes, env: serverEnv(url, adminToken, false, options), nodeArgs: nodeArgsFor(options, "server-accept"), label: "server-accept" });
  let accept, balances, peakRss1;
  const ctx: PhaseContext = {
    operator,
    token: "",
    connections: options.connections,
    durationSec: options.durationSec,
    transfersPerBatch: payload.transfersPerBatch,
    dueSoonBodies,
    dueLaterBodies,
    runTag: `b${Date.now().toString(36)}`,
    log,
  };
  try {
    await registerAndCredit(start1.urls[0]!, adminToken, operator, CREDIT_POINTS);
    ctx.token = await signIn(start1.urls[0]!, operator);
    accept = await acceptPhase(start1, ctx, warmupSec);
    balances = await balancePhase(start1, ctx);
  } finally {
    peakRss1 = await start1.stop();
  }
  await untilDue(accept.endedAtMs, MINIMUM_FINALIZE_SECONDS);

  // Start 2, finalizer on: drain the backlog, then a steady half-rate load, then the soak.
  const start2: Cluster = await startCluster({ processes: options.processes, env: serverEnv(url, adminToken, true, options), nodeArgs: nodeArgsFor(options, "server-finalize"), label: "server-finalize" });
  let drain, half, mixed, soak, peakRss2;
  try {
    drain = await drainPhase(start2, ctx, accept.backlogTransfers, accept.startedAtMs);
    half = await halfRatePhase(start2, ctx, accept.batchesPerSec);
    const sustainable = sustainableTransfersPerSec(accept.transfersPerSec, drain.transfersPerSec);
    mixed = await mixedPhase(start2, ctx, sustainable / payload.transfersPerBatch);
    soak = options.soakMinutes > 0 ? await soakPhase(start2, ctx, options.soakMinutes, accept.batchesPerSec) : null;
  } finally {
    peakRss2 = await start2.stop();
  }
  const verify = verifyLedger(url);

  const ceilingMin = Math.min(http, storage.transfersPerSec);
  // What one thread doing the three stages back to back could reach: the server is one thread.
  const serial = 1 / (1 / http + 1 / storage.stages.domain + 1 / storage.transfersPerSec);
  const summary = {
    transfersPerSecAccepted: round(accept.transfersPerSec),
    latencyMs: { p50: round(accept.p50Ms, 1), p99: round(accept.p99Ms, 1) },
    ceilings: { http: round(http), storage: round(storage.transfersPerSec), serialOneThread: round(serial) },
    ratios: {
      acceptedToMinCeiling: round(accept.transfersPerSec / ceilingMin, 3),
      acceptedToHttp: round(accept.transfersPerSec / http, 3),
      acceptedToStorage: round(accept.transfersPerSec / storage.transfersPerSec, 3),
      acceptedToSerialOneThread: round(accept.transfersPerSec / serial, 3),
    },
    transfersPerSecFinalized: drain.transfersPerSec === null ? null : round(drain.transfersPerSec),
    finalizationLagP99Ms: round(mixed.lagP99Ms),
    balanceReadP99Ms: round(balances.p99Ms, 2),
    halfRateP99Ms: round(half.p99Ms, 1),
    peakRssMb: round(Math.max(peakRss1 ?? 0, peakRss2 ?? 0), 1),
    details: {
      acceptRejected: accept.rejected,
      batchesPerSecAccepted: round(accept.batchesPerSec, 1),
      stageTransfersPerSec: {
        jsonParse: round(storage.stages.jsonParse),
        schema: round(storage.stages.schema),
        domain: round(storage.stages.domain),
      },
      drain: { batches: drain.batches, passes: drain.passes, seconds: round(drain.seconds, 2) },
      halfRate: { batchesPerSec: round(half.batchesPerSec, 1), p50Ms: round(half.p50Ms, 1) },
      sustainableTransfersPerSec: round(sustainableTransfersPerSec(accept.transfersPerSec, drain.transfersPerSec)),
      mixed: {
        batchesPerSec: round(mixed.batchesPerSec, 1),
        putP50Ms: round(mixed.putP50Ms, 1),
        putP99Ms: round(mixed.putP99Ms, 1),
        lagP50Ms: round(mixed.lagP50Ms),
        lagMaxMs: round(mixed.lagMaxMs),
        lagSamples: mixed.lagSamples,
      },
      balanceReads: { perSec: round(balances.readsPerSec), p50Ms: round(balances.p50Ms, 2) },
      startupToReadyMs: round(start1.services[0]!.startupToReadyMs),
      peakRssMbByStart: { accept: peakRss1 && round(peakRss1, 1), finalize: peakRss2 && round(peakRss2, 1) },
      ledgerVerified: verify,
      soak,
    },
    config: {
      db: options.db,
      processes: options.processes,
      connections: options.connections,
      durationSec: options.durationSec,
      short: options.short,
      transfersPerBatch: payload.transfersPerBatch,
      bodyBytes: dueSoonBodies[0]!.length,
      distinctBodies: DISTINCT_BODIES,
      minimumFinalizeSeconds: MINIMUM_FINALIZE_SECONDS,
      finalizerBatchesPerPass: options.finalizerBatchesPerPass ?? loadConfig({}).finalizerBatchesPerPass,
      sqliteSynchronous: loadConfig({}).sqliteSynchronous,
      node: process.version,
      cpus: cpus().length,
      totalMemMb: round(totalmem() / 1048576),
    },
  };
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n");
  return verify === null || verify.ok ? 0 : 1;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  if (options === "help") {
    console.log(USAGE);
    return 0;
  }
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-bench-"));
  try {
    return await run(options, dir);
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
