import Database from "better-sqlite3";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { creditCreated, eventJson, type LedgerEvent } from "../src/domain/events.js";
import { createMetrics } from "../src/metrics.js";
import { fanOutDeliveries } from "../src/store/sqlite/webhooks.js";
import { DeliveryJob } from "../src/outbox/delivery-job.js";
import { addContract, expectError, setupContract, type OperatedContract, type TestLedger } from "./helpers/http.js";
import { startReceiver, type Answer, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * Webhooks through the real app (SQLite) and the real delivery job, against a real HTTP receiver
 * on 127.0.0.1. Until every transition fans out by itself, events are fanned out here with the
 * adapter's fanOutDeliveries inside a transaction, as the store does it.
 */

interface EndpointJson {
  id: string;
  url: string;
  types: string[];
  description: string | null;
  disabled: boolean;
  disabledReason: string | null;
  createdAt: string;
}
interface DeliveryJson {
  id: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: { at: string; statusCode: number | null; error: string | null; durationMs: number }[];
  nextAttemptAt: string | null;
}

const ENV = { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,2" };

let ledger: TestLedger;
let raw: Database.Database;
const receivers: Receiver[] = [];
const jobs: DeliveryJob[] = [];

beforeAll(async () => {
  ledger = await setupContract({ env: ENV });
  raw = new Database(ledger.config.databaseUrl.slice("sqlite:".length));
});
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.stop()));
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});
afterAll(async () => {
  raw.close();
  await ledger.close();
});

async function receiver(answer?: (request: { body: string }, index: number) => Answer, port?: number): Promise<Receiver> {
  const started = await startReceiver(answer, port);
  receivers.push(started);
  return started;
}

function newJob(options: { allowPrivateUrls?: boolean; sendTimeoutMs?: number; schedule?: number[] } = {}): DeliveryJob {
  const job = new DeliveryJob(
    ledger.store,
    ledger.clock,
    {
      retryScheduleSeconds: options.schedule ?? ledger.config.webhookRetryScheduleSeconds,
      allowPrivateUrls: options.allowPrivateUrls ?? true,
      pollIntervalMs: 20,
      sendTimeoutMs: options.sendTimeoutMs,
    },
    createMetrics(),
    ledger.app.log,
  );
  jobs.push(job);
  return job;
}

/** Credit events on `contract`'s stream, fanned out in one transaction as the store does. */
function emit(contract: string, count = 1): LedgerEvent[] {
  const events = Array.from({ length: count }, () =>
    creditCreated(
      { address: contract.toLowerCase() as AddressKey, creditId: randomUUID(), pointType: "PHASE2_POINTS", amount: 10n ** 12n },
      Date.now(),
      ADMIN_ACTOR,
    ),
  );
  raw.transaction(() => fanOutDeliveries(raw, events, Date.now())).immediate();
  return events;
}

const base = (owner: OperatedContract) => `/v1/contracts/${owner.contract}/webhook-endpoints`;

async function createEndpoint(owner: OperatedContract, body: Record<string, unknown>): Promise<{ endpoint: EndpointJson; secret: string }> {
  const response = await ledger.send({ method: "POST", url: base(owner), token: owner.token, body });
  expect(response.status, response.text).toBe(200);
  return response.json as { endpoint: EndpointJson; secret: string };
}

async function deliveries(
  owner: OperatedContract,
  endpointId: string,
  query = "",
): Promise<{ deliveries: DeliveryJson[]; cursor: string | null }> {
  const response = await ledger.send({ method: "GET", url: `${base(owner)}/${endpointId}/deliveries${query}`, token: owner.token });
  expect(response.status, response.text).toBe(200);
  return response.json as { deliveries: DeliveryJson[]; cursor: string | null };
}

function headersOf(request: { headers: Record<string, string | string[] | undefined> }): Record<string, string> {
  return Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
}

