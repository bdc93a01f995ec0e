import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsApiError, PointsClient, type WebhookDelivery } from "../src/client/index.js";
import { createMetrics } from "../src/metrics.js";
import { DeliveryJob } from "../src/outbox/delivery-job.js";
import { createTestApp, listen, randomAddress, registerOperator, type TestApp } from "./helpers/http.js";
import { assertBuilt, runCli } from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * The client's webhook methods and `points-ledger webhooks …` against the real app on a socket,
 * with the real delivery job and a real receiver. A retry schedule of one immediate retry makes a
 * failing receiver's delivery FAILED within one run of the job.
 */

let testApp: TestApp;
let baseUrl: string;
let receiver: Receiver;
/** The receiver answers this status; tests switch it. */
let answerStatus = 200;
const operatorKey = generatePrivateKey();
const contract = randomAddress();
let client: PointsClient;

beforeAll(async () => {
  testApp = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE_SECONDS: "0" } });
  baseUrl = await listen(testApp.app);
  await registerOperator(testApp.send, testApp.adminToken, contract, privateKeyToAccount(operatorKey).address);
  client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey });
  receiver = await startReceiver(() => ({ status: answerStatus }));
});
afterAll(async () => {
  await receiver?.close();
  await testApp?.close();
});

async function deliverDue(): Promise<number> {
  const job = new DeliveryJob(
    testApp.store,
    testApp.clock,
    { retryScheduleSeconds: testApp.config.webhookRetryScheduleSeconds, allowPrivateUrls: true, pollIntervalMs: 20 },
    createMetrics(),
    testApp.app.log,
  );
  return job.runOnce();
}

async function collect(deliveries: AsyncIterable<WebhookDelivery>): Promise<WebhookDelivery[]> {
  const all: WebhookDelivery[] = [];
  for await (const delivery of deliveries) all.push(delivery);
  return all;
}

describe("client webhook methods", () => {
  it("creates, lists, reads, updates, rotates and deletes an endpoint; errors come from the catalogue", async () => {
    const { endpoint, secret } = await client.createWebhookEndpoint({
      url: receiver.url,
      types: ["batch.finalized"],
      description: "payouts",
    });
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({ url: receiver.url, types: ["batch.finalized"], description: "payouts", disabled: false });
    expect(await client.listWebhookEndpoints()).toEqual([endpoint]);
    expect(await client.getWebhookEndpoint(endpoint.id)).toEqual(endpoint);

    const updated = await client.updateWebhookEndpoint(endpoint.id, { types: null, description: null, disabled: true });
    expect(updated).toMatchObject({ description: null, disabled: true });
    expect(updated.types).toContain("credit.created");
    expect(updated.disabledReason).toMatch(/disabled by the operator/);
    const refused = await client.testWebhookEndpoint(endpoint.id).catch((error: unknown) => error);
    expect(PointsApiError.is(refused, "VALIDATION_FAILED")).toBe(true);

    const rotated = await client.rotateWebhookSecret(endpoint.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(secret);

    await client.deleteWebhookEndpoint(endpoint.id);
    const gone = await client.getWebhookEndpoint(endpoint.id).catch((error: unknown) => error);
    expect(PointsApiError.is(gone, "NOT_FOUND")).toBe(true);
    const badTypes = await client
      .createWebhookEndpoint({ url: receiver.url, types: ["batch.exploded" as never] })
      .catch((error: unknown) => error);
    expect(PointsApiError.is(badTypes, "VALIDATION_FAILED") && JSON.stringify(badTypes.details)).toContain("types");
  });

  it("tests an endpoint, pages through its deliveries, retries one and recovers the FAILED ones", async () => {
    const { endpoint, secret } = await client.createWebhookEndpoint({ url: receiver.url });
    const before = receiver.received.length;
    const tests = [await client.testWebhookEndpoint(endpoint.id), await client.testWebhookEndpoint(endpoint.id)];
    await deliverDue();
    const sent = receiver.received.slice(before);
    expect(sent).toHaveLength(2);
    const verifier = new Webhook(secret);
    for (const request of sent) {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      expect(verifier.verify(request.body, headers)).toMatchObject({ type: "webhook.test", data: { endpointId: endpoint.id } });
    }

    answerStatus = 500;
    const failing = await client.testWebhookEndpoint(endpoint.id);
    await deliverDue();
    answerStatus = 200;
    const all = await collect(client.webhookDeliveries(endpoint.id, { pageSize: 1 }));
    expect(all.map((delivery) => delivery.id)).toEqual([failing.deliveryId, ...tests.map((test) => test.deliveryId).reverse()]);
    const failed = await client.listWebhookDeliveries(endpoint.id, { status: "FAILED" });
    expect(failed).toMatchObject({ cursor: null, deliveries: [{ id: failing.deliveryId, status: "FAILED", nextAttemptAt: null }] });
    expect(failed.deliveries[0]!.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 500]);

    expect(await client.recoverWebhookDeliveries(endpoint.id, new Date(Date.now() - 60_000))).toBe(1);
    await deliverDue();
    expect((await client.listWebhookDeliveries(endpoint.id, { status: "FAILED" })).deliveries).toEqual([]);
    const retried = await client.retryWebhookDelivery(endpoint.id, tests[0]!.deliveryId);
    expect(retried).toMatchObject({ id: tests[0]!.deliveryId, status: "PENDING" });
    await deliverDue();
    expect((await collect(client.webhookDeliveries(endpoint.id))).every((delivery) => delivery.status === "SUCCEEDED")).toBe(true);
    await client.deleteWebhookEndpoint(endpoint.id);
  });
});

