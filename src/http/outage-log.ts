import type { FastifyBaseLogger } from "fastify";
import { StoreUnavailableError } from "../store/errors.js";

/**
 * A database outage is expected (a restart, a failover) and says the same thing on every request
 * and every job run: an 11 s one wrote 283 error lines with stack traces, which buried whatever
 * else happened. So it writes two lines: one when it starts (the first failure's reason) and one
 * when it ends, with how long it lasted and how many failures were counted instead of logged.
 *
 * Every logger of the app (requests, the worker's jobs: pino children inherit the hook) passes
 * its calls through logMethod: a call whose `err` is the store's StoreUnavailableError starts the
 * outage or is counted in it. The end is seen by asking the store (ping, what /readyz asks: the
 * database answers and takes writes) every PROBE_INTERVAL_MS while the outage lasts, so it is
 * logged even when nothing else runs. Any other error is logged as before.
 */

/** How often an outage in progress asks the database whether it is back. */
const PROBE_INTERVAL_MS = 1000;

type LogFn = (...args: unknown[]) => void;

export class OutageLog {
  private startedAtMs: number | null = null;
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;
  private logger: FastifyBaseLogger | null = null;

  constructor(private readonly ping: () => Promise<void>) {}

  /** The logger the end line goes to (the app's root logger, once it exists). */
  attach(logger: FastifyBaseLogger): void {
    this.logger = logger;
  }

  /** pino's hooks.logMethod: counts database unavailability instead of logging each one. */
  readonly logMethod = (logger: unknown, args: unknown[], method: LogFn): void => {
    const unavailable = unavailableErrorOf(args[0]);
    if (unavailable === null) {
      method.apply(logger, args);
      return;
    }
    this.failures += 1;
    if (this.startedAtMs !== null) return;
    this.startedAtMs = Date.now();
    method.apply(logger, [
      { outage: "started", reason: unavailable.message },
      "the database is unavailable: requests answer 503 with Retry-After and jobs retry; further failures are counted until it is back",
    ]);
    this.schedule();
  };

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.probe(), PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    try {
      await this.ping();
    } catch {
      this.schedule();
      return;
    }
    const durationMs = Date.now() - this.startedAtMs!;
    const failures = this.failures;
    this.startedAtMs = null;
    this.failures = 0;
    this.timer = null;
    this.logger?.warn(
      { outage: "ended", durationMs, failures },
      `the database is available again after ${(durationMs / 1000).toFixed(1)} s; ${failures} operations failed meanwhile`,
    );
  }
}

function unavailableErrorOf(first: unknown): StoreUnavailableError | null {
  const err = (first as { err?: unknown } | null)?.err;
  if (err instanceof StoreUnavailableError) return err;
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause instanceof StoreUnavailableError ? cause : null;
}
