import type { FastifyBaseLogger } from "fastify";
import type { Metrics } from "../metrics.js";
import type { FinalizeFailure, LedgerStore } from "../store/store.js";
import type { Clock } from "../clock.js";
import { JobLoop } from "../job-loop.js";

export interface FinalizerOptions {
  intervalMs: number;
  batchesPerPass: number;
}

/** Wait before looking again at a batch that is due but was not claimable (another instance holds it). */
const STILL_DUE_RETRY_MS = 20;

/**
 * The finalize job. Claims due batches and applies them through the store, a bounded number per pass, until none
 * are due; then sleeps until the next batch is due (nextDelayMs). Because it asks the database what is due, it
 * catches up after downtime, and several processes may run it against one PostgreSQL.
 */
export class Finalizer {
  private readonly loop = new JobLoop(
    async () => {
      await this.runUntilIdle();
      return this.nextDelayMs();
    },
    (error) => {
      this.log.error({ err: error }, "finalizer pass failed; retrying at the next interval");
      return this.options.intervalMs;
    },
  );

  private draining = false;

  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly options: FinalizerOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.loop.start();
  }

  /** True while a run goes on finding batches due: a backlog is draining (the projection job defers to it). */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Stops polling and waits for the pass in progress to finish its current batch. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /**
   * Finalizes everything due now; returns how many batches it finalized. A batch that fails is
   * logged and counted, and the store leaves it alone until its backoff has passed, so the loop
   * goes on with the others and still ends.
   */
  async runUntilIdle(): Promise<number> {
    let count = 0;
    let passes = 0;
    for (;;) {
      let failed = 0;
      const finalized = await this.store.finalizeDue(this.clock.now(), this.options.batchesPerPass, (failure) => {
        failed++;
        this.recordFailure(failure);
      });
      count += finalized.length;
      // An adapter may finalize fewer than asked (SQLite bounds each transaction by time), so
      // only an answer with neither a finalized nor a failed batch means nothing is due.
      if ((finalized.length === 0 && failed === 0) || !this.loop.isActive) {
        this.draining = false;
        this.metrics?.finalizeFailingBatches.set(await this.store.countFailingBatches());
        return count;
      }
      // A second pass in a row with batches due: a backlog, not the batch or two of normal load.
      this.draining = passes++ > 0;
      // Yield between passes so requests are served while a backlog drains.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Wakes at the earliest finalizeAt the database knows of (a batch accepted by any instance, or a
   * failed one's retry time) instead of a fixed poll, so a batch finalizes within milliseconds of
   * its time; but at least every FINALIZER_INTERVAL_MS, which picks up batches other instances
   * accept meanwhile (every finalizeAt is at least MINIMUM_FINALIZE_SECONDS ahead).
   */
  private async nextDelayMs(): Promise<number> {
    try {
      const nextMs = await this.store.nextFinalizeAtMs();
      if (nextMs === null) return this.options.intervalMs;
      // Due already, yet the pass that just ended drained all it could claim: another instance
      // holds that batch. Look again shortly rather than spin.
      return Math.min(this.options.intervalMs, Math.max(STILL_DUE_RETRY_MS, nextMs - this.clock.now()));
    } catch (error) {
      this.log.error({ err: error }, "could not read the next finalizeAt; polling");
      return this.options.intervalMs;
    }
  }

  private recordFailure(failure: FinalizeFailure): void {
    this.metrics?.finalizeFailures.inc();
    const { contract, batchId, failures, retryAtMs } = failure;
    this.log.error(
      { err: failure.error, contract, batchId, failures, retryAt: new Date(retryAtMs).toISOString() },
      "batch finalization failed; it stays PENDING and is retried after a backoff",
    );
  }
}
