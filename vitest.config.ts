import { defineConfig } from "vitest/config";

/** Suites that measure latency under load: they run on their own, after the others (groupOrder). */
const LOAD_SUITES = ["test/overload-admission.test.ts"];

const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // End-to-end suites start server processes; keep the 2-core machine from thrashing.
    maxWorkers: 2,
    reporters: ["default"],
    projects: [
      { test: { ...common, name: "suites", include: ["test/**/*.test.ts"], exclude: LOAD_SUITES, sequence: { groupOrder: 0 } } },
      { test: { ...common, name: "load", include: LOAD_SUITES, sequence: { groupOrder: 1 } } },
    ],
  },
});
