import { rmSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { startHoldingReceiver } from "./helpers/holding-receiver.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import {
  assertBuilt,
  callOk,
  newAdminToken,
  pollUntil,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";
import { hookedContract } from "./helpers/webhook-load.js";

/**
 * Issue 19 item 15: a server process SIGKILLed while a delivery is in flight is restarted on the
 * same database with the default lease (no WEBHOOK_CLAIM_LEASE_MS), and the delivery it was
 * sending must arrive again within 5 s of the restart (29 s with the former 30 s lease). The
 * receiver holds every request far longer than the test, so the attempt is surely in flight.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

/** Longer than the whole wait: the first attempt is still unanswered when its sender dies. */
const HOLD_MS = 60_000;
const IN_FLIGHT_DEADLINE_MS = 20_000;
/** The bound of the issue. */
const RECOVERED_WITHIN_MS = 5000;
/** How long the test waits before it calls the delivery lost (past the bound, to measure a failure). */
const WAIT_MS = 40_000;

async function killAndMeasure(databaseUrl: string, label: string): Promise<number> {
  const receiver = await startHoldingReceiver(HOLD_MS);
  const adminToken = newAdminToken();
  const env: Env = { DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken, WEBHOOK_ALLOW_PRIVATE_URLS: "true" };
  let server: ServerProcess | null = await startServerProcess(env);
  try {
    const hooked = await hookedContract(server.url, adminToken, receiver.url);
    await callOk(server.url, "POST", `/v1/contracts/${hooked.contract}/webhook-endpoints/${hooked.endpointId}/test`, hooked.token);
    const held = await pollUntil("a delivery in flight", IN_FLIGHT_DEADLINE_MS, async () => receiver.inFlight()[0]);
    expect((await server.kill("SIGKILL")).signal).toBe("SIGKILL");
    const killedAtMs = Date.now();
    server = await startServerProcess(env);
    const restartedAtMs = Date.now();
    const again = await pollUntil("the cut-off delivery sent again", WAIT_MS, async () =>
      receiver.requests.find((request) => request.webhookId === held.webhookId && request.attempt === 2),
    );
    const afterRestartMs = again.arrivedMs - restartedAtMs;
    console.log(
      `webhook recovery (${label}): sent again ${again.arrivedMs - killedAtMs} ms after the SIGKILL, ${afterRestartMs} ms after the restart`,
    );
    return afterRestartMs;
  } finally {
    await server?.kill("SIGKILL");
    await receiver.close();
  }
}

describe("webhooks: a delivery cut off by SIGKILL is sent again soon after the restart", () => {
  beforeAll(() => assertBuilt());

  it("on SQLite: within 5 s of the restart, with the default lease", async () => {
    const dir = tempDir("webhook-recovery");
    try {
      expect(await killAndMeasure(sqliteUrl(dir), "SQLite")).toBeLessThan(RECOVERED_WITHIN_MS);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it.skipIf(!DATABASE_URL_TEST)(
    "on PostgreSQL: within 5 s of the restart, with the default lease",
    async () => {
      const schema = await createTestSchema(DATABASE_URL_TEST!);
      try {
        expect(await killAndMeasure(schema.connectionString, "PostgreSQL")).toBeLessThan(RECOVERED_WITHIN_MS);
      } finally {
        await schema.drop();
      }
    },
    90_000,
  );
});
