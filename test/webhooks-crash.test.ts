import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHoldingReceiver, type HoldingReceiver } from "./helpers/holding-receiver.js";
import {
  assertBuilt,
  newAdminToken,
  pollUntil,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";
import { cancelBatch, everyBatchSettled, hookedContract, readEvents, submitBatch, unfinishedDeliveries } from "./helpers/webhook-load.js";

/**
 * Issue 10's crash test: the real server process (SQLite) delivers to a receiver that holds every
 * request 300 ms; it is SIGKILLed while deliveries are in flight, restarted on the same database,
 * and then the receiver must have every event of the log at least once: the set of webhook-ids it
 * received equals the set of event ids. The claim lease is cut to 3 s (WEBHOOK_CLAIM_LEASE_MS) so
 * the deliveries the dead process had claimed come back within the test.
 */

const HOLD_MS = 300;
const LEASE_MS = 3000;
const BATCHES = 30;
/** Every third batch is cancelled: submits, cancels and finalizations all make events. */
const CANCEL_EVERY = 3;
/** The kill comes once this many requests arrived and some are still held. */
const RECEIVED_BEFORE_KILL = 8;
const KILL_DEADLINE_MS = 20_000;
const DELIVERED_DEADLINE_MS = 30_000;

describe("webhooks: SIGKILL while deliveries are in flight (SQLite server process)", () => {
  let dir: string;
  let receiver: HoldingReceiver;
  let server: ServerProcess | null = null;

  beforeAll(async () => {
    assertBuilt();
    dir = tempDir("webhooks-crash");
    receiver = await startHoldingReceiver(HOLD_MS);
  });
  afterAll(async () => {
    await server?.kill("SIGKILL");
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("after a restart the receiver has every logged event at least once, and the ones cut off are sent again", async () => {
    const adminToken = newAdminToken();
    const env: Env = {
      DATABASE_URL: sqliteUrl(dir),
      ADMIN_TOKEN: adminToken,
      MINIMUM_FINALIZE_SECONDS: "1",
      FINALIZER_INTERVAL_MS: "100",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,2",
      WEBHOOK_CLAIM_LEASE_MS: String(LEASE_MS),
    };
    server = await startServerProcess(env);
    const hooked = await hookedContract(server.url, adminToken, receiver.url);
    for (let i = 0; i < BATCHES; i++) {
      await submitBatch(server.url, hooked, `b${i}`);
      if (i % CANCEL_EVERY === 0) await cancelBatch(server.url, hooked, `b${i}`);
    }

    const cutOff = await pollUntil("deliveries in flight after a few were received", KILL_DEADLINE_MS, async () => {
      const held = receiver.inFlight();
      return receiver.requests.length >= RECEIVED_BEFORE_KILL && held.length > 0 ? held.map((request) => request.webhookId) : undefined;
    });
    expect((await server.kill("SIGKILL")).signal).toBe("SIGKILL");
    const receivedAtKill = receiver.requests.length;

    server = await startServerProcess(env);
    const restarted = server;
    await pollUntil("every batch FINALIZED or CANCELLED", DELIVERED_DEADLINE_MS, async () =>
      (await everyBatchSettled(restarted.url, hooked)) ? true : undefined,
    );
    const log = await readEvents(restarted.url, hooked, hooked.startCursor);
    expect(log.ids).toHaveLength(1 + BATCHES + BATCHES / CANCEL_EVERY + (BATCHES - BATCHES / CANCEL_EVERY));
    await pollUntil("the receiver to have every logged event", DELIVERED_DEADLINE_MS, async () =>
      log.ids.every((id) => receiver.receivedIds().has(id)) ? true : undefined,
    );

    expect([...receiver.receivedIds()].sort()).toEqual([...log.ids].sort());
    // The requests held when the process died were never answered to it: they must come again.
    for (const id of cutOff) {
      expect(receiver.requests.filter((request) => request.webhookId === id).length, id).toBeGreaterThanOrEqual(2);
    }
    expect(receiver.requests.length).toBeGreaterThan(receivedAtKill);
    await pollUntil("every delivery SUCCEEDED", DELIVERED_DEADLINE_MS, async () =>
      (await unfinishedDeliveries(restarted.url, hooked)).length === 0 ? true : undefined,
    );
    console.log(
      `webhooks crash: ${log.ids.length} events, ${receivedAtKill} requests before the kill (${cutOff.length} cut off), ` +
        `${receiver.requests.length} in all`,
    );
  }, 90_000);
});
