import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end suites start server processes; keep the 2-core machine from thrashing.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
