import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { runWorkload } from "./workload.js";

/**
 * Seeded randomized workload on SQLite, each seed on a fresh database file.
 * `SEED=<n> npx vitest run test/workload-sqlite.test.ts` reruns one seed (STEPS=<n> to change its length).
 */
const DEFAULT_SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const DEFAULT_STEPS = 500;

const seeds = process.env.SEED ? [Number(process.env.SEED)] : DEFAULT_SEEDS;
const steps = process.env.STEPS ? Number(process.env.STEPS) : DEFAULT_STEPS;
const directory = mkdtempSync(join(tmpdir(), "points-ledger-workload-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Rarer paths every default run must reach at least once over all its seeds. */
const reached: Record<string, number> = {
  "credit exists match": 0,
  "credit exists mismatch": 0,
  "credit overflow": 0,
  "submit exists match": 0,
  "submit exists mismatch": 0,
  "cancel cancelled again": 0,
  "cancel not_cancellable": 0,
  "cancel not_found": 0,
  "cancel at finalizeAt": 0,
  "finalize at finalizeAt": 0,
  "finalize limited": 0,
};

describe("randomized workload on SQLite", () => {
  for (const seed of seeds) {
    it(`seed ${seed}: ${steps} steps keep the store equal to the model and every invariant`, async () => {
      expect(Number.isSafeInteger(seed), "SEED must be an integer").toBe(true);
      const store = createSqliteStore({ path: join(directory, `seed-${seed}.db`), synchronous: "NORMAL" });
      try {
        await store.migrate();
        const report = await runWorkload({
          store,
          seed,
          steps,
          clock: new ManualClock(),
          rerunHint: `SEED=${seed} npx vitest run test/workload-sqlite.test.ts`,
        });
        // The seed must exercise the main paths, or the run proves little.
        expect(report.batchesFinalized).toBeGreaterThan(0);
        expect(report.batchesCancelled).toBeGreaterThan(0);
        expect(report.submitsRefused).toBeGreaterThan(0);
        for (const outcome of Object.keys(reached)) reached[outcome]! += report.outcomes[outcome] ?? 0;
      } finally {
        await store.close();
      }
    });
  }
  it.runIf(seeds === DEFAULT_SEEDS)("the seeds together reach every rare path", () => {
    for (const [outcome, times] of Object.entries(reached)) expect(times, outcome).toBeGreaterThan(0);
  });
});
