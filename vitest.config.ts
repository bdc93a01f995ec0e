import { defineConfig } from "vitest/config";

/** Suites that measure latency under load: they run on their own, after the others (groupOrder). */
const LOAD_SUITES = ["test/overload-admission.test.ts", "test/overload-keepalive.test.ts"];
/**
 * Suites that read PostgreSQL's event log right after writing: an event is listed once every
 * older transaction of the cluster has ended (src/store/postgres/events.ts), so another file's
 * open transaction can hold their newest events back. Each runs alone, after the others.
 */
const PG_EVENT_SUITES = ["test/events-postgres.test.ts", "test/api-keys.test.ts"];

const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // A PostgreSQL cluster with the defaults beside the machine's (test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
    // End-to-end suites start server processes; keep the 2-core machine from thrashing.
    maxWorkers: 2,
    reporters: ["default"],
    projects: [
      {
        test: {
          ...common,
          name: "suites",
          include: ["test/**/*.test.ts"],
          exclude: [...LOAD_SUITES, ...PG_EVENT_SUITES],
          sequence: { groupOrder: 0 },
        },
      },
      // One group each: two load suites at once measured each other (CI: /readyz waited 5 s under both).
      ...LOAD_SUITES.map((file, i) => ({
        test: { ...common, name: `load-${i + 1}`, include: [file], sequence: { groupOrder: 1 + i } },
      })),
      ...PG_EVENT_SUITES.map((file, i) => ({
        test: { ...common, name: `pg-events-${i + 1}`, include: [file], sequence: { groupOrder: 1 + LOAD_SUITES.length + i } },
      })),
    ],
  },
});
