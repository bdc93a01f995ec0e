import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import { JobLoop } from "../job-loop.js";
import { HISTORY_BACKFILL_MAX_STEPS, HISTORY_BACKFILL_STEP_TARGET_MS } from "../domain/limits.js";

/**
 * Bounded steps of a job: `step(size)` does up to `size` units of work in one transaction, sized
 * to HISTORY_BACKFILL_STEP_TARGET_MS (halved after a slow step, doubled after a quick one, up to
 * `maxStepSize`), yielding to the event loop between them; goes on while a step is full, at most
 * `maxSteps` steps. Returns the units done, whether it stopped at that bound, and the size its
 * last step had (a job that passes it back as `firstStepSize` starts its next run there instead of
 * at 1: the transparency log's runs then take one or two steps, not one per doubling).
 */
export async function runBoundedSteps(
  step: (size: number) => Promise<number>,
  maxStepSize: number,
  maxSteps = HISTORY_BACKFILL_MAX_STEPS,
  firstStepSize = 1,
): Promise<{ added: number; more: boolean; stepSize: number }> {
  let added = 0;
  let stepSize = Math.max(1, Math.min(maxStepSize, firstStepSize));
  for (let steps = 0; steps < maxSteps; steps++) {
    const startedMs = performance.now();
    const count = await step(stepSize);
    added += count;
    if (count < stepSize) return { added, more: false, stepSize };
    const tookMs = performance.now() - startedMs;
    if (tookMs > HISTORY_BACKFILL_STEP_TARGET_MS) stepSize = Math.max(1, Math.floor(stepSize / 2));
    else if (tookMs < HISTORY_BACKFILL_STEP_TARGET_MS / 2) stepSize = Math.min(maxStepSize, stepSize * 2);
    await yieldToEventLoop();
  }
  return { added, more: true, stepSize };
}

export interface BoundedStepsJobOptions {
  intervalMs?: number;
  /** The job's own default when not given. */
  maxStepSize?: number;
}

/** What a BoundedStepsJob is: its default interval and step bound, and what it logs when a run fails. */
export interface BoundedStepsJobKind {
  intervalMs: number;
  maxStepSize: number;
  failure: string;
}

/**
 * A job of bounded steps (runBoundedSteps), run in every process: a run that stopped at its bound
 * runs again at once, otherwise the next one waits its interval; a failure is logged and retried
 * at the next run, and never stops the other jobs.
 */
export abstract class BoundedStepsJob {
  private readonly loop = new JobLoop(
    async () => {
      const run = await this.runOnce();
      this.ran(run);
      return run.more ? 0 : this.intervalMs;
    },
    (error) => {
      this.log.error({ err: error }, this.kind.failure);
      return this.intervalMs;
    },
  );

  protected constructor(
    private readonly kind: BoundedStepsJobKind,
    private readonly options: BoundedStepsJobOptions,
    protected readonly log: FastifyBaseLogger,
  ) {}

  /** One step of up to `size` units; fewer than `size` when nothing is left. */
  protected abstract step(size: number): Promise<number>;

  /** What a finished run reports (nothing by default). */
  protected ran(_run: { added: number; more: boolean }): void {}

  private get intervalMs(): number {
    return this.options.intervalMs ?? this.kind.intervalMs;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One run: up to HISTORY_BACKFILL_MAX_STEPS steps; `more` when it stopped at that bound with work left. */
  async runOnce(): Promise<{ added: number; more: boolean }> {
    return runBoundedSteps((size) => this.step(size), this.options.maxStepSize ?? this.kind.maxStepSize);
  }
}
