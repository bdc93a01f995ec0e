import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localTcpPorts, startHoldingReceiver, type HoldingReceiver, type HeldRequest } from "./helpers/holding-receiver.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  listAllBatches,
  newAdminToken,
  pollUntil,
  startServerProcess,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";
import {
  cancelBatch,
  everyBatchSettled,
  hookedContract,
  readEvents,
  submitBatch,
  unfinishedDeliveries,
  type HookedContract,
} from "./helpers/webhook-load.js";

/**
 * Issue 10's multi-instance delivery test: three server processes on one PostgreSQL schema, each
 * running the deliver job, and one receiver that holds every request 200 ms and records, per
 * webhook-id, how many requests were in flight when each arrived. Every event must be delivered,
 * no delivery may ever be in flight twice at once (the leased claims with SKIP LOCKED), and after
 * one instance is SIGKILLed midway the other two still deliver everything, the events made after
 * the kill included. Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const INSTANCES = 3;
const HOLD_MS = 200;
const LEASE_MS = 3000;
/** Batches submitted before the kill and after it; every third is cancelled. */
const BATCHES_PER_PHASE = 24;
const CANCEL_EVERY = 3;
const KILL_DEADLINE_MS = 20_000;
const DELIVERED_DEADLINE_MS = 40_000;

describe.skipIf(!DATABASE_URL_TEST)("webhooks: three PostgreSQL instances share the deliveries", () => {
  let schema: TestSchema;
  let receiver: HoldingReceiver;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    receiver = await startHoldingReceiver(HOLD_MS);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill("SIGKILL")));
    await receiver?.close();
    await schema?.drop();
  });

  /** The requests among `requests` that `server`'s process sent (by the sockets it holds). */
  function sentBy(server: ServerProcess, requests: HeldRequest[]): HeldRequest[] {
    const ports = localTcpPorts(server.pid);
    return requests.filter((request) => ports.has(request.remotePort));
  }

  /**
   * One phase of load, spread round-robin over `targets`: submits, and cancels of every third. A
   * lane whose server is killed stops at its first failed request; the others go on to the end.
   */
  async function load(targets: ServerProcess[], hooked: HookedContract, phase: string): Promise<void> {
    const lanes = await Promise.allSettled(
      targets.map(async (server, lane) => {
        for (let i = lane; i < BATCHES_PER_PHASE; i += targets.length) {
          await submitBatch(server.url, hooked, `${phase}-${i}`);
          if (i % CANCEL_EVERY === 0) await cancelBatch(server.url, hooked, `${phase}-${i}`);
        }
      }),
    );
    const failed = lanes.filter((lane) => lane.status === "rejected");
    expect(failed.length, "only the killed instance's lane may fail").toBeLessThanOrEqual(1);
  }

  it("delivers every event, never sends one delivery twice at once, and survives a SIGKILLed instance", async () => {
    const adminToken = newAdminToken();
    const env: Env = {
      DATABASE_URL: schema.connectionString,
      ADMIN_TOKEN: adminToken,
      PG_POOL_SIZE: "4",
      MINIMUM_FINALIZE_SECONDS: "1",
      FINALIZER_INTERVAL_MS: "100",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,2",
      WEBHOOK_CLAIM_LEASE_MS: String(LEASE_MS),
    };
    // One after the other: the first migrates the schema.
    for (let i = 0; i < INSTANCES; i++) servers.push(await startServerProcess(env));
    const hooked = await hookedContract(servers[0]!.url, adminToken, receiver.url);

    const loading = load(servers, hooked, "before");
    // The kill must cut off deliveries the victim itself is sending: the receiver holds them. The
    // victim is an instance seen sending: the per-endpoint cap on sends in flight (counted across
    // instances) lets whichever instance claims first keep the endpoint's slots, so which one
    // sends is not known in advance.
    const { victim, cutOff } = await pollUntil("a delivery in flight from an instance", KILL_DEADLINE_MS, async () => {
      const inFlight = receiver.inFlight();
      for (const server of servers) {
        const held = sentBy(server, inFlight);
        if (held.length > 0) return { victim: server, cutOff: held.map((request) => request.webhookId) };
      }
      return undefined;
    });
    expect((await victim.kill("SIGKILL")).signal).toBe("SIGKILL");
    await loading;
    const receivedAtKill = receiver.requests.length;
    const survivors = servers.filter((server) => server !== victim);
    await load(survivors, hooked, "after");

    const reader = survivors[0]!;
    await pollUntil("every batch FINALIZED or CANCELLED", DELIVERED_DEADLINE_MS, async () =>
      (await everyBatchSettled(reader.url, hooked)) ? true : undefined,
    );
    // The credit, then each stored batch accepted and then either cancelled or finalized.
    const stored = await listAllBatches(reader.url, hooked.token, hooked.contract);
    expect(stored.length).toBeGreaterThan(BATCHES_PER_PHASE);
    // Readers see an event once no older transaction on the database is running (events.ts), and
    // other test files' transactions on the same database can hold that back for a while: wait,
    // bounded, for the whole log rather than read it once.
    const log = await pollUntil("every event visible in the log", DELIVERED_DEADLINE_MS, async () => {
      const read = await readEvents(reader.url, hooked, hooked.startCursor);
      return read.ids.length >= 1 + 2 * stored.length ? read : undefined;
    });
    expect(log.ids).toHaveLength(1 + 2 * stored.length);
    const overlapping = () => receiver.requests.filter((request) => request.concurrentSameId > 0);
    // An overlap ends the wait at once: it is the failure this test is for.
    await pollUntil("the receiver to have every logged event", DELIVERED_DEADLINE_MS, async () =>
      overlapping().length > 0 || log.ids.every((id) => receiver.receivedIds().has(id)) ? true : undefined,
    );
    expect(overlapping(), "requests that arrived while another of the same webhook-id was in flight").toEqual([]);
    await pollUntil("every delivery SUCCEEDED", DELIVERED_DEADLINE_MS, async () =>
      (await unfinishedDeliveries(reader.url, hooked)).length === 0 ? true : undefined,
    );
    expect([...receiver.receivedIds()].sort()).toEqual([...log.ids].sort());
    // What the victim was sending when it died is sent again by another instance, after the lease.
    for (const id of cutOff) {
      expect(receiver.requests.filter((request) => request.webhookId === id).length, id).toBeGreaterThanOrEqual(2);
    }
    const repeated = receiver.requests.filter((request) => request.attempt > 1);
    expect(repeated.length).toBeLessThanOrEqual(receivedAtKill);
    console.log(
      `webhooks on ${INSTANCES} PostgreSQL instances: ${log.ids.length} events, ${receiver.requests.length} requests ` +
        `(${repeated.length} repeats), ${receivedAtKill} before the kill, ${cutOff.length} cut off`,
    );
  }, 90_000);
});
