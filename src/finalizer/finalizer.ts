import type { FastifyBaseLogger } from "fastify";
import type { Metrics } from "../metrics.js";
import type { FinalizedBatch, LedgerStore } from "../store/store.js";
import type { Clock } from "../clock.js";

export interface FinalizerOptions {
  intervalMs: number;
  batchesPerPass: number;
}

/** How often expired challenges and tokens are deleted. */
const PURGE_INTERVAL_MS = 60_000;

/**
 * Claims due batches and applies them through the store, a bounded number per pass, until none
 * are due; then sleeps for the poll interval. Because it asks the database what is due, it
 * catches up after downtime, and several processes may run it against one PostgreSQL.
 */
export class Finalizer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private lastPurgeMs = 0;

  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly options: FinalizerOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops polling and waits for the pass in progress to finish its current batch. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Finalizes everything due now; returns how many batches it finalized. */
  async runUntilIdle(): Promise<number> {
    let count = 0;
    for (;;) {
      const finalized = await this.store.finalizeDue(this.clock.now(), this.options.batchesPerPass);
      this.record(finalized);
      count += finalized.length;
      // An adapter may finalize fewer than asked (SQLite bounds each transaction by time), so
      // only an empty answer means nothing is due.
      if (finalized.length === 0 || this.stopped) return count;
      // Yield between passes so requests are served while a backlog drains.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass().finally(() => {
        this.running = null;
        this.schedule(this.options.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    try {
      await this.runUntilIdle();
      const nowMs = this.clock.now();
      if (nowMs - this.lastPurgeMs >= PURGE_INTERVAL_MS) {
        this.lastPurgeMs = nowMs;
        await this.store.purgeExpired(nowMs);
      }
    } catch (error) {
      this.log.error({ err: error }, "finalizer pass failed; retrying at the next interval");
    }
  }

  private record(finalized: FinalizedBatch[]): void {
    if (!this.metrics) return;
    for (const batch of finalized) {
      this.metrics.batchesFinalized.inc();
      this.metrics.transfersFinalized.inc(batch.transferCount);
      this.metrics.finalizerLagSeconds.observe(Math.max(0, batch.finalizedAtMs - batch.finalizeAtMs) / 1000);
    }
  }
}