describe("webhook endpoints", () => {
  it("answers that carry a secret (create, rotate-secret) say Cache-Control: no-store", async () => {
    const owner = await addContract(ledger);
    const created = await ledger.send({ method: "POST", url: base(owner), token: owner.token, body: { url: "http://127.0.0.1:9/s" } });
    expect(created.status, created.text).toBe(200);
    expect(created.headers["cache-control"]).toBe("no-store");
    const id = (created.json as { endpoint: EndpointJson }).endpoint.id;
    const rotated = await ledger.send({ method: "POST", url: `${base(owner)}/${id}/rotate-secret`, token: owner.token });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.headers["cache-control"]).toBe("no-store");
  });

  it("creates, lists, reads, updates and deletes an endpoint; the secret is whsec_ + base64 of 32 bytes", async () => {
    const owner = await addContract(ledger);
    const { endpoint, secret } = await createEndpoint(owner, { url: "http://127.0.0.1:9/a", description: "orders" });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(endpoint).toMatchObject({ url: "http://127.0.0.1:9/a", description: "orders", disabled: false, disabledReason: null });
    expect(endpoint.id).toMatch(/^we_[0-9a-f]{24}$/);
    expect(endpoint.types).toEqual([
      "batch.accepted",
      "batch.cancelled",
      "batch.finalized",
      "credit.created",
      "operator.changed",
      "api_key.created",
      "api_key.revoked",
    ]);
    expect(JSON.stringify(endpoint)).not.toContain(secret.slice(6));

    const list = await ledger.send({ method: "GET", url: base(owner), token: owner.token });
    expect((list.json as { endpoints: EndpointJson[] }).endpoints).toEqual([endpoint]);
    const patched = await ledger.send({
      method: "PATCH",
      url: `${base(owner)}/${endpoint.id}`,
      token: owner.token,
      body: { types: ["batch.finalized"], description: null, disabled: true },
    });
    expect(patched.status, patched.text).toBe(200);
    expect((patched.json as { endpoint: EndpointJson }).endpoint).toMatchObject({
      types: ["batch.finalized"],
      description: null,
      disabled: true,
    });
    expect((patched.json as { endpoint: EndpointJson }).endpoint.disabledReason).toMatch(/disabled by the operator/);
    const enabled = await ledger.send({
      method: "PATCH",
      url: `${base(owner)}/${endpoint.id}`,
      token: owner.token,
      body: { disabled: false, types: null },
    });
    expect((enabled.json as { endpoint: EndpointJson }).endpoint).toMatchObject({
      disabled: false,
      disabledReason: null,
      types: endpoint.types,
    });

    expect((await ledger.send({ method: "DELETE", url: `${base(owner)}/${endpoint.id}`, token: owner.token })).status).toBe(200);
    expectError(await ledger.send({ method: "GET", url: `${base(owner)}/${endpoint.id}`, token: owner.token }), 404, "NOT_FOUND");
    expectError(await ledger.send({ method: "DELETE", url: `${base(owner)}/${endpoint.id}`, token: owner.token }), 404, "NOT_FOUND");
  });

  it("answers 404 for another contract's endpoint and 400 for malformed ids, extra fields and bad types", async () => {
    const owner = await addContract(ledger);
    const other = await addContract(ledger);
    const { endpoint } = await createEndpoint(owner, { url: "http://127.0.0.1:9/b" });
    expectError(await ledger.send({ method: "GET", url: `${base(other)}/${endpoint.id}`, token: other.token }), 404, "NOT_FOUND");
    expectError(
      await ledger.send({ method: "POST", url: `${base(other)}/${endpoint.id}/rotate-secret`, token: other.token }),
      404,
      "NOT_FOUND",
    );
    expectError(await ledger.send({ method: "GET", url: `${base(owner)}/we_nothex`, token: owner.token }), 400, "VALIDATION_FAILED");
    const extra = expectError(
      await ledger.send({ method: "POST", url: base(owner), token: owner.token, body: { url: "http://127.0.0.1:9/", secret: "x" } }),
      400,
      "VALIDATION_FAILED",
    );
    expect(extra.details).toEqual([{ path: "secret", message: "is not an allowed field" }]);
    const types = expectError(
      await ledger.send({
        method: "POST",
        url: base(owner),
        token: owner.token,
        body: { url: "http://127.0.0.1:9/", types: ["webhook.test"] },
      }),
      400,
      "VALIDATION_FAILED",
    );
    expect(JSON.stringify(types.details)).toContain("types[0]");
    const unknownDelivery = `${base(owner)}/${endpoint.id}/deliveries/wd_${"0".repeat(32)}/retry`;
    expectError(await ledger.send({ method: "POST", url: unknownDelivery, token: owner.token }), 404, "NOT_FOUND");
  });

  it("refuses the 11th endpoint of a contract with 400", async () => {
    const owner = await addContract(ledger);
    for (let i = 0; i < 10; i++) await createEndpoint(owner, { url: `http://127.0.0.1:9/${i}` });
    const refused = expectError(
      await ledger.send({ method: "POST", url: base(owner), token: owner.token, body: { url: "http://127.0.0.1:9/x" } }),
      400,
      "VALIDATION_FAILED",
    );
    expect(JSON.stringify(refused.details)).toContain("at most 10");
  });
});

