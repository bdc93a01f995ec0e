import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { loadConfig } from "../src/config.js";
import { createMetrics } from "../src/metrics.js";
import { DeliveryJob } from "../src/outbox/delivery-job.js";
import { PointsClient } from "../src/client/index.js";
import { startHoldingReceiver, type HoldingReceiver } from "./helpers/holding-receiver.js";
import { createTestApp, listen, randomAddress, registerOperator, type TestApp } from "./helpers/http.js";

/**
 * WEBHOOK_CLAIM_LEASE_MS: read and checked once, handed by the worker to the deliver job. The
 * lease is short (a killed sender's deliveries come back within one lease) and renewed while an
 * attempt runs, so an attempt may outlast it many times without another job taking the delivery.
 */

describe("WEBHOOK_CLAIM_LEASE_MS", () => {
  it("defaults to 4 s and refuses values outside 1 s–10 min, naming the variable", () => {
    expect(loadConfig({}).webhookClaimLeaseMs).toBe(4000);
    expect(loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "2000" }).webhookClaimLeaseMs).toBe(2000);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "999" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "600001" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
    expect(() => loadConfig({ WEBHOOK_CLAIM_LEASE_MS: "3s" })).toThrow(/WEBHOOK_CLAIM_LEASE_MS/);
  });

  describe("in the deliver job", () => {
    const LEASE_MS = 1000;
    const HOLD_MS = 3000;
    let testApp: TestApp;
    let receiver: HoldingReceiver;
    beforeAll(async () => {
      testApp = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE_SECONDS: "60" } });
      receiver = await startHoldingReceiver(HOLD_MS);
    });
    afterAll(async () => {
      await receiver.close();
      await testApp.close();
    });

    const newJob = () =>
      new DeliveryJob(
        testApp.store,
        testApp.clock,
        { retryScheduleSeconds: [60], allowPrivateUrls: true, pollIntervalMs: 20, leaseMs: LEASE_MS },
        createMetrics(),
        testApp.app.log,
      );

    it("renews the lease while an attempt runs: a 3 s answer under a 1 s lease succeeds, and a second job never takes the delivery", async () => {
      const operatorKey = generatePrivateKey();
      const contract = randomAddress();
      await registerOperator(testApp.send, testApp.adminToken, contract, privateKeyToAccount(operatorKey).address);
      const client = new PointsClient({ baseUrl: await listen(testApp.app), contractAddress: contract, operator: operatorKey });
      const { endpoint } = await client.createWebhookEndpoint({ url: receiver.url });
      await client.testWebhookEndpoint(endpoint.id);
      const other = newJob();
      const sending = newJob().runOnce();
      // The other job polls every 20 ms throughout the attempt, as another instance would.
      other.start();
      expect(await sending).toBe(1);
      await other.stop();
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0]!.answered).toBe(true);
      const [delivery] = (await client.listWebhookDeliveries(endpoint.id)).deliveries;
      expect(delivery!.status).toBe("SUCCEEDED");
      expect(delivery!.attempts).toHaveLength(1);
      expect(delivery!.attempts[0]).toMatchObject({ statusCode: 200, error: null });
      expect(delivery!.attempts[0]!.durationMs).toBeGreaterThanOrEqual(HOLD_MS - 50);
    });
  });
});
