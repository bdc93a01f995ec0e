import { cpus, totalmem } from "node:os";
import type { StorageCeilingResult } from "./storage-ceiling.js";
import type { AcceptResult, BalanceResult, DrainResult, HalfRateResult, MixedResult, ProjectionCatchUp } from "./phases.js";
import { logLagBoundMs, type LogLag } from "./log-lag.js";
import type { SoakResult } from "./soak.js";
import { round } from "./stats.js";

/** Everything one run measured, turned into the one JSON summary the bench prints. */
export interface RunFigures {
  http: number;
  storage: StorageCeilingResult;
  accept: AcceptResult;
  drain: DrainResult;
  projection: ProjectionCatchUp;
  half: HalfRateResult;
  balances: BalanceResult;
  mixed: MixedResult;
  soak: SoakResult | null;
  startupToReadyMs: { emptyDatabase: number; withBacklog: number };
  peakRssMb: { accept: number | null; finalize: number | null };
  verify: { ok: boolean; ms: number };
  config: Record<string, unknown>;
}

/** One process that must both accept and finalize every transfer: the two costs add up. */
export function sustainableTransfersPerSec(accepted: number, finalized: number | null): number {
  return finalized === null ? accepted / 2 : 1 / (1 / accepted + 1 / finalized);
}

export function summarize(f: RunFigures) {
  const ceilingMin = Math.min(f.http, f.storage.transfersPerSec);
  // What one thread doing the three stages back to back could reach: a server process is one thread.
  const serial = 1 / (1 / f.http + 1 / f.storage.stages.domain + 1 / f.storage.transfersPerSec);
  const accepted = f.accept.transfersPerSec;
  return {
    transfersPerSecAccepted: round(accepted),
    latencyMs: { p50: round(f.accept.p50Ms, 1), p99: round(f.accept.p99Ms, 1) },
    ceilings: { http: round(f.http), storage: round(f.storage.transfersPerSec), serialOneThread: round(serial) },
    ratios: {
      acceptedToMinCeiling: round(accepted / ceilingMin, 3),
      acceptedToHttp: round(accepted / f.http, 3),
      acceptedToStorage: round(accepted / f.storage.transfersPerSec, 3),
      acceptedToSerialOneThread: round(accepted / serial, 3),
    },
    transfersPerSecFinalized: f.drain.transfersPerSec === null ? null : round(f.drain.transfersPerSec),
    finalizationLagP99Ms: round(f.mixed.lagP99Ms),
    // The read models' projection (src/worker/projection.ts): its lag in the mixed phase (finalizedAt to the first
    // leaderboard read whose through counts the batch) and its rate catching up after the drain.
    projectionLagP99Ms: round(f.mixed.projectionLagP99Ms),
    transfersPerSecProjected: f.projection.transfersPerSec === null ? null : round(f.projection.transfersPerSec),
    // The transparency log's lag (bench/log-lag.ts): an event's commit to the first checkpoint read that holds it.
    // Against API.md's bound, LOG_CHECKPOINT_SECONDS + 0.5 s (p99), in both phases.
    logLagP99Ms: logLagAgainstBound(f),
    // --publisher nats: commit (the event's occurredAt) to its arrival at NATS JetStream (bench/publish-lag.ts).
    ...(f.half.publishLag === null
      ? {}
      : {
          publishLagP99Ms: {
            halfRate: round(f.half.publishLag.p99Ms),
            mixed: round(f.mixed.publishLag!.p99Ms),
            events: f.half.publishLag.events + f.mixed.publishLag!.events,
          },
        }),
    balanceReadP99Ms: round(f.balances.p99Ms, 2),
    halfRateP99Ms: round(f.half.p99Ms, 1),
    peakRssMb: round(Math.max(f.peakRssMb.accept ?? 0, f.peakRssMb.finalize ?? 0), 1),
    details: details(f),
    config: { ...f.config, node: process.version, cpus: cpus().length, totalMemMb: round(totalmem() / 1048576) },
  };
}

function logLagAgainstBound(f: RunFigures) {
  const boundMs = logLagBoundMs(Number(f.config.logCheckpointSeconds));
  const halfRate = round(f.half.logLag.p99Ms);
  const mixed = round(f.mixed.logLag.p99Ms);
  return { halfRate, mixed, boundMs, withinBound: { halfRate: halfRate <= boundMs, mixed: mixed <= boundMs } };
}

function details(f: RunFigures) {
  const stages = f.storage.stages;
  return {
    acceptRejected: f.accept.rejected,
    acceptCpu: f.accept.cpu,
    batchesPerSecAccepted: round(f.accept.batchesPerSec, 1),
    stageTransfersPerSec: { jsonParse: round(stages.jsonParse), schema: round(stages.schema), domain: round(stages.domain) },
    drain: { batches: f.drain.batches, passes: f.drain.passes, seconds: round(f.drain.seconds, 2) },
    projection: {
      appliedDuringDrain: f.projection.appliedDuringDrain,
      catchUpSeconds: round(f.projection.catchUpSeconds, 2),
      drainSeconds: round(f.projection.drainSeconds, 2),
      mixedLagP50Ms: round(f.mixed.projectionLagP50Ms),
      mixedLagMaxMs: round(f.mixed.projectionLagMaxMs),
      mixedUncounted: f.mixed.projectionUncounted,
      throughReads: f.mixed.throughReads,
    },
    halfRate: { batchesPerSec: round(f.half.batchesPerSec, 1), p50Ms: round(f.half.p50Ms, 1) },
    sustainableTransfersPerSec: round(sustainableTransfersPerSec(f.accept.transfersPerSec, f.drain.transfersPerSec)),
    mixed: {
      batchesPerSec: round(f.mixed.batchesPerSec, 1),
      putP50Ms: round(f.mixed.putP50Ms, 1),
      putP99Ms: round(f.mixed.putP99Ms, 1),
      lagP50Ms: round(f.mixed.lagP50Ms),
      lagMaxMs: round(f.mixed.lagMaxMs),
      lagSamples: f.mixed.lagSamples,
    },
    log: { halfRate: roundLag(f.half.logLag), mixed: roundLag(f.mixed.logLag) },
    balanceReads: { perSec: round(f.balances.readsPerSec), p50Ms: round(f.balances.p50Ms, 2) },
    startupToReadyMs: { emptyDatabase: round(f.startupToReadyMs.emptyDatabase), withBacklog: round(f.startupToReadyMs.withBacklog) },
    peakRssMbByStart: {
      accept: f.peakRssMb.accept && round(f.peakRssMb.accept, 1),
      finalize: f.peakRssMb.finalize && round(f.peakRssMb.finalize, 1),
    },
    ledgerVerified: f.verify,
    soak: f.soak,
  };
}

function roundLag(lag: LogLag) {
  return {
    p50Ms: round(lag.p50Ms),
    p99Ms: round(lag.p99Ms),
    maxMs: round(lag.maxMs),
    events: lag.events,
    checkpointReads: lag.checkpointReads,
  };
}
