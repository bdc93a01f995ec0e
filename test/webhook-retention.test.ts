import { randomUUID } from "node:crypto";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import pino from "pino";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import type { AddressKey } from "../src/domain/address.js";
import { creditCreated, type LedgerEvent } from "../src/domain/events.js";
import { createMetrics } from "../src/metrics.js";
import type { LedgerStore } from "../src/store/store.js";
import { newEndpointId } from "../src/domain/webhooks.js";
import { PurgeJob } from "../src/worker/purge.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import { assertBuilt, runCli, sqliteUrl, tempDir } from "./helpers/process.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { postgresFanOutAt, sqliteFanOutAt } from "./helpers/fan-out.js";

/**
 * WEBHOOK_DELIVERY_RETENTION_DAYS: validated at start, and applied by the purge job (which owns
 * every retention): a finished delivery older than the setting is deleted, a newer one and a
 * PENDING one, however old, are kept; the count shows in points_purged_total{kind="deliveries"}.
 */

const DAY_MS = 24 * 3600 * 1000;
const T0_MS = Date.UTC(2026, 0, 1);

describe("WEBHOOK_DELIVERY_RETENTION_DAYS", () => {
  it("defaults to 30 days and refuses values that are not whole days from 1 to 3650, naming the variable", () => {
    expect(loadConfig({}).webhookDeliveryRetentionDays).toBe(30);
    expect(loadConfig({ WEBHOOK_DELIVERY_RETENTION_DAYS: "7" }).webhookDeliveryRetentionDays).toBe(7);
    for (const bad of ["0", "3651", "7d", "-1", "1.5"]) {
      expect(() => loadConfig({ WEBHOOK_DELIVERY_RETENTION_DAYS: bad })).toThrow(
        /^invalid configuration: WEBHOOK_DELIVERY_RETENTION_DAYS /,
      );
    }
  });

  describe("at start-up", () => {
    let dir = "";
    beforeAll(() => {
      assertBuilt();
      dir = tempDir("delivery-retention");
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each(["0", "3651", "30d"])("WEBHOOK_DELIVERY_RETENTION_DAYS=%s stops `serve` with a message naming it", async (bad) => {
      const env = { DATABASE_URL: sqliteUrl(dir, "never.db"), PORT: "0", WEBHOOK_DELIVERY_RETENTION_DAYS: bad };
      const result = await runCli(["serve"], env);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toMatch(/invalid configuration: WEBHOOK_DELIVERY_RETENTION_DAYS must/);
    });
  });
});

interface Fixture {
  store: LedgerStore;
  /** Fans `events` out in one committed transaction, as a transition does. */
  emit(events: LedgerEvent[], nowMs: number): Promise<void>;
  close(): Promise<void>;
}

function credit(address: AddressKey, atMs: number): LedgerEvent {
  return creditCreated({ address, creditId: randomUUID(), pointType: "PHASE2_POINTS", amount: 1n }, atMs, ADMIN_ACTOR);
}

/** Creates a delivery at `atMs` and finishes it at once (SUCCEEDED). */
async function finishedDelivery(f: Fixture, contract: AddressKey, endpointId: string, atMs: number): Promise<void> {
  await f.emit([credit(contract, atMs)], atMs);
  const claim = { nowMs: atMs, limit: 100, perEndpointLimit: 100, perContractLimit: 100, leaseMs: 30_000, excludeEndpointIds: [] };
  for (const d of (await f.store.claimDueDeliveries(claim)).filter((c) => c.endpointId === endpointId)) {
    const attempt = { atMs, statusCode: 200, error: null, durationMs: 5 };
    await f.store.recordDeliveryAttempt(d, { attempt, status: "SUCCEEDED", nextAttemptAtMs: null, disableEndpoint: null, timedOut: false });
  }
}

function retentionSuite(name: string, open: () => Promise<Fixture | null>): void {
  it(`${name}: the purge job deletes finished deliveries older than the retention and keeps the newer and the pending ones`, async (context) => {
    const f = await open();
    if (!f) return context.skip(SKIP_REASON);
    try {
      await f.store.migrate();
      const contract = randomAddress();
      const created = await f.store.createWebhookEndpoint(
        {
          id: newEndpointId(),
          contract,
          url: "http://127.0.0.1:9/hook",
          types: null,
          description: null,
          secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}`,
          createdAtMs: T0_MS,
        },
        10,
      );
      if (created.kind !== "created") throw new Error("endpoint not created");
      const endpointId = created.endpoint.id;
      await finishedDelivery(f, contract, endpointId, T0_MS);
      await finishedDelivery(f, contract, endpointId, T0_MS + 5 * DAY_MS);
      // Created last, so no claim finishes it: it stays PENDING, never purged however old.
      await f.emit([credit(contract, T0_MS)], T0_MS);
      const before = (await f.store.listDeliveries(contract, endpointId, { limit: 10 }))!.deliveries;
      expect(before).toHaveLength(3);
      const oldId = before.find((d) => d.status === "SUCCEEDED" && d.createdAtMs === T0_MS)!.id;

      const clock = new ManualClock(T0_MS + 7 * DAY_MS);
      const metrics = createMetrics();
      const purge = new PurgeJob(f.store, clock, { eventRetentionDays: 3650, deliveryRetentionDays: 3 }, metrics, pino({ enabled: false }));
      await purge.runOnce();
      const after = (await f.store.listDeliveries(contract, endpointId, { limit: 10 }))!.deliveries;
      expect(after.map((d) => d.id).sort()).toEqual(
        before
          .map((d) => d.id)
          .filter((id) => id !== oldId)
          .sort(),
      );
      expect(await metrics.registry.getSingleMetricAsString("points_purged_total")).toMatch(/points_purged_total\{kind="deliveries"\} 1\b/);
      // Under the default (30 days) the same run keeps all of them.
      const keepAll = new PurgeJob(f.store, clock, { eventRetentionDays: 3650 }, metrics, pino({ enabled: false }));
      await keepAll.runOnce();
      expect((await f.store.listDeliveries(contract, endpointId, { limit: 10 }))!.deliveries).toHaveLength(2);
      expect(await metrics.registry.getSingleMetricAsString("points_purged_total")).toMatch(/points_purged_total\{kind="deliveries"\} 1\b/);
    } finally {
      await f.close();
    }
  });
}

retentionSuite("SQLite", async () => {
  const fresh = temporarySqliteStore();
  const fanOut = sqliteFanOutAt(fresh.databaseUrl.slice("sqlite:".length));
  return {
    store: fresh.store,
    emit: fanOut.emit,
    close: async () => {
      await fanOut.close();
      await fresh.remove();
    },
  };
});

let schema: TestSchema | undefined;
afterAll(async () => schema?.drop());

retentionSuite("PostgreSQL", async () => {
  if (!DATABASE_URL_TEST) return null;
  schema = await createTestSchema(DATABASE_URL_TEST);
  const store = schema.openStore();
  return { store, ...postgresFanOutAt(schema.connectionString, 1) };
});
