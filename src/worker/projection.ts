import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../clock.js";
import { JobLoop } from "../job-loop.js";
import {
  HISTORY_BACKFILL_MAX_STEPS,
  PROJECTION_BACKLOG_DUE_MS,
  PROJECTION_BACKLOG_GRACE_MS,
  PROJECTION_BACKLOG_SHARE,
  PROJECTION_INTERVAL_MS,
  PROJECTION_FIRST_STEP,
  PROJECTION_IDLE_ADVANCE_MS,
  PROJECTION_MAX_STEP,
  PROJECTION_STEP_TARGET_MS,
} from "../domain/limits.js";
import type { Metrics } from "../metrics.js";
import type { LeaderboardsStore } from "../store/store.js";

export interface ProjectionJobOptions {
  intervalMs?: number;
  maxStepSize?: number;
  /** The time a step should take (PROJECTION_STEP_TARGET_MS, or the PostgreSQL one). */
  stepTargetMs?: number;
  /** True while this process's finalizer drains a backlog: the projection then steps aside (PROJECTION_BACKLOG_GRACE_MS, then its share). */
  finalizerDraining?: () => boolean;
  /**
   * The earliest finalizeAt of a batch still PENDING, from the database (any instance's): one due
   * more than PROJECTION_BACKLOG_DUE_MS ago means a backlog some finalizer is draining, which the
   * projection defers to as to its own process's.
   */
  nextFinalizeAtMs?: () => Promise<number | null>;
}

/**
 * The projection job (src/ledger/projection.ts): applies the finalized batches to the read models
 * in bounded steps, run in every process (on PostgreSQL one instance applies at a time; the
 * others' steps find the lock taken and apply nothing). Steps are sized to
 * PROJECTION_STEP_TARGET_MS or its PostgreSQL value (halved after a slow one, doubled after a
 * quick one, from PROJECTION_FIRST_STEP up to PROJECTION_MAX_STEP): a larger pass writes each
 * distinct recipient once for more transfers.
 * While the finalizer drains a backlog the job steps aside (the finalization is the service's
 * job; `through` falls behind and every answer says so): for the first PROJECTION_BACKLOG_GRACE_MS
 * it takes no step, so a burst drains at full speed and the job catches up right after it; a
 * longer backlog gets steps that take at most PROJECTION_BACKLOG_SHARE of the time, so `through`
 * keeps moving, and the job runs at full speed once the finalizer is idle. Where the store runs
 * the passes on another thread (SQLite's worker, LeaderboardsStore.projectionAside) they take
 * none of the finalizer's time: the job then runs at full speed beside a backlog too.
 */
export class ProjectionJob {
  private stepSize: number;
  /** Under a backlog: when the next step may run (the grace, then its share of the time). */
  private besideAtMs = 0;
  /** Whether the last turn found a backlog (the grace starts when one is first seen). */
  private inBacklog = false;
  private readonly loop = new JobLoop(
    async () => ((await this.runOnce()) ? 0 : this.intervalMs),
    (error) => {
      this.log.error({ err: error }, "projection step failed; retrying at the next run");
      return this.intervalMs;
    },
  );

  constructor(
    private readonly store: LeaderboardsStore,
    private readonly clock: Clock,
    private readonly options: ProjectionJobOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {
    this.stepSize = Math.min(PROJECTION_FIRST_STEP, this.maxStepSize);
  }

  private get intervalMs(): number {
    return this.options.intervalMs ?? PROJECTION_INTERVAL_MS;
  }

  private get maxStepSize(): number {
    return this.options.maxStepSize ?? PROJECTION_MAX_STEP;
  }

  private get stepTargetMs(): number {
    return this.options.stepTargetMs ?? PROJECTION_STEP_TARGET_MS;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Up to HISTORY_BACKFILL_MAX_STEPS steps; true when it stopped at that bound with batches left. */
  async runOnce(): Promise<boolean> {
    for (let steps = 0; steps < HISTORY_BACKFILL_MAX_STEPS; steps++) {
      if (await this.idle()) return false;
      const turn = await this.turn();
      if (turn === "defer") return false;
      const startedMs = performance.now();
      const step = await this.store.applyProjection(this.stepSize, this.clock.now());
      this.record(step.finalizedAtMs, step.transfers);
      const tookMs = performance.now() - startedMs;
      if (turn === "beside") this.besideAtMs = this.clock.now() + (tookMs * (1 - PROJECTION_BACKLOG_SHARE)) / PROJECTION_BACKLOG_SHARE;
      if (!step.more) return false;
      if (tookMs > this.stepTargetMs) this.stepSize = Math.max(1, Math.floor(this.stepSize / 2));
      else if (tookMs < this.stepTargetMs * 0.75) this.stepSize = Math.min(this.maxStepSize, this.stepSize * 2);
      if (turn === "beside") return false;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return true;
  }

  /**
   * Nothing to apply and through recent: one read without a lock, so an idle service's job costs a
   * statement a poll (the step itself locks the projection's state, which finalizations wait for).
   */
  private async idle(): Promise<boolean> {
    const { queued, throughMs } = await this.store.projectionState();
    return queued === 0 && this.clock.now() - throughMs < PROJECTION_IDLE_ADVANCE_MS;
  }

  /** A backlog of due batches: this process's finalizer says so, or the database holds a batch due for a while. */
  private async backlog(): Promise<boolean> {
    if (this.options.finalizerDraining?.()) return true;
    const nextMs = await this.options.nextFinalizeAtMs?.();
    return nextMs !== undefined && nextMs !== null && nextMs <= this.clock.now() - PROJECTION_BACKLOG_DUE_MS;
  }

  /**
   * Whether this step runs: "run" without a backlog; beside one, "defer" (skip it) through the
   * grace and through the wait after each step, or "beside" (one step, then that wait).
   */
  private async turn(): Promise<"run" | "defer" | "beside"> {
    if (this.store.projectionAside || !(await this.backlog())) {
      this.inBacklog = false;
      return "run";
    }
    const nowMs = this.clock.now();
    if (!this.inBacklog) {
      this.inBacklog = true;
      this.besideAtMs = nowMs + PROJECTION_BACKLOG_GRACE_MS;
    }
    return nowMs < this.besideAtMs ? "defer" : "beside";
  }

  private record(finalizedAtMs: readonly number[], transfers: number): void {
    if (this.metrics === null || finalizedAtMs.length === 0) return;
    const nowMs = this.clock.now();
    for (const atMs of finalizedAtMs) this.metrics.projectionLagSeconds.observe(Math.max(0, nowMs - atMs) / 1000);
    this.metrics.projectionTransfers.inc(transfers);
  }
}
