import { measureCpu, type CpuUse } from "./cpu.js";
import { call, listBatches, type Operator } from "./client.js";
import type { Cluster } from "./cluster.js";
import { batchLoad, getLoad, type LoadResult } from "./load.js";
import { watchLog } from "./log-lag.js";
import type { PublishWatch } from "./publish-lag.js";
import { pacedLoad, type PacedRequest } from "./paced.js";
import { pollUntil, quantile, sleep } from "./stats.js";

/** The measured phases against running server processes. */

export interface PhaseContext {
  operator: Operator;
  token: string;
  connections: number;
  durationSec: number;
  transfersPerBatch: number;
  /** Bodies that finalize after MINIMUM_FINALIZE_SECONDS, and bodies that wait a day. */
  dueSoonBodies: Buffer[];
  dueLaterBodies: Buffer[];
  /** A unique tag for batchIds: a PostgreSQL database may keep batches from earlier runs. */
  runTag: string;
  /** The point type of every batch: the leaderboard whose `through` the bench watches. */
  pointType: string;
  /** --publisher nats: times each event from its occurredAt to its arrival at the broker. */
  publishWatch: PublishWatch | null;
  /** Batches the drain needs at least (accepted past the timed accept phase if need be): drainBatchesNeeded in run.ts. */
  minDrainBatches: number;
  log(message: string): void;
}

/** Transfers finalized per second or better, for bounding waits on the finalizer. */
const SLOWEST_PLAUSIBLE_FINALIZE_PER_SEC = 5_000;
/** Added to every bounded wait on the server, beyond what the work itself should take. */
const WAIT_SLACK_MS = 60_000;
const FINALIZED = "points_transfers_finalized_total";
const ACCEPTED = "points_transfers_accepted_total";
const PROJECTED = "points_projection_transfers_total";
/** How often the bench reads a leaderboard's `through` while it watches the projection. */
const THROUGH_POLL_MS = 25;
const SETTLE_INTERVAL_MS = 200;

/** A counter once it stops moving (answers to requests in flight have landed); bounded. */
async function settled(cluster: Cluster, name: string): Promise<number> {
  let previous = await cluster.metric(name);
  return pollUntil(
    `${name} to settle`,
    async () => {
      await sleep(SETTLE_INTERVAL_MS);
      const value = await cluster.metric(name);
      const stable = value === previous;
      previous = value;
      return stable ? value : undefined;
    },
    0,
    Date.now() + WAIT_SLACK_MS,
  );
}

/** The n-th PUT of a paced phase: a new batchId, the bodies in rotation. */
export function batchRequests(ctx: PhaseContext, prefix: string, bodies: Buffer[]): (n: number) => PacedRequest {
  const headers = { "content-type": "application/json", authorization: `Bearer ${ctx.token}` };
  return (n) => ({
    method: "PUT",
    path: `/v1/contracts/${ctx.operator.contract}/batches/${prefix}-${n}`,
    headers,
    body: bodies[n % bodies.length]!,
  });
}

/** A 4xx on a valid, unique, funded batch is a bug in the service or the bench: stop. */
function requireNoClientErrors(phase: string, result: LoadResult): void {
  if (result.client4xx > 0 || result.ok === 0) {
    throw new Error(
      `${phase}: ${result.ok} accepted, ${result.client4xx} 4xx, ${result.errors} errors; first failure: ${result.firstFailure}`,
    );
  }
}

export interface AcceptResult {
  transfersPerSec: number;
  batchesPerSec: number;
  /** Transfers the server stored in this phase (its own counter), all due after the minimum delay. */
  backlogTransfers: number;
  startedAtMs: number;
  p50Ms: number;
  p99Ms: number;
  rejected: { "4xx": number; "5xx": number; errors: number };
  /** Per-core busy share and the servers' CPU during the phase: does the second core work? */
  cpu: CpuUse;
  endedAtMs: number;
}

