import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { LeaderboardsStore } from "../store/store.js";
import { JobLoop } from "../job-loop.js";
import {
  HISTORY_BACKFILL_INTERVAL_MS,
  HISTORY_BACKFILL_MAX_STEP,
  HISTORY_BACKFILL_MAX_STEPS,
  HISTORY_BACKFILL_STEP_TARGET_MS,
} from "../domain/limits.js";

/**
 * Bounded steps of a job: `step(size)` does up to `size` units of work in one transaction, sized
 * to HISTORY_BACKFILL_STEP_TARGET_MS (halved after a slow step, doubled after a quick one, up to
 * `maxStepSize`), yielding to the event loop between them; goes on while a step is full, at most
 * `maxSteps` steps. Returns the units done, and whether it stopped at that bound.
 */
export async function runBoundedSteps(
  step: (size: number) => Promise<number>,
  maxStepSize: number,
  maxSteps = HISTORY_BACKFILL_MAX_STEPS,
): Promise<{ added: number; more: boolean }> {
  let added = 0;
  let stepSize = 1;
  for (let steps = 0; steps < maxSteps; steps++) {
    const startedMs = performance.now();
    const count = await step(stepSize);
    added += count;
    if (count < stepSize) return { added, more: false };
    const tookMs = performance.now() - startedMs;
    if (tookMs > HISTORY_BACKFILL_STEP_TARGET_MS) stepSize = Math.max(1, Math.floor(stepSize / 2));
    else if (tookMs < HISTORY_BACKFILL_STEP_TARGET_MS / 2) stepSize = Math.min(maxStepSize, stepSize * 2);
    await yieldToEventLoop();
  }
  return { added, more: true };
}

/**
 * Adds the batches that were FINALIZED before history existed (history_backfill, migration SQLite
 * 14 / PostgreSQL 12, listed again by SQLite 15 / PostgreSQL 13) to the boards and received_daily,
 * in bounded steps (runBoundedSteps). Returns how many it added, and whether it stopped at its bound.
 */
export async function backfillHistory(
  store: LeaderboardsStore,
  maxStepSize = HISTORY_BACKFILL_MAX_STEP,
  maxSteps = HISTORY_BACKFILL_MAX_STEPS,
): Promise<{ added: number; more: boolean }> {
  return runBoundedSteps((size) => store.backfillHistory(size), maxStepSize, maxSteps);
}

export interface HistoryBackfillOptions {
  intervalMs?: number;
  /** HISTORY_BACKFILL_MAX_STEP when not given. */
  maxStepSize?: number;
}

/**
 * The history job: backfillHistory, run in every process (on PostgreSQL the steps of several
 * processes share the list through SKIP LOCKED). A run that stopped at its bound runs again at
 * once; a failure is logged and retried at the next run, and never stops the other jobs.
 */
export class HistoryBackfillJob {
  private readonly loop = new JobLoop(
    async () => {
      const { added, more } = await this.runOnce();
      if (added > 0) this.log.info({ batches: added, more }, "added batches finalized before history existed to the leaderboards");
      return more ? 0 : this.intervalMs;
    },
    (error) => {
      this.log.error({ err: error }, "history backfill failed; retrying at the next run");
      return this.intervalMs;
    },
  );

  constructor(
    private readonly store: LeaderboardsStore,
    private readonly options: HistoryBackfillOptions,
    private readonly log: FastifyBaseLogger,
  ) {}

  private get intervalMs(): number {
    return this.options.intervalMs ?? HISTORY_BACKFILL_INTERVAL_MS;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One run: up to HISTORY_BACKFILL_MAX_STEPS steps; `more` when it stopped at that bound with batches left. */
  async runOnce(): Promise<{ added: number; more: boolean }> {
    return backfillHistory(this.store, this.options.maxStepSize ?? HISTORY_BACKFILL_MAX_STEP);
  }
}