describe("points-ledger webhooks", () => {
  const env = () => ({ PATH: process.env.PATH ?? "", POINTS_LEDGER_URL: baseUrl, OPERATOR_PRIVATE_KEY: operatorKey });
  const cli = (...args: string[]) => runCli(["webhooks", ...args, "--contract", contract], env());

  it("creates, lists, tests, shows deliveries, updates, recovers and deletes through the CLI", async () => {
    assertBuilt();
    const created = await cli("create", "--url", receiver.url, "--types", "batch.accepted,batch.finalized", "--description", "cli");
    expect(created.code, created.stderr).toBe(0);
    const { endpoint, secret } = JSON.parse(created.stdout) as { endpoint: { id: string; types: string[] }; secret: string };
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint.types).toEqual(["batch.accepted", "batch.finalized"]);

    const listed = await cli("list");
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`${endpoint.id}  ${receiver.url}  enabled  batch.accepted,batch.finalized  cli`);

    const tested = await cli("test", endpoint.id);
    expect(tested.code, tested.stderr).toBe(0);
    const { deliveryId } = JSON.parse(tested.stdout) as { deliveryId: string };
    await deliverDue();
    const deliveries = await cli("deliveries", endpoint.id, "--json");
    expect(deliveries.code, deliveries.stderr).toBe(0);
    expect(JSON.parse(deliveries.stdout.trim())).toMatchObject({ id: deliveryId, eventType: "webhook.test", status: "SUCCEEDED" });
    const lines = await cli("deliveries", endpoint.id, "--status", "SUCCEEDED");
    expect(lines.stdout).toMatch(
      new RegExp(`^${deliveryId}  SUCCEEDED  webhook\\.test  evt_[0-9a-f]{32}  1 attempt\\(s\\)  last \\S+ → 200$`, "m"),
    );

    const disabled = await cli("update", endpoint.id, "--disable", "--types", "all");
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ id: endpoint.id, disabled: true });
    const recovered = await cli("recover", endpoint.id, "--since", "2026-01-01T00:00:00Z");
    expect(recovered.stderr).toMatch(/VALIDATION_FAILED \(HTTP 400\)[\s\S]*disabled/);
    expect(recovered.code).toBe(1);
    expect((await cli("update", endpoint.id, "--enable")).code).toBe(0);
    const requeued = await cli("recover", endpoint.id, "--since", "2026-01-01T00:00:00Z");
    expect(requeued.stdout.trim()).toBe("requeued 0 FAILED delivery(ies)");

    expect((await cli("delete", endpoint.id)).stdout.trim()).toBe(`endpoint ${endpoint.id} deleted`);
    const missing = await cli("show", endpoint.id);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/NOT_FOUND \(HTTP 404\)/);
  });

  it("refuses --url outside create and update, unknown actions and a missing id as usage errors (exit 2)", async () => {
    assertBuilt();
    const wrongUrl = await cli("list", "--url", "http://127.0.0.1:9/");
    expect(wrongUrl.code).toBe(2);
    expect(wrongUrl.stderr).toContain("--service-url");
    expect((await cli("explode")).code).toBe(2);
    expect((await cli("show")).code).toBe(2);
    expect((await cli("update", "we_000000000000000000000000")).stderr).toContain("at least one of");
  });
});
