import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { FastifyBaseLogger } from "fastify";
import type { LogSigningSource } from "../src/auth/log-signing-key.js";
import { systemClock } from "../src/clock.js";
import type { LedgerStore } from "../src/store/store.js";
import { TransparencyLogJob } from "../src/worker/tlog.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import { randomAddress } from "./helpers/postgres.js";
import { testLogSigning } from "./helpers/tlog.js";

/**
 * The transparency log's job (src/worker/tlog.ts) while the log grows: what a run logs is in no
 * signed checkpoint before the next one is due, so it runs once per checkpoint interval (not at each
 * 200 ms poll), and starts its steps at the size its last run ended with (not at 1, doubling). The
 * drain of a slowed PostgreSQL machine lost ≈ 9 % to the job's runs before (docs/performance.md,
 * session 18). A real SQLite store and the job's own loop on the real clock; a writer of credits
 * makes ≈ 40 events a second for 3 s.
 */

const CHECKPOINT_INTERVAL_MS = 1000;
const LOAD_MS = 3000;

const signingSource: LogSigningSource = { stored: false, signing: async () => testLogSigning(CHECKPOINT_INTERVAL_MS) };
const quiet = pino({ level: "silent" }) as FastifyBaseLogger;

describe("the transparency log's job while the log grows", () => {
  let cleanup: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await cleanup?.();
    cleanup = null;
  });

  it("runs once per checkpoint interval with steps sized from its last run, and logs every event once", async () => {
    const fixture = temporarySqliteStore();
    const store: LedgerStore = fixture.store;
    await store.migrate();
    const steps: number[] = [];
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        if (name === "appendToLog") {
          return async (...args: Parameters<LedgerStore["appendToLog"]>) => {
            steps.push(Date.now());
            return target.appendToLog(...args);
          };
        }
        const value: unknown = Reflect.get(target, name, receiver);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const job = new TransparencyLogJob(counted, signingSource, systemClock, {}, quiet);
    cleanup = async () => {
      await job.stop();
      await fixture.remove();
    };
    job.start();

    let credits = 0;
    const loadStartMs = Date.now();
    while (Date.now() - loadStartMs < LOAD_MS) {
      await store.credit({
        address: randomAddress(),
        creditId: `c${credits++}`,
        pointType: "PHASE2_POINTS",
        amount: 10n ** 12n,
        createdAtMs: Date.now(),
      });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const loadEndMs = Date.now();
    const stepsDuringLoad = steps.filter((atMs) => atMs >= loadStartMs && atMs <= loadEndMs).length;

    // Everything logged and signed within two checkpoint intervals of the last write.
    let status = await store.logStatus();
    for (let i = 0; i < 100 && (status.oldestUnloggedAtMs !== null || status.checkpoint?.size !== status.size); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = await store.logStatus();
    }
    expect(credits).toBeGreaterThan(40);
    expect(status.oldestUnloggedAtMs).toBeNull();
    expect(status.size).toBe(credits);
    expect(status.checkpoint?.size).toBe(credits);

    // Measured: five polls a second of steps from size 1 (1, 2, 4, …) made 56 steps for 115 events
    // in 3 s; a run per checkpoint interval, starting at its last size, made 10.
    console.log(`transparency log job: ${credits} events in ${loadEndMs - loadStartMs} ms, ${stepsDuringLoad} steps`);
    expect(stepsDuringLoad).toBeLessThan(15);
  });
});
