import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { LeaderboardsStore } from "../store/store.js";
import { JobLoop } from "../job-loop.js";

/**
 * Batches one step of the history job adds, in one transaction: each adds its transfers to a board
 * and to received_history (about two statements over up to 10,000 transfers), so a step holds
 * SQLite's writer for about as long as a finalization pass.
 */
export const HISTORY_BACKFILL_STEP = 50;
/** Steps one run takes at most before it sleeps (runs resume where the last one stopped: the list shrinks). */
export const HISTORY_BACKFILL_MAX_STEPS = 200;
/** Time between runs once nothing is left (a restore of an old backup may list batches again). */
export const HISTORY_BACKFILL_INTERVAL_MS = 60_000;

/**
 * Adds the batches that were FINALIZED before history existed (history_backfill, migration SQLite
 * 14 / PostgreSQL 12) to the boards and received_history, in bounded steps, yielding to the event
 * loop between them; goes on while a step is full, at most `maxSteps`. Returns how many it added.
 */
export async function backfillHistory(
  store: LeaderboardsStore,
  stepSize = HISTORY_BACKFILL_STEP,
  maxSteps = HISTORY_BACKFILL_MAX_STEPS,
): Promise<number> {
  let added = 0;
  for (let step = 0; step < maxSteps; step++) {
    const count = await store.backfillHistory(stepSize);
    added += count;
    if (count < stepSize) return added;
    await yieldToEventLoop();
  }
  return added;
}

export interface HistoryBackfillOptions {
  intervalMs?: number;
  stepSize?: number;
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
    const stepSize = this.options.stepSize ?? HISTORY_BACKFILL_STEP;
    const added = await backfillHistory(this.store, stepSize);
    return { added, more: added === stepSize * HISTORY_BACKFILL_MAX_STEPS };
  }
}
