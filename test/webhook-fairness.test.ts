import { mkdtempSync, rmSync } from "node:fs";
import { operatorActor } from "../src/domain/actors.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../src/clock.js";
import type { AddressKey } from "../src/domain/address.js";
import { webhookTest } from "../src/domain/events.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { LedgerStore } from "../src/store/store.js";
import { newEndpointId } from "../src/domain/webhooks.js";
import { DeliveryJob } from "../src/outbox/delivery-job.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { pollUntil } from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * Issue 19 item 2, on both databases: contract A has ten endpoints that accept the connection and
 * never answer, with 200 deliveries queued; contract B's delivery, made once A's sends hang, must
 * arrive within 2 s (it waited for A's 15 s timeouts before: 13.9 s, 15.0 s, more than 70 s).
 * The job runs as in production: the default send timeout (15 s), slots and poll interval.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const A_ENDPOINTS = 10;
const A_DELIVERIES_PER_ENDPOINT = 20;
/**
 * B's delivery is made once this many of A's requests hang: right after the start, with or without
 * per-contract caps (the job has 16 slots; a contract may hold 8 of them).
 */
const A_HANGING_BEFORE_B = 8;
/** The bound of the issue. */
const B_WITHIN_MS = 2000;
/** How long the test waits for B at most: past the 15 s send timeout, so a failure is measured. */
const B_WAIT_MS = 40_000;
const A_HANGING_DEADLINE_MS = 20_000;

interface Opened {
  store: LedgerStore;
  close(): Promise<void>;
}

async function endpointOf(store: LedgerStore, contract: AddressKey, url: string): Promise<string> {
  const result = await store.createWebhookEndpoint(
    {
      id: newEndpointId(),
      contract,
      url,
      types: null,
      description: null,
      secret: `whsec_${Buffer.alloc(32, 9).toString("base64")}`,
      createdAtMs: Date.now(),
    },
    A_ENDPOINTS,
  );
  if (result.kind !== "created") throw new Error("endpoint not created");
  return result.endpoint.id;
}

async function testDelivery(store: LedgerStore, contract: AddressKey, endpointId: string): Promise<void> {
  const made = await store.createTestDelivery(
    contract,
    endpointId,
    webhookTest(contract, endpointId, Date.now(), operatorActor(contract)),
    Date.now(),
  );
  if (made.kind !== "done") throw new Error("test delivery not made");
}

function fairnessSuite(name: string, open: () => Promise<Opened | null>): void {
  describe(name, () => {
    let opened: Opened | null = null;
    let hanging: Receiver;
    let fast: Receiver;
    beforeAll(async () => {
      opened = await open();
      hanging = await startReceiver(() => ({ status: 200, hang: true }));
      fast = await startReceiver();
    });
    afterAll(async () => {
      await hanging?.close();
      await fast?.close();
      await opened?.close();
    });

    it("contract B's delivery arrives within 2 s while contract A's ten endpoints hang with 200 deliveries queued", async (context) => {
      if (!opened) return context.skip(SKIP_REASON);
      const { store } = opened;
      const a = randomAddress();
      const b = randomAddress();
      const aEndpoints: string[] = [];
      for (let i = 0; i < A_ENDPOINTS; i++) aEndpoints.push(await endpointOf(store, a, `${hanging.url}?endpoint=${i}`));
      for (let round = 0; round < A_DELIVERIES_PER_ENDPOINT; round++) for (const id of aEndpoints) await testDelivery(store, a, id);
      const bEndpoint = await endpointOf(store, b, fast.url);

      const job = new DeliveryJob(
        store,
        systemClock,
        { retryScheduleSeconds: [5, 300], allowPrivateUrls: true },
        null,
        pino({ enabled: false }),
      );
      job.start();
      try {
        await pollUntil("A's sends hanging", A_HANGING_DEADLINE_MS, async () =>
          hanging.received.length >= A_HANGING_BEFORE_B ? true : undefined,
        );
        const startedMs = Date.now();
        await testDelivery(store, b, bEndpoint);
        await pollUntil("B's delivery", B_WAIT_MS, async () => (fast.received.length > 0 ? true : undefined));
        const latencyMs = fast.received[0]!.atMs - startedMs;
        console.log(`webhook fairness (${name}): B's delivery after ${latencyMs} ms; A's requests by then ${hanging.received.length}`);
        expect(latencyMs).toBeLessThan(B_WITHIN_MS);
      } finally {
        await job.stop();
      }
    }, 90_000);
  });
}

fairnessSuite("webhook fairness on SQLite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-webhook-fairness-"));
  const store = createSqliteStore({ path: join(dir, "ledger.db"), synchronous: "NORMAL" });
  await store.migrate();
  return {
    store,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

fairnessSuite("webhook fairness on PostgreSQL", async () => {
  if (!DATABASE_URL_TEST) return null;
  const schema: TestSchema = await createTestSchema(DATABASE_URL_TEST);
  const store = schema.openStore();
  await store.migrate();
  return { store, close: () => schema.drop() };
});
