import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { loadConfig } from "../src/config.js";
import { createMetrics } from "../src/metrics.js";
import { createWorker } from "../src/worker/index.js";
import { PointsClient } from "../src/client/index.js";
import { createTestApp, listen, randomAddress, registerOperator, type TestApp } from "./helpers/http.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * WEBHOOK_CLAIM_LEASE_MS: read and checked once, handed by the worker to the deliver job, and an
 * attempt's timeout is cut to half the lease, so a sender always gives up before its claim can
 * pass to another (the crash and multi-instance tests run with a 3 s lease).
 */

describe("WEBHOOK_CLAIM_LEASE_MS", () => {
  it("defaults to 30 s and refuses values outside 1 s–10 min, naming the variable", () => {
    expect(loadConfig({}).webhookClaimLeaseMs).toBe(30_000);
    expect(loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "2000" }).webhookClaimLeaseMs).toBe(2000);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "999" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "600001" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "3s" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
  });

  describe("in the worker's deliver job", () => {
    let testApp: TestApp;
    let receiver: Receiver;
    beforeAll(async () => {
      testApp = await createTestApp({
        env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE_SECONDS: "60", WEBHOOK_CLAIM_LEASE_MS: "2000" },
      });
      receiver = await startReceiver(() => ({ status: 200, hang: true }));
    });
    afterAll(async () => {
      await receiver.close();
      await testApp.close();
    });

    it("gives up on a receiver that never answers after half the lease (1 s), not after 15 s", async () => {
      const operatorKey = generatePrivateKey();
      const contract = randomAddress();
      await registerOperator(testApp.send, testApp.adminToken, contract, privateKeyToAccount(operatorKey).address);
      const client = new PointsClient({ baseUrl: await listen(testApp.app), contractAddress: contract, operator: operatorKey });
      const { endpoint } = await client.createWebhookEndpoint({ url: receiver.url });
      await client.testWebhookEndpoint(endpoint.id);
      const worker = createWorker(testApp.store, testApp.config, testApp.clock, createMetrics(), testApp.app.log);
      expect(await worker.deliver.runOnce()).toBe(1);
      const [delivery] = (await client.listWebhookDeliveries(endpoint.id)).deliveries;
      expect(delivery!.attempts).toHaveLength(1);
      expect(delivery!.attempts[0]).toMatchObject({ statusCode: null, error: "no answer within 1 s" });
    });
  });
});
