import type { FastifyBaseLogger } from "fastify";
import type { LeaderboardsStore } from "../store/store.js";
import { JobLoop } from "../job-loop.js";
import { HISTORY_BACKFILL_MAX_STEP, WINDOW_BOARDS_INTERVAL_MS } from "../domain/limits.js";
import { runBoundedSteps } from "./history-backfill.js";

export interface WindowBoardsOptions {
  intervalMs?: number;
  /** HISTORY_BACKFILL_MAX_STEP when not given. */
  maxStepSize?: number;
}

/**
 * The window job: builds the window boards that reads of ended windows asked for, and drops the
 * ones a board no longer keeps (src/store/ports/leaderboards.ts), in bounded steps
 * (runBoundedSteps), run in every process (on PostgreSQL the steps of several processes take
 * different window boards: FOR UPDATE SKIP LOCKED). Reads never wait for it: until a window board
 * is ready they read the window's batches. A failure is logged and retried at the next run.
 */
export class WindowBoardsJob {
  private readonly loop = new JobLoop(
    async () => {
      const { more } = await this.runOnce();
      return more ? 0 : this.intervalMs;
    },
    (error) => {
      this.log.error({ err: error }, "window board step failed; retrying at the next run");
      return this.intervalMs;
    },
  );

  constructor(
    private readonly store: LeaderboardsStore,
    private readonly options: WindowBoardsOptions,
    private readonly log: FastifyBaseLogger,
  ) {}

  private get intervalMs(): number {
    return this.options.intervalMs ?? WINDOW_BOARDS_INTERVAL_MS;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One run: bounded steps until no window board is left to build or drop; `more` when it stopped at its bound. */
  async runOnce(): Promise<{ added: number; more: boolean }> {
    return runBoundedSteps((size) => this.store.buildWindowBoards(size), this.options.maxStepSize ?? HISTORY_BACKFILL_MAX_STEP);
  }
}
