import type { FastifyBaseLogger } from "fastify";
import type { LeaderboardsStore } from "../store/store.js";
import { HISTORY_BACKFILL_MAX_STEP, WINDOW_BOARDS_INTERVAL_MS } from "../domain/limits.js";
import { BoundedStepsJob, type BoundedStepsJobOptions } from "./bounded-steps.js";

/**
 * The window job: builds the window boards that reads asked for from the window's batches
 * finalized before they were asked for (the projection adds the later ones), and drops the ones a
 * board no longer keeps (src/store/ports/leaderboards.ts), in bounded steps, run in every process
 * (on PostgreSQL the steps of several processes take different window boards: FOR UPDATE SKIP
 * LOCKED). Reads never wait for it: while a window board is not ready, they read the window's
 * batches finalized by the projection's through.
 */
export class WindowBoardsJob extends BoundedStepsJob {
  constructor(
    private readonly store: LeaderboardsStore,
    options: BoundedStepsJobOptions,
    log: FastifyBaseLogger,
  ) {
    super(
      {
        intervalMs: WINDOW_BOARDS_INTERVAL_MS,
        maxStepSize: HISTORY_BACKFILL_MAX_STEP,
        failure: "window board step failed; retrying at the next run",
      },
      options,
      log,
    );
  }

  protected async step(size: number): Promise<number> {
    return this.store.buildWindowBoards(size);
  }
}
