import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../src/clock.js";
import { creditCreated } from "../src/domain/events.js";
import { PurgeJob } from "../src/worker/purge.js";
import { describeEventsApi } from "./events-suite.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import { logEverything } from "./helpers/tlog.js";
import { randomAddress } from "./helpers/postgres.js";

/** The events API suite (events-suite.ts) on SQLite; events-postgres.test.ts runs it on PostgreSQL. */
describeEventsApi("SQLite", async () => temporarySqliteStore());

describe("event retention in the purge job", () => {
  it("purges events older than EVENT_RETENTION_DAYS and keeps the newer ones", async () => {
    const fresh = temporarySqliteStore();
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    try {
      await fresh.store.migrate();
      const credit = (creditId: string) =>
        fresh.store.credit({ address: randomAddress(), creditId, pointType: "PHASE2_POINTS", amount: 1n, createdAtMs: clock.now() });
      await credit("old");
      clock.advance(3 * 24 * 3600 * 1000);
      await credit("new");
      // Only what the transparency log has read is purged (its leaves are computed from the events).
      await logEverything(fresh.store, clock.now());
      const purge = new PurgeJob(fresh.store, clock, { eventRetentionDays: 2 }, null, pino({ enabled: false }));
      purge.start();
      try {
        await vi.waitFor(
          async () => {
            const page = await fresh.store.listEvents({ stream: null, after: null, types: null, limit: 10 });
            expect(
              page.kind === "page" && page.events.map((e) => (e.event.data as ReturnType<typeof creditCreated>["data"]).creditId),
            ).toEqual(["new"]);
          },
          { timeout: 5000 },
        );
      } finally {
        await purge.stop();
      }
    } finally {
      await fresh.remove();
    }
  });
});