describe("webhook target checks (SSRF) without WEBHOOK_ALLOW_PRIVATE_URLS", () => {
  let strict: TestLedger;
  beforeAll(async () => {
    strict = await setupContract();
  });
  afterAll(async () => strict.close());

  it.each([
    "http://127.0.0.1/hook",
    "http://10.1.2.3/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]:8080/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fd00::1]/hook",
    "http://100.64.0.1/hook",
    "http://2130706433/hook",
    "http://localhost:8080/hook",
    "ftp://example.com/hook",
  ])("refuses %s at creation with 400 naming url", async (url) => {
    const response = await strict.send({
      method: "POST",
      url: `/v1/contracts/${strict.contract}/webhook-endpoints`,
      token: strict.token,
      body: { url },
    });
    const error = expectError(response, 400, "VALIDATION_FAILED");
    expect((error.details as { path: string }[])[0]!.path).toBe("url");
  });

  it("accepts a public address, and refuses a private one in PATCH", async () => {
    const url = `/v1/contracts/${strict.contract}/webhook-endpoints`;
    const created = await strict.send({ method: "POST", url, token: strict.token, body: { url: "https://93.184.215.14/hook" } });
    expect(created.status, created.text).toBe(200);
    const id = (created.json as { endpoint: EndpointJson }).endpoint.id;
    expectError(
      await strict.send({ method: "PATCH", url: `${url}/${id}`, token: strict.token, body: { url: "http://192.168.1.1/" } }),
      400,
      "VALIDATION_FAILED",
    );
  });

  it("refuses a private target again at delivery: no request reaches it, the attempt says why", async () => {
    const owner = await addContract(ledger);
    const target = await receiver();
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    await newJob({ allowPrivateUrls: false }).runOnce();
    expect(target.received).toHaveLength(0);
    const [delivery] = (await deliveries(owner, endpoint.id)).deliveries;
    expect(delivery!.attempts[0]).toMatchObject({ statusCode: null });
    expect(delivery!.attempts[0]!.error).toMatch(/target refused: 127\.0\.0\.1/);
  });
});

