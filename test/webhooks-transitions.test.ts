import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { createMetrics } from "../src/metrics.js";
import { DeliveryJob } from "../src/outbox/delivery-job.js";
import { batchBody, creditPoints, expectError, putBatch, randomAddress, setupContract, type TestLedger } from "./helpers/http.js";
import { startReceiver, type ReceivedRequest, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * Every ledger transition fans out its webhook deliveries in its own transaction: real requests
 * through the app (credit, submit, cancel, finalization by the finalizer), the real delivery job,
 * real receivers on 127.0.0.1. What each endpoint receives is compared with the event log as
 * GET …/events returns it, and signatures are checked with the standardwebhooks package.
 */

interface EventJson {
  id: string;
  type: string;
  contractAddress: string | null;
  occurredAt: string;
  data: Record<string, unknown>;
}
interface EndpointJson {
  id: string;
}
interface DeliveryJson {
  eventId: string;
  status: string;
}

const ENV = { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,2" };
/** Finalization needs the clock past finalizeAt; batches here wait MINIMUM_FINALIZE_SECONDS (1 s of TEST_ENV). */
const FINALIZE_SECONDS = 1;

// Started at the real time: standardwebhooks refuses a webhook-timestamp more than 5 minutes off.
const clock = new ManualClock(Date.now());
let ledger: TestLedger;
const receivers: Receiver[] = [];

beforeAll(async () => {
  ledger = await setupContract({ env: ENV, clock });
});
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await ledger.close();
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

const endpointsPath = () => `/v1/contracts/${ledger.contract}/webhook-endpoints`;

async function createEndpoint(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const response = await ledger.send({ method: "POST", url: endpointsPath(), token: ledger.token, body });
  expect(response.status, response.text).toBe(200);
  const json = response.json as { endpoint: EndpointJson; secret: string };
  return { id: json.endpoint.id, secret: json.secret };
}

/** The contract's events after `after` (every page), as GET …/events returns them. */
async function eventsAfter(after: string | undefined): Promise<{ events: EventJson[]; cursor: string }> {
  const events: EventJson[] = [];
  let cursor = after;
  for (;;) {
    const query = `limit=1000${cursor === undefined ? "" : `&after=${encodeURIComponent(cursor)}`}`;
    const response = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/events?${query}`, token: ledger.token });
    expect(response.status, response.text).toBe(200);
    const page = response.json as { events: EventJson[]; cursor: string; hasMore: boolean };
    events.push(...page.events);
    cursor = page.cursor;
    if (!page.hasMore) return { events, cursor };
  }
}

async function deliveriesOf(endpointId: string): Promise<DeliveryJson[]> {
  const response = await ledger.send({ method: "GET", url: `${endpointsPath()}/${endpointId}/deliveries?limit=250`, token: ledger.token });
  expect(response.status, response.text).toBe(200);
  return (response.json as { deliveries: DeliveryJson[] }).deliveries;
}

/** Sends everything due now with the real delivery job; returns how many attempts it made. */
async function deliverDue(): Promise<number> {
  const job = new DeliveryJob(
    ledger.store,
    clock,
    { retryScheduleSeconds: ledger.config.webhookRetryScheduleSeconds, allowPrivateUrls: true, pollIntervalMs: 20 },
    createMetrics(),
    ledger.app.log,
  );
  return job.runOnce();
}

function headersOf(request: ReceivedRequest): Record<string, string> {
  return Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
}

/** Each request verified with the receiver's library and parsed; fails on a bad signature. */
function verified(target: Receiver, secret: string): { webhookId: string; payload: EventJson }[] {
  const verifier = new Webhook(secret);
  return target.received.map((request) => {
    const payload = verifier.verify(request.body, headersOf(request)) as EventJson;
    return { webhookId: String(request.headers["webhook-id"]), payload };
  });
}

describe("ledger transitions fan out webhook deliveries", () => {
  let all: { id: string; secret: string };
  let finalizedOnly: { id: string; secret: string };
  let disabled: { id: string; secret: string };
  let allTarget: Receiver;
  let finalizedTarget: Receiver;
  let disabledTarget: Receiver;
  let logged: EventJson[];
  let cursorAfterTransitions: string;

  beforeAll(async () => {
    [allTarget, finalizedTarget, disabledTarget] = [await receiver(), await receiver(), await receiver()];
    // Events before the endpoints existed (operator.changed, the first credit) go nowhere.
    const { cursor: start } = await eventsAfter(undefined);
    all = await createEndpoint({ url: allTarget.url });
    finalizedOnly = await createEndpoint({ url: finalizedTarget.url, types: ["batch.finalized"] });
    disabled = await createEndpoint({ url: disabledTarget.url });
    const patched = await ledger.send({
      method: "PATCH",
      url: `${endpointsPath()}/${disabled.id}`,
      token: ledger.token,
      body: { disabled: true },
    });
    expect(patched.status, patched.text).toBe(200);

    await creditPoints(ledger.send, ledger.adminToken, ledger.contract, "PHASE2_POINTS", "5");
    for (const batchId of ["kept-1", "kept-2", "cancelled-1"]) {
      await putBatch(
        ledger.send,
        ledger,
        batchId,
        batchBody([{ toAddress: randomAddress(), points: "1" }], "PHASE2_POINTS", FINALIZE_SECONDS),
      );
    }
    const cancel = await ledger.send({
      method: "DELETE",
      url: `/v1/contracts/${ledger.contract}/batches/cancelled-1`,
      token: ledger.token,
    });
    expect(cancel.status, cancel.text).toBe(200);
    clock.advance(FINALIZE_SECONDS * 1000 + 1);
    expect(await ledger.finalizeDue()).toBe(2);

    const { events, cursor } = await eventsAfter(start);
    logged = events;
    cursorAfterTransitions = cursor;
    await deliverDue();
  });

  it("the log holds exactly the transitions made: credit, 3 accepted, 1 cancelled, 2 finalized", () => {
    const counts: Record<string, number> = {};
    for (const event of logged) counts[event.type] = (counts[event.type] ?? 0) + 1;
    expect(counts).toEqual({ "credit.created": 1, "batch.accepted": 3, "batch.cancelled": 1, "batch.finalized": 2 });
  });

  it("an endpoint subscribed to every type gets each event exactly once, signed, with the event id as webhook-id and the logged event as payload", async () => {
    const received = verified(allTarget, all.secret);
    expect(received.map((r) => r.webhookId).sort()).toEqual(logged.map((e) => e.id).sort());
    for (const { webhookId, payload } of received) {
      expect(payload.id).toBe(webhookId);
      expect(payload).toEqual(logged.find((event) => event.id === webhookId));
    }
    const deliveries = await deliveriesOf(all.id);
    expect(deliveries.map((d) => d.eventId).sort()).toEqual(logged.map((e) => e.id).sort());
    expect(new Set(deliveries.map((d) => d.status))).toEqual(new Set(["SUCCEEDED"]));
  });

  it("an endpoint subscribed to batch.finalized only gets only the two finalizations", () => {
    const finalized = logged.filter((event) => event.type === "batch.finalized");
    const received = verified(finalizedTarget, finalizedOnly.secret);
    expect(received.map((r) => r.payload)).toHaveLength(2);
    expect(received.map((r) => r.webhookId).sort()).toEqual(finalized.map((e) => e.id).sort());
    expect(new Set(received.map((r) => r.payload.type))).toEqual(new Set(["batch.finalized"]));
  });

  it("a disabled endpoint gets nothing and has no deliveries", async () => {
    expect(disabledTarget.received).toHaveLength(0);
    expect(await deliveriesOf(disabled.id)).toEqual([]);
  });

  it("refused requests (rolled back) append no event and fan out no delivery", async () => {
    const before = allTarget.received.length;
    const tooMuch = batchBody([{ toAddress: randomAddress(), points: "1000000" }], "PHASE2_POINTS", FINALIZE_SECONDS);
    const send = (method: "PUT" | "DELETE", batchId: string, body?: unknown) =>
      ledger.send({ method, url: `/v1/contracts/${ledger.contract}/batches/${batchId}`, token: ledger.token, body });
    expectError(await send("PUT", "too-much", tooMuch), 422, "INSUFFICIENT_BALANCE");
    expectError(await send("DELETE", "kept-1"), 409, "BATCH_NOT_CANCELLABLE");
    const changed = batchBody([{ toAddress: randomAddress(), points: "2" }], "PHASE2_POINTS", FINALIZE_SECONDS);
    expectError(await send("PUT", "kept-2", changed), 409, "BATCH_ID_EXISTS");
    expect((await eventsAfter(cursorAfterTransitions)).events).toEqual([]);
    expect(await deliverDue()).toBe(0);
    expect(allTarget.received).toHaveLength(before);
    expect(await deliveriesOf(all.id)).toHaveLength(logged.length);
  });
});
