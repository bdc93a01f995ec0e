import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { runWorkload } from "./workload.js";

/**
 * Seeded randomized workload on PostgreSQL, each seed in a fresh schema (the workload must be the
 * only caller of finalizeDue on its database). Skipped without DATABASE_URL_TEST.
 * `SEED=<n> npx vitest run test/workload-postgres.test.ts` reruns one seed (STEPS=<n> to change its length).
 */
const DEFAULT_SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const DEFAULT_STEPS = 500;

const seeds = process.env.SEED ? [Number(process.env.SEED)] : DEFAULT_SEEDS;
const steps = process.env.STEPS ? Number(process.env.STEPS) : DEFAULT_STEPS;

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const schemas: TestSchema[] = [];
afterAll(async () => {
  await Promise.all(schemas.map((schema) => schema.drop()));
});

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

describe.skipIf(!DATABASE_URL_TEST)(`randomized workload on PostgreSQL${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`, () => {
  for (const seed of seeds) {
    it(`seed ${seed}: ${steps} steps keep the store equal to the model and every invariant`, async () => {
      expect(Number.isSafeInteger(seed), "SEED must be an integer").toBe(true);
      const schema = await createTestSchema(DATABASE_URL_TEST!);
      schemas.push(schema);
      const store = schema.openStore();
      await store.migrate();
      const report = await runWorkload({
        store,
        seed,
        steps,
        clock: new ManualClock(),
        rerunHint: `SEED=${seed} npx vitest run test/workload-postgres.test.ts`,
      });
      // The seed must exercise the main paths, or the run proves little.
      expect(report.batchesFinalized).toBeGreaterThan(0);
      expect(report.batchesCancelled).toBeGreaterThan(0);
      expect(report.submitsRefused).toBeGreaterThan(0);
      for (const outcome of Object.keys(reached)) reached[outcome]! += report.outcomes[outcome] ?? 0;
    });
  }
  it.runIf(seeds === DEFAULT_SEEDS)("the seeds together reach every rare path", () => {
    for (const [outcome, times] of Object.entries(reached)) expect(times, outcome).toBeGreaterThan(0);
  });
});
