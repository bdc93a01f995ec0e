import { listBatches, type Operator } from "./client.js";
import type { Cluster } from "./cluster.js";
import { batchLoad, getLoad, type LoadResult } from "./load.js";
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
  log(message: string): void;
}

/** Transfers finalized per second or better, for bounding waits on the finalizer. */
const SLOWEST_PLAUSIBLE_FINALIZE_PER_SEC = 5_000;
const FINALIZER_WAIT_SLACK_MS = 60_000;
const FINALIZED = "points_transfers_finalized_total";

/** A 4xx on a valid, unique, funded batch is a bug in the service or the bench: stop. */
function requireNoClientErrors(phase: string, result: LoadResult): void {
  if (result.client4xx > 0 || result.ok === 0) {
    throw new Error(`${phase}: ${result.ok} accepted, ${result.client4xx} 4xx, ${result.errors} errors; first failure: ${result.firstFailure}`);
  }
}

export interface AcceptResult {
  transfersPerSec: number;
  batchesPerSec: number;
  acceptedTransfers: number;
  p50Ms: number;
  p99Ms: number;
  rejected: { "4xx": number; "5xx": number; errors: number };
  endedAtMs: number;
}

/** Full-batch PUTs as fast as the connections allow; these batches finalize after the minimum delay. */
export async function acceptPhase(cluster: Cluster, ctx: PhaseContext, warmupSec: number): Promise<AcceptResult> {
  const base = { targets: cluster.urls, token: ctx.token, contract: ctx.operator.contract, connections: ctx.connections };
  ctx.log(`warm-up ${warmupSec}s`);
  requireNoClientErrors("warm-up", await batchLoad({ ...base, bodies: ctx.dueLaterBodies, batchIdPrefix: `${ctx.runTag}-w`, durationSec: warmupSec }));
  ctx.log(`accept: ${ctx.durationSec}s of full batches, ${ctx.connections} connections`);
  const result = await batchLoad({ ...base, bodies: ctx.dueSoonBodies, batchIdPrefix: `${ctx.runTag}-a`, durationSec: ctx.durationSec });
  requireNoClientErrors("accept", result);
  return {
    transfersPerSec: (result.ok * ctx.transfersPerBatch) / result.durationSec,
    batchesPerSec: result.ok / result.durationSec,
    acceptedTransfers: result.ok * ctx.transfersPerBatch,
    p50Ms: quantile(result.latenciesMs, 0.5),
    p99Ms: quantile(result.latenciesMs, 0.99),
    rejected: { "4xx": result.client4xx, "5xx": result.server5xx, errors: result.errors },
    endedAtMs: Date.now(),
  };
}

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
  return { readsPerSec: result.ok / result.durationSec, p50Ms: quantile(result.latenciesMs, 0.5), p99Ms: quantile(result.latenciesMs, 0.99) };
}

/**
 * How fast the finalizer drains a backlog of due batches: from the first metrics answer after
 * start-up until the processes' finalized-transfers counters reach the backlog.
 */
export async function drainPhase(cluster: Cluster, ctx: PhaseContext, backlogTransfers: number) {
  ctx.log(`finalizer drain: ${backlogTransfers} transfers due`);
  const before = await cluster.metric(FINALIZED);
  const startMs = performance.now();
  const deadlineMs = Date.now() + (backlogTransfers / SLOWEST_PLAUSIBLE_FINALIZE_PER_SEC) * 1000 + FINALIZER_WAIT_SLACK_MS;
  const after = await pollUntil(
    "the finalizer to drain the backlog",
    async () => {
      const value = await cluster.metric(FINALIZED);
      return value >= backlogTransfers ? value : undefined;
    },
    50,
    deadlineMs,
  );
  const elapsedSec = (performance.now() - startMs) / 1000;
  // The first pass may have run before the first answer; only what followed is timed.
  const timedTransfers = Math.min(after, backlogTransfers) - before;
  return {
    transfersPerSec: timedTransfers > 0 ? timedTransfers / elapsedSec : null,
    timedTransfers,
    elapsedSec,
  };
}

/**
 * Full batches at half the peak rate while the finalizer works on the batches of this very
 * phase (they are due after the minimum delay): PUT latency under a steady mixed load, then
 * each batch's finalizedAt − finalizeAt.
 */
export async function halfRatePhase(cluster: Cluster, ctx: PhaseContext, peakBatchesPerSec: number) {
  const overallRate = Math.max(1, peakBatchesPerSec / 2);
  ctx.log(`half rate: ${overallRate.toFixed(1)} batches/s for ${ctx.durationSec}s`);
  const startMs = Date.now() - 1;
  const finalizedBefore = await cluster.metric(FINALIZED);
  const result = await batchLoad({
    targets: cluster.urls,
    token: ctx.token,
    contract: ctx.operator.contract,
    connections: ctx.connections,
    bodies: ctx.dueSoonBodies,
    batchIdPrefix: `${ctx.runTag}-h`,
    durationSec: ctx.durationSec,
    overallRate,
  });
  requireNoClientErrors("half rate", result);
  const expected = finalizedBefore + result.ok * ctx.transfersPerBatch;
  await pollUntil(
    "the half-rate batches to finalize",
    async () => ((await cluster.metric(FINALIZED)) >= expected ? true : undefined),
    100,
    Date.now() + FINALIZER_WAIT_SLACK_MS,
  );
  const lagsMs = await finalizationLags(cluster.urls[0]!, ctx, startMs);
  return {
    batchesPerSec: result.ok / result.durationSec,
    p50Ms: quantile(result.latenciesMs, 0.5),
    p99Ms: quantile(result.latenciesMs, 0.99),
    lagP50Ms: quantile(lagsMs, 0.5),
    lagP99Ms: quantile(lagsMs, 0.99),
    lagSamples: lagsMs.length,
  };
}

async function finalizationLags(baseUrl: string, ctx: PhaseContext, afterMs: number): Promise<number[]> {
  const batches = await listBatches(baseUrl, ctx.token, ctx.operator.contract, "FINALIZED", afterMs);
  return batches
    .filter((batch) => batch.finalizedAt !== null && batch.id.startsWith(`${ctx.runTag}-h`))
    .map((batch) => Date.parse(batch.finalizedAt!) - Date.parse(batch.finalizeAt));
}

/** Waits until every batch accepted up to `endedAtMs` is due. */
export async function untilDue(endedAtMs: number, minimumFinalizeSeconds: number): Promise<void> {
  const waitMs = endedAtMs + minimumFinalizeSeconds * 1000 + 50 - Date.now();
  if (waitMs > 0) await sleep(waitMs);
}