/** Full-batch PUTs as fast as the connections allow; these batches finalize after the minimum delay. */
export async function acceptPhase(cluster: Cluster, ctx: PhaseContext, warmupSec: number): Promise<AcceptResult> {
  const base = { targets: cluster.urls, token: ctx.token, contract: ctx.operator.contract, connections: ctx.connections };
  ctx.log(`warm-up ${warmupSec}s`);
  requireNoClientErrors(
    "warm-up",
    await batchLoad({ ...base, bodies: ctx.dueLaterBodies, batchIdPrefix: `${ctx.runTag}-w`, durationSec: warmupSec }),
  );
  const acceptedBefore = await settled(cluster, ACCEPTED);
  ctx.log(`accept: ${ctx.durationSec}s of full batches, ${ctx.connections} connections`);
  const startedAtMs = Date.now() - 1;
  const endCpu = measureCpu(cluster.services.map((service) => service.pid));
  const result = await batchLoad({ ...base, bodies: ctx.dueSoonBodies, batchIdPrefix: `${ctx.runTag}-a`, durationSec: ctx.durationSec });
  const cpu = endCpu();
  requireNoClientErrors("accept", result);
  await topUpBacklog(base, ctx, result.ok);
  // Requests still in flight when the load stopped may be stored too: they join the backlog.
  const acceptedAfter = await settled(cluster, ACCEPTED);
  return {
    transfersPerSec: (result.ok * ctx.transfersPerBatch) / result.durationSec,
    batchesPerSec: result.ok / result.durationSec,
    backlogTransfers: acceptedAfter - acceptedBefore,
    startedAtMs,
    p50Ms: quantile(result.latenciesMs, 0.5),
    p99Ms: quantile(result.latenciesMs, 0.99),
    rejected: { "4xx": result.client4xx, "5xx": result.server5xx, errors: result.errors },
    cpu,
    endedAtMs: Date.now(),
  };
}

/** Rounds of extra load at most for the drain's backlog: bounds the bench if the server accepts almost nothing. */
const MAX_TOP_UP_ROUNDS = 20;

/**
 * More due-soon batches, after the timed accept phase (its figure is the timed load only), until
 * the backlog holds ctx.minDrainBatches: their ids share the accept phase's prefix, so the drain
 * times them too.
 */
async function topUpBacklog(
  base: Omit<Parameters<typeof batchLoad>[0], "bodies" | "batchIdPrefix" | "durationSec">,
  ctx: PhaseContext,
  accepted: number,
) {
  let backlog = accepted;
  for (let round = 1; backlog < ctx.minDrainBatches && round <= MAX_TOP_UP_ROUNDS; round++) {
    ctx.log(`accept: ${backlog} batches due, the drain needs ${ctx.minDrainBatches}: ${ctx.durationSec}s more`);
    const more = await batchLoad({
      ...base,
      bodies: ctx.dueSoonBodies,
      batchIdPrefix: `${ctx.runTag}-a${round}-`,
      durationSec: ctx.durationSec,
    });
    requireNoClientErrors("accept (the drain's backlog)", more);
    backlog += more.ok;
  }
}

export type BalanceResult = Awaited<ReturnType<typeof balancePhase>>;
export type DrainResult = Awaited<ReturnType<typeof drainPhase>>;
export type HalfRateResult = Awaited<ReturnType<typeof halfRatePhase>>;
export type MixedResult = Awaited<ReturnType<typeof mixedPhase>>;
export type ProjectionCatchUp = Awaited<ReturnType<typeof projectionCatchUpPhase>>;

export async function balancePhase(cluster: Cluster, ctx: PhaseContext) {
  const durationSec = Math.max(2, Math.ceil(ctx.durationSec / 2));
  ctx.log(`balance reads: ${durationSec}s`);
  const result = await getLoad({
    targets: cluster.urls,
    path: `/v1/contracts/${ctx.operator.contract}/point-balances`,
    token: ctx.token,
    connections: ctx.connections,
    durationSec,
  });
  requireNoClientErrors("balance reads", result);
  return {
    readsPerSec: result.ok / result.durationSec,
    p50Ms: quantile(result.latenciesMs, 0.5),
    p99Ms: quantile(result.latenciesMs, 0.99),
  };
}

