import type { FastifyBaseLogger } from "fastify";
import type { LeaderboardsStore } from "../store/store.js";
import { HISTORY_BACKFILL_INTERVAL_MS, HISTORY_BACKFILL_MAX_STEP, HISTORY_BACKFILL_MAX_STEPS } from "../domain/limits.js";
import { BoundedStepsJob, runBoundedSteps, type BoundedStepsJobOptions } from "./bounded-steps.js";

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

/**
 * The history job: backfillHistory, run in every process (on PostgreSQL the steps of several
 * processes share the list through SKIP LOCKED).
 */
export class HistoryBackfillJob extends BoundedStepsJob {
  constructor(
    private readonly store: LeaderboardsStore,
    options: BoundedStepsJobOptions,
    log: FastifyBaseLogger,
  ) {
    super(
      {
        intervalMs: HISTORY_BACKFILL_INTERVAL_MS,
        maxStepSize: HISTORY_BACKFILL_MAX_STEP,
        failure: "history backfill failed; retrying at the next run",
      },
      options,
      log,
    );
  }

  protected async step(size: number): Promise<number> {
    return this.store.backfillHistory(size);
  }

  protected override ran({ added, more }: { added: number; more: boolean }): void {
    if (added > 0) this.log.info({ batches: added, more }, "added batches finalized before history existed to the leaderboards");
  }
}