describe("webhook delivery", () => {
  it("POSTs the Event JSON with Standard Webhooks headers that verify with the standardwebhooks package", async () => {
    const owner = await addContract(ledger);
    const target = await receiver();
    const { endpoint, secret } = await createEndpoint(owner, { url: target.url, types: ["credit.created"] });
    const events = emit(owner.contract, 2);
    expect(await newJob().runOnce()).toBe(2);
    expect(target.received).toHaveLength(2);
    const verifier = new Webhook(secret);
    for (const request of target.received) {
      const headers = headersOf(request);
      expect(verifier.verify(request.body, headers)).toEqual(JSON.parse(request.body));
      expect(headers["content-type"]).toBe("application/json");
      expect(Number(headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -2);
      const event = events.find((e) => e.id === headers["webhook-id"]);
      expect(JSON.parse(request.body)).toEqual(eventJson(event!));
    }
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(target.received[0]!.body, headersOf(target.received[0]!)),
    ).toThrow();
    const page = await deliveries(owner, endpoint.id);
    expect(page.deliveries.map((d) => d.status)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect(page.deliveries[0]!.attempts).toEqual([expect.objectContaining({ statusCode: 200, error: null })]);
    expect(page.deliveries[0]!.nextAttemptAt).toBeNull();
  });

  it("signs with the old and the new secret during a rotation; each verifies alone", async () => {
    const owner = await addContract(ledger);
    const target = await receiver();
    const { endpoint, secret: oldSecret } = await createEndpoint(owner, { url: target.url });
    const rotated = await ledger.send({ method: "POST", url: `${base(owner)}/${endpoint.id}/rotate-secret`, token: owner.token });
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = (rotated.json as { secret: string }).secret;
    expect(newSecret).not.toBe(oldSecret);
    emit(owner.contract);
    await newJob().runOnce();
    const headers = headersOf(target.received[0]!);
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(oldSecret).verify(target.received[0]!.body, headers)).toBeTruthy();
    expect(new Webhook(newSecret).verify(target.received[0]!.body, headers)).toBeTruthy();
  });

  it("retries a receiver that answers 500 twice then 200: exactly three attempts on the configured schedule (1,1,2)", async () => {
    const owner = await addContract(ledger);
    const target = await receiver((_request, index) => ({ status: index < 2 ? 500 : 200 }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    const job = newJob();
    job.start();
    await target.waitFor(3);
    await job.stop(); // waits for the third send's outcome to be stored
    const settled = (await deliveries(owner, endpoint.id)).deliveries[0]!;
    expect(settled.status).toBe("SUCCEEDED");
    expect(settled.attempts.map((a) => a.statusCode)).toEqual([500, 500, 200]);
    for (let i = 1; i < 3; i++) {
      const gapMs = Date.parse(settled.attempts[i]!.at) - Date.parse(settled.attempts[i - 1]!.at) - settled.attempts[i - 1]!.durationMs;
      expect(gapMs).toBeGreaterThanOrEqual(800); // 1 s − 20 % jitter
    }
    expect(new Set(target.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(target.received).toHaveLength(3);
  });

  it("marks a delivery FAILED after the last try of the schedule", async () => {
    const owner = await addContract(ledger);
    const target = await receiver(() => ({ status: 503 }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    const job = newJob({ schedule: [0, 0] });
    await job.runOnce();
    const failed = (await deliveries(owner, endpoint.id)).deliveries[0]!;
    expect(failed).toMatchObject({ status: "FAILED", nextAttemptAt: null });
    expect(failed.attempts.map((a) => a.statusCode)).toEqual([503, 503, 503]);
  });

  it("honours Retry-After: the next attempt waits at least that long", async () => {
    const owner = await addContract(ledger);
    const target = await receiver(() => ({ status: 429, headers: { "retry-after": "30" } }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    await newJob().runOnce();
    const pending = (await deliveries(owner, endpoint.id)).deliveries[0]!;
    const attempt = pending.attempts[0]!;
    expect(Date.parse(pending.nextAttemptAt!) - Date.parse(attempt.at) - attempt.durationMs).toBeGreaterThanOrEqual(30_000);
  });

  it("disables the endpoint at once on 410; later events make no deliveries", async () => {
    const owner = await addContract(ledger);
    const target = await receiver(() => ({ status: 410 }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract, 3);
    await newJob().runOnce();
    const read = await ledger.send({ method: "GET", url: `${base(owner)}/${endpoint.id}`, token: owner.token });
    const disabled = (read.json as { endpoint: EndpointJson }).endpoint;
    expect(disabled.disabled).toBe(true);
    expect(disabled.disabledReason).toMatch(/410/);
    const listed = (await deliveries(owner, endpoint.id)).deliveries;
    expect(listed.every((d) => d.status === "FAILED")).toBe(true);
    // The first 410 disabled it: at most the sends already in flight reached the receiver.
    expect(target.received.length).toBeGreaterThanOrEqual(1);
    emit(owner.contract);
    expect((await deliveries(owner, endpoint.id)).deliveries).toHaveLength(3);
  });

  it("does not follow a redirect: a 3xx is a failed attempt and the Location is never requested", async () => {
    const owner = await addContract(ledger);
    const elsewhere = await receiver();
    const target = await receiver(() => ({ status: 307, headers: { location: elsewhere.url } }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    await newJob().runOnce();
    expect(elsewhere.received).toHaveLength(0);
    const pending = (await deliveries(owner, endpoint.id)).deliveries[0]!;
    expect(pending.status).toBe("PENDING");
    expect(pending.attempts[0]).toMatchObject({ statusCode: 307 });
    expect(pending.attempts[0]!.error).toMatch(/redirect .* not followed/);
  });

  it("sends a webhook.test event to that endpoint only", async () => {
    const owner = await addContract(ledger);
    const target = await receiver();
    const bystander = await receiver();
    const { endpoint, secret } = await createEndpoint(owner, { url: target.url });
    await createEndpoint(owner, { url: bystander.url });
    const response = await ledger.send({ method: "POST", url: `${base(owner)}/${endpoint.id}/test`, token: owner.token });
    expect(response.status, response.text).toBe(200);
    const { deliveryId } = response.json as { deliveryId: string };
    expect(deliveryId).toMatch(/^wd_[0-9a-f]{32}$/);
    await newJob().runOnce();
    expect(bystander.received).toHaveLength(0);
    const body = new Webhook(secret).verify(target.received[0]!.body, headersOf(target.received[0]!)) as { type: string; data: unknown };
    expect(body.type).toBe("webhook.test");
    expect(body.data).toEqual({ endpointId: endpoint.id });
    expect((await deliveries(owner, endpoint.id)).deliveries[0]).toMatchObject({
      id: deliveryId,
      eventType: "webhook.test",
      status: "SUCCEEDED",
    });
  });

  it("keeps one hanging endpoint from holding up another", async () => {
    const slowOwner = await addContract(ledger);
    const fastOwner = await addContract(ledger);
    const hanging = await receiver(() => ({ status: 200, hang: true }));
    const fast = await receiver();
    await createEndpoint(slowOwner, { url: hanging.url });
    await createEndpoint(fastOwner, { url: fast.url });
    emit(slowOwner.contract, 20);
    newJob({ sendTimeoutMs: 60_000 }).start();
    await hanging.waitFor(4);
    emit(fastOwner.contract, 5);
    await fast.waitFor(5);
    // The slow endpoint holds at most its own share of the job's slots, all still unanswered.
    expect(hanging.received.length).toBeLessThanOrEqual(4);
  });
});

describe("deliveries: listing, retry and recover", () => {
  it("pages newest first with a cursor and filters by status", async () => {
    const owner = await addContract(ledger);
    const target = await receiver((_request, index) => ({ status: index % 2 === 0 ? 200 : 400 }));
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    for (let i = 0; i < 5; i++) emit(owner.contract);
    await newJob({ schedule: [] }).runOnce();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { deliveries: DeliveryJson[]; cursor: string | null } = await deliveries(
        owner,
        endpoint.id,
        `?limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.deliveries.length).toBeLessThanOrEqual(2);
      seen.push(...page.deliveries.map((d) => d.id));
      cursor = page.cursor;
    } while (cursor !== null);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    const failed = await deliveries(owner, endpoint.id, "?status=FAILED");
    const succeeded = await deliveries(owner, endpoint.id, "?status=SUCCEEDED");
    expect(failed.deliveries.length + succeeded.deliveries.length).toBe(5);
    expect(failed.deliveries.every((d) => d.status === "FAILED")).toBe(true);
    expect(failed.deliveries.length).toBe(2);
    expectError(
      await ledger.send({ method: "GET", url: `${base(owner)}/${endpoint.id}/deliveries?status=LOST`, token: owner.token }),
      400,
      "VALIDATION_FAILED",
    );
    expectError(
      await ledger.send({ method: "GET", url: `${base(owner)}/${endpoint.id}/deliveries?cursor=abc`, token: owner.token }),
      400,
      "VALIDATION_FAILED",
    );
  });

  it("retry sends a delivery again now, with the same webhook-id", async () => {
    const owner = await addContract(ledger);
    const target = await receiver();
    const { endpoint } = await createEndpoint(owner, { url: target.url });
    emit(owner.contract);
    const job = newJob();
    await job.runOnce();
    const [delivery] = (await deliveries(owner, endpoint.id)).deliveries;
    const retried = await ledger.send({
      method: "POST",
      url: `${base(owner)}/${endpoint.id}/deliveries/${delivery!.id}/retry`,
      token: owner.token,
    });
    expect(retried.status, retried.text).toBe(200);
    expect((retried.json as { delivery: DeliveryJson }).delivery).toMatchObject({ id: delivery!.id, status: "PENDING" });
    await job.runOnce();
    expect(target.received.map((r) => r.headers["webhook-id"])).toEqual([delivery!.eventId, delivery!.eventId]);
    expect((await deliveries(owner, endpoint.id)).deliveries[0]!.attempts).toHaveLength(2);
  });

  it("recover after an outage: deliveries FAILED while the receiver was down are all received once it is back", async () => {
    const owner = await addContract(ledger);
    const probe = await receiver();
    const port = probe.port;
    await probe.close();
    receivers.splice(receivers.indexOf(probe), 1);
    const { endpoint } = await createEndpoint(owner, { url: `http://127.0.0.1:${port}/hook` });
    const sinceIso = new Date(Date.now() - 1000).toISOString();
    const events = emit(owner.contract, 6);
    const job = newJob({ schedule: [0] });
    await job.runOnce();
    const failed = (await deliveries(owner, endpoint.id, "?status=FAILED")).deliveries;
    expect(failed).toHaveLength(6);
    expect(failed[0]!.attempts).toHaveLength(2);
    expect(failed[0]!.attempts[0]).toMatchObject({ statusCode: null });
    expect(failed[0]!.attempts[0]!.error).toMatch(/ECONNREFUSED/);

    const back = await receiver(undefined, port);
    const recovered = await ledger.send({
      method: "POST",
      url: `${base(owner)}/${endpoint.id}/recover`,
      token: owner.token,
      body: { since: sinceIso },
    });
    expect(recovered.status, recovered.text).toBe(200);
    expect(recovered.json).toEqual({ success: true, requeued: 6 });
    await job.runOnce();
    expect(new Set(back.received.map((r) => r.headers["webhook-id"]))).toEqual(new Set(events.map((e) => e.id)));
    expect((await deliveries(owner, endpoint.id, "?status=SUCCEEDED")).deliveries).toHaveLength(6);
    const again = await ledger.send({
      method: "POST",
      url: `${base(owner)}/${endpoint.id}/recover`,
      token: owner.token,
      body: { since: sinceIso },
    });
    expect(again.json).toEqual({ success: true, requeued: 0 });
    expectError(
      await ledger.send({ method: "POST", url: `${base(owner)}/${endpoint.id}/recover`, token: owner.token, body: { since: "yesterday" } }),
      400,
      "VALIDATION_FAILED",
    );
  });
});