/**
 * How fast the finalizer drains a backlog of due batches. Waits (bounded) until the counters
 * say the backlog is done, then times it with the server's own clock: each finalizer pass stamps
 * its batches with the time the pass began, so the transfers of every pass but the last were
 * finalized between the first stamp and the last. Start-up and polling stay out of the figure.
 */
/**
 * How often the drain's wait reads /metrics. The drain is timed by its batches' stamps, not by this
 * poll; at 50 ms the bench scraped 20 times a second, and each scrape of this service reads the
 * database (the log's lag, the backlog, writability): on a machine slowed to 0.8 CPU that was the
 * server's and PostgreSQL's time taken from the drain it measured (docs/performance.md, session 18).
 */
const DRAIN_POLL_MS = 500;

export async function drainPhase(cluster: Cluster, ctx: PhaseContext, backlogTransfers: number, acceptStartMs: number) {
  ctx.log(`finalizer drain: ${backlogTransfers} transfers due`);
  await pollUntil(
    "the finalizer to drain the backlog",
    async () => ((await cluster.metric(FINALIZED)) >= backlogTransfers ? true : undefined),
    DRAIN_POLL_MS,
    Date.now() + (backlogTransfers / SLOWEST_PLAUSIBLE_FINALIZE_PER_SEC) * 1000 + WAIT_SLACK_MS,
  );
  const batches = await listBatches(cluster.urls[0]!, ctx.token, ctx.operator.contract, "FINALIZED", acceptStartMs);
  const stamps = batches.filter((batch) => batch.id.startsWith(`${ctx.runTag}-a`)).map((batch) => Date.parse(batch.finalizedAt!));
  const first = Math.min(...stamps);
  const last = Math.max(...stamps);
  const timedBatches = stamps.filter((stamp) => stamp < last).length;
  const seconds = (last - first) / 1000;
  return {
    transfersPerSec: seconds > 0 ? (timedBatches * ctx.transfersPerBatch) / seconds : null,
    batches: stamps.length,
    passes: new Set(stamps).size,
    seconds,
    lastFinalizedAtMs: last,
  };
}

/**
 * The projection after the drain (src/worker/projection.ts steps aside while the finalizer drains
 * a backlog): how many transfers it had applied when the drain ended, how fast it applies the
 * rest (transfers per second of wall time, the server otherwise idle), and how long after the
 * drain's last finalization it stood caught up, against how long the drain took.
 */
export async function projectionCatchUpPhase(cluster: Cluster, ctx: PhaseContext, drain: DrainResult) {
  const finalized = await cluster.metric(FINALIZED);
  const startedMs = Date.now();
  const appliedAtStart = await cluster.metric(PROJECTED);
  ctx.log(`projection catch-up: ${finalized - appliedAtStart} of ${finalized} finalized transfers to apply`);
  await pollUntil(
    "the projection to catch up",
    async () => ((await cluster.metric(PROJECTED)) >= finalized ? true : undefined),
    20,
    Date.now() + (finalized / SLOWEST_PLAUSIBLE_FINALIZE_PER_SEC) * 1000 + WAIT_SLACK_MS,
  );
  const endedMs = Date.now();
  return {
    appliedDuringDrain: appliedAtStart,
    transfersPerSec: endedMs > startedMs ? ((finalized - appliedAtStart) * 1000) / (endedMs - startedMs) : null,
    catchUpSeconds: (endedMs - drain.lastFinalizedAtMs) / 1000,
    drainSeconds: drain.seconds,
  };
}

