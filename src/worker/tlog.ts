import type { FastifyBaseLogger } from "fastify";
import type { LogSigningSource } from "../auth/log-signing-key.js";
import type { Clock } from "../clock.js";
import { LOG_BUSY_INTERVAL_MS, LOG_INTERVAL_MS, LOG_MAX_STEP } from "../domain/limits.js";
import { JobLoop } from "../job-loop.js";
import type { LogStep, TransparencyLogStore } from "../store/store.js";
import { runBoundedSteps } from "./bounded-steps.js";

export interface TransparencyLogJobOptions {
  intervalMs?: number;
  maxStepSize?: number;
}

/**
 * The transparency log's job (src/ledger/transparency-log.ts): logs the committed events in
 * bounded steps, after their commit, and signs a checkpoint once LOG_CHECKPOINT_SECONDS have passed
 * since the last while the log grows; it wakes at that moment rather than at its next poll, so an
 * event is in a signed checkpoint about a second after its commit. Run in every process; on
 * PostgreSQL one instance logs at a time (the others' steps find the lock taken and log nothing).
 */
export class TransparencyLogJob {
  private warned = false;
  /** The size the last run's last step had: the next run starts there. */
  private stepSize = 1;
  private readonly loop = new JobLoop(
    async () => this.pass(),
    (error) => {
      this.log.error({ err: error }, "transparency log step failed; retrying at the next run");
      return this.intervalMs;
    },
  );

  constructor(
    private readonly store: TransparencyLogStore,
    private readonly signingSource: LogSigningSource,
    private readonly clock: Clock,
    private readonly options: TransparencyLogJobOptions,
    private readonly log: FastifyBaseLogger,
  ) {}

  private get intervalMs(): number {
    return this.options.intervalMs ?? LOG_INTERVAL_MS;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /**
   * One run of bounded steps; the delay before the next: none when more are waiting; while the log
   * grows, until the next checkpoint is due (at most LOG_BUSY_INTERVAL_MS), since what a run logs
   * before then is in no signed checkpoint sooner; else (nothing logged) the poll interval.
   */
  private async pass(): Promise<number> {
    const { last, more } = await this.runOnce();
    if (more) return 0;
    if (last !== null && last.checkpoint !== null && (last.unsigned || last.logged > 0)) {
      const signing = await this.signingSource.signing();
      const dueInMs = last.checkpoint.signedAtMs + signing.checkpointIntervalMs - this.clock.now();
      return Math.max(0, Math.min(LOG_BUSY_INTERVAL_MS, dueInMs));
    }
    return this.intervalMs;
  }

  /** Steps until the log has read every event (or the bound of steps); returns the last step. */
  async runOnce(): Promise<{ last: LogStep | null; more: boolean }> {
    const signing = await this.signingSource.signing();
    if (this.signingSource.stored && !this.warned) {
      this.warned = true;
      this.log.warn(
        { verifierKeyName: signing.origin },
        "LOG_SIGNING_KEY is not set: the transparency log signs with a key made at first start and kept in the database; set LOG_SIGNING_KEY (points-ledger log keygen) to keep it elsewhere",
      );
    }
    let last: LogStep | null = null;
    const run = await runBoundedSteps(
      async (size) => {
        last = await this.store.appendToLog(size, this.clock.now(), signing);
        return last.more ? size : last.logged;
      },
      this.options.maxStepSize ?? LOG_MAX_STEP,
      undefined,
      this.stepSize,
    );
    this.stepSize = run.stepSize;
    return { last, more: run.more };
  }
}