/** A leaderboard's `through` read over and over until stop() says so: (when the bench read it, through), in ms. */
function watchThrough(cluster: Cluster, ctx: PhaseContext): { stop(): Promise<[number, number][]> } {
  const seen: [number, number][] = [];
  let stopped = false;
  const path = `/v1/contracts/${ctx.operator.contract}/leaderboard?pointType=${ctx.pointType}&limit=1`;
  const loop = (async () => {
    while (!stopped) {
      const answer = await call<{ through: string }>(cluster.urls[0]!, "GET", path, ctx.token);
      seen.push([Date.now(), Date.parse(answer.through)]);
      await sleep(THROUGH_POLL_MS);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

/**
 * Each batch's projection lag: from its finalizedAt to the first read whose `through` counted it
 * (so at most THROUGH_POLL_MS and one read's time late); null for a batch no read counted.
 */
function projectionLags(finalizedAtMs: readonly number[], seen: readonly [number, number][]): (number | null)[] {
  return finalizedAtMs.map((atMs) => {
    const first = seen.find(([, throughMs]) => throughMs >= atMs);
    return first === undefined ? null : Math.max(0, first[0] - atMs);
  });
}

function pacedBatches(
  cluster: Cluster,
  ctx: PhaseContext,
  ratePerSec: number,
  prefix: string,
  bodies: Buffer[],
  durationSec = ctx.durationSec,
) {
  return pacedLoad({
    targets: cluster.urls,
    ratePerSec,
    durationSec,
    maxInFlight: ctx.connections * 4,
    request: batchRequests(ctx, prefix, bodies),
  });
}

/**
 * Full batches at half the peak rate, evenly paced (see paced.ts), that wait a day to finalize:
 * the latency of the request path itself at a load with headroom. The process serving it is
 * new (start 2) and has not yet taken a PUT: its first ones run cold code (the intake worker's
 * parse and checksums, the insert path) and a queue builds behind them that takes ≈ 1 s to clear
 * (measured: the first 35 of 500 answers took 100–214 ms, the rest 11–54 ms). A warm-up at the
 * same pace, as the accept phase has, keeps that start-up transient out of the steady-state p99.
 */
export async function halfRatePhase(cluster: Cluster, ctx: PhaseContext, peakBatchesPerSec: number, warmupSec: number) {
  const rate = Math.max(1, peakBatchesPerSec / 2);
  ctx.log(`half rate: ${rate.toFixed(1)} batches/s for ${ctx.durationSec}s after ${warmupSec}s of warm-up`);
  requireNoClientErrors("half-rate warm-up", await pacedBatches(cluster, ctx, rate, `${ctx.runTag}-hw`, ctx.dueLaterBodies, warmupSec));
  const log = watchLog(cluster.urls[0]!, ctx.token, ctx.operator.contract);
  const publishedFromMs = Date.now();
  const result = await pacedBatches(cluster, ctx, rate, `${ctx.runTag}-h`, ctx.dueLaterBodies);
  requireNoClientErrors("half rate", result);
  return {
    batchesPerSec: result.ok / result.durationSec,
    p50Ms: quantile(result.latenciesMs, 0.5),
    p99Ms: quantile(result.latenciesMs, 0.99),
    logLag: await log.measure(),
    // One event a batch (accepted; they finalize after the run).
    publishLag: ctx.publishWatch === null ? null : await ctx.publishWatch.measure(publishedFromMs, result.ok),
  };
}

/**
 * The steady state of a deployment: batches keep arriving while earlier ones finalize, so the
 * one process both accepts and finalizes every transfer. Paced at half of what it can sustain
 * that way (1 / (1/accepted + 1/finalized)), with batches due after the minimum delay; then
 * each batch's finalizedAt − finalizeAt, and the PUT latency while the finalizer works.
 */
export async function mixedPhase(cluster: Cluster, ctx: PhaseContext, sustainableBatchesPerSec: number) {
  const rate = Math.max(1, sustainableBatchesPerSec / 2);
  ctx.log(`mixed: ${rate.toFixed(1)} batches/s due after the minimum delay, for ${ctx.durationSec}s`);
  const startMs = Date.now() - 1;
  const finalizedBefore = await cluster.metric(FINALIZED);
  const watcher = watchThrough(cluster, ctx);
  const log = watchLog(cluster.urls[0]!, ctx.token, ctx.operator.contract);
  const result = await pacedBatches(cluster, ctx, rate, `${ctx.runTag}-m`, ctx.dueSoonBodies);
  requireNoClientErrors("mixed", result);
  const expected = finalizedBefore + result.ok * ctx.transfersPerBatch;
  await pollUntil(
    "the mixed-phase batches to finalize",
    async () => ((await cluster.metric(FINALIZED)) >= expected ? true : undefined),
    100,
    Date.now() + WAIT_SLACK_MS,
  );
  const finalizedAtMs = await finalizedTimes(cluster.urls[0]!, ctx, `${ctx.runTag}-m`, startMs);
  const lastMs = Math.max(...finalizedAtMs);
  await pollUntil(
    "the projection to count the mixed-phase batches",
    async () => ((await cluster.metric(PROJECTED)) >= expected ? true : undefined),
    THROUGH_POLL_MS,
    Date.now() + WAIT_SLACK_MS,
  );
  await sleep(2 * THROUGH_POLL_MS);
  const seen = await watcher.stop();
  const projected = projectionLags(finalizedAtMs, seen);
  const projectionLagsMs = projected.filter((lag): lag is number => lag !== null);
  const lagsMs = await finalizationLags(cluster.urls[0]!, ctx, `${ctx.runTag}-m`, startMs);
  const logLag = await log.measure();
  // Two events a batch: accepted and finalized.
  const publishLag = ctx.publishWatch === null ? null : await ctx.publishWatch.measure(startMs, 2 * result.ok);
  return {
    logLag,
    publishLag,
    projectionLagP50Ms: quantile(projectionLagsMs, 0.5),
    projectionLagP99Ms: quantile(projectionLagsMs, 0.99),
    projectionLagMaxMs: quantile(projectionLagsMs, 1),
    projectionUncounted: projected.length - projectionLagsMs.length,
    throughReads: seen.length,
    lastFinalizedAtMs: lastMs,
    batchesPerSec: result.ok / result.durationSec,
    putP50Ms: quantile(result.latenciesMs, 0.5),
    putP99Ms: quantile(result.latenciesMs, 0.99),
    lagP50Ms: quantile(lagsMs, 0.5),
    lagP99Ms: quantile(lagsMs, 0.99),
    lagMaxMs: quantile(lagsMs, 1),
    lagSamples: lagsMs.length,
  };
}

async function finalizedTimes(baseUrl: string, ctx: PhaseContext, prefix: string, afterMs: number): Promise<number[]> {
  const batches = await listBatches(baseUrl, ctx.token, ctx.operator.contract, "FINALIZED", afterMs);
  return batches
    .filter((batch) => batch.finalizedAt !== null && batch.id.startsWith(prefix))
    .map((batch) => Date.parse(batch.finalizedAt!));
}

async function finalizationLags(baseUrl: string, ctx: PhaseContext, prefix: string, afterMs: number): Promise<number[]> {
  const batches = await listBatches(baseUrl, ctx.token, ctx.operator.contract, "FINALIZED", afterMs);
  return batches
    .filter((batch) => batch.finalizedAt !== null && batch.id.startsWith(prefix))
    .map((batch) => Date.parse(batch.finalizedAt!) - Date.parse(batch.finalizeAt));
}

/** Waits until every batch accepted up to `endedAtMs` is due. */
export async function untilDue(endedAtMs: number, minimumFinalizeSeconds: number): Promise<void> {
  const waitMs = endedAtMs + minimumFinalizeSeconds * 1000 + 50 - Date.now();
  if (waitMs > 0) await sleep(waitMs);
}
