import { randomUUID } from "node:crypto";
import { ADMIN_ACTOR, operatorActor } from "../src/domain/actors.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { creditCreated, webhookTest, type LedgerEvent } from "../src/domain/events.js";
import { fanOutDeliveries as pgFanOut } from "../src/store/postgres/webhooks.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { AttemptOutcome, ClaimedDelivery, DeliveryClaim, LedgerStore, NewWebhookEndpoint } from "../src/store/store.js";
import { newEndpointId } from "../src/domain/webhooks.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { postgresFanOutAt, sqliteFanOutAt } from "./helpers/fan-out.js";

/**
 * The webhooks part of the store, one suite for both adapters: fan-out, the leased fair claim,
 * attempts, 410, recover, purge. Events are fanned out by each adapter's fanOutDeliveries inside
 * a transaction of the test's own, as the transitions' transactions do.
 */

interface Fixture {
  store: LedgerStore;
  /** Fans `events` out in one committed transaction. */
  emit(events: LedgerEvent[], nowMs: number): Promise<void>;
  close(): Promise<void>;
}

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const T0_MS = 1_800_000_000_000;
const HOUR_MS = 3600_000;

function endpoint(contract: AddressKey, overrides: Partial<NewWebhookEndpoint> = {}): NewWebhookEndpoint {
  return {
    id: newEndpointId(),
    contract,
    url: "http://127.0.0.1:9/hook",
    types: null,
    description: null,
    secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}`,
    createdAtMs: T0_MS,
    ...overrides,
  };
}

function credit(address: AddressKey, atMs = T0_MS): LedgerEvent {
  return creditCreated({ address, creditId: randomUUID(), pointType: "PHASE2_POINTS", amount: 1n }, atMs, ADMIN_ACTOR);
}

function claim(nowMs: number, overrides: Partial<DeliveryClaim> = {}): DeliveryClaim {
  return { nowMs, limit: 100, perEndpointLimit: 100, perContractLimit: 100, leaseMs: 30_000, excludeEndpointIds: [], ...overrides };
}

function outcome(
  atMs: number,
  statusCode: number,
  status: AttemptOutcome["status"],
  nextAttemptAtMs: number | null,
  disable: string | null = null,
): AttemptOutcome {
  return { attempt: { atMs, statusCode, error: null, durationMs: 5 }, status, nextAttemptAtMs, disableEndpoint: disable, timedOut: false };
}

async function created(store: LedgerStore, input: NewWebhookEndpoint): Promise<string> {
  const result = await store.createWebhookEndpoint(input, 10);
  if (result.kind !== "created") throw new Error("endpoint not created");
  return result.endpoint.id;
}

function webhooksStoreSuite(name: string, open: () => Promise<Fixture | null>): void {
  describe(name, () => {
    let fixture: Fixture | null = null;
    beforeAll(async () => {
      fixture = await open();
    });
    afterAll(async () => fixture?.close());
    const test = (title: string, body: (f: Fixture) => Promise<void>) =>
      it(title, async (context) => {
        if (!fixture) return context.skip(SKIP_REASON);
        await body(fixture);
      });

    test("fans an event out to each enabled endpoint of its stream subscribed to its type, once", async ({ store, emit }) => {
      const contract = randomAddress();
      const all = await created(store, endpoint(contract));
      const finalizedOnly = await created(store, endpoint(contract, { types: ["batch.finalized"] }));
      const off = await created(store, endpoint(contract));
      await store.updateWebhookEndpoint(contract, off, { disabled: true, disabledReason: "test" }, T0_MS);
      const elsewhere = await created(store, endpoint(randomAddress()));
      const event = credit(contract);
      await emit([event, { ...credit(contract), stream: null }, webhookTest(contract, all, T0_MS, operatorActor(contract))], T0_MS);
      await emit([event], T0_MS);
      const page = await store.listDeliveries(contract, all, { limit: 10 });
      expect(page!.deliveries).toHaveLength(1);
      expect(page!.deliveries[0]).toMatchObject({
        eventId: event.id,
        eventType: "credit.created",
        status: "PENDING",
        attempts: [],
        nextAttemptAtMs: T0_MS,
      });
      for (const id of [finalizedOnly, off]) expect((await store.listDeliveries(contract, id, { limit: 10 }))!.deliveries).toEqual([]);
      expect(await store.listDeliveries(contract, elsewhere, { limit: 10 })).toBeNull();
      // Leave nothing due for the claim tests that follow on this database.
      for (const d of await store.claimDueDeliveries(claim(T0_MS)))
        await store.recordDeliveryAttempt(d, outcome(T0_MS, 200, "SUCCEEDED", null));
    });

    test("refuses an endpoint past the per-contract limit", async ({ store }) => {
      const contract = randomAddress();
      for (let i = 0; i < 3; i++) expect((await store.createWebhookEndpoint(endpoint(contract), 3)).kind).toBe("created");
      expect((await store.createWebhookEndpoint(endpoint(contract), 3)).kind).toBe("limit_reached");
    });

    test("leases a claimed delivery: no second claim until the lease ends, and a stale claim cannot record", async ({ store, emit }) => {
      const contract = randomAddress();
      const id = await created(store, endpoint(contract, { createdAtMs: T0_MS + HOUR_MS }));
      const nowMs = T0_MS + HOUR_MS;
      await emit([credit(contract, nowMs)], nowMs);
      const mine = (await store.claimDueDeliveries(claim(nowMs))).filter((d) => d.endpointId === id);
      expect(mine).toHaveLength(1);
      const again = await store.claimDueDeliveries(claim(nowMs + 29_000));
      expect(again.filter((d) => d.endpointId === id)).toEqual([]);
      const retaken = (await store.claimDueDeliveries(claim(nowMs + 30_000))).filter((d) => d.endpointId === id);
      expect(retaken).toHaveLength(1);
      expect(retaken[0]!.claimToken).not.toBe(mine[0]!.claimToken);
      expect(await store.recordDeliveryAttempt(mine[0]!, outcome(nowMs, 200, "SUCCEEDED", null))).toBe(false);
      expect(await store.recordDeliveryAttempt(retaken[0]!, outcome(nowMs + 30_000, 500, "PENDING", nowMs + 40_000))).toBe(true);
      const [delivery] = (await store.listDeliveries(contract, id, { limit: 1 }))!.deliveries;
      expect(delivery).toMatchObject({
        status: "PENDING",
        nextAttemptAtMs: nowMs + 40_000,
        attempts: [{ atMs: nowMs + 30_000, statusCode: 500, error: null, durationMs: 5 }],
      });
      expect((await store.claimDueDeliveries(claim(nowMs + 39_999))).filter((d) => d.endpointId === id)).toEqual([]);
      const next = (await store.claimDueDeliveries(claim(nowMs + 40_000))).filter((d) => d.endpointId === id);
      expect(next[0]!.tries).toBe(1);
      await store.recordDeliveryAttempt(next[0]!, outcome(nowMs + 40_000, 204, "SUCCEEDED", null));
    });

    test("deals claims out round-robin by endpoint and passes over excluded endpoints", async ({ store, emit }) => {
      const contract = randomAddress();
      const nowMs = T0_MS + 2 * HOUR_MS;
      const busy = await created(store, endpoint(contract));
      const quietContract = randomAddress();
      const quiet = await created(store, endpoint(quietContract));
      await emit(
        Array.from({ length: 5 }, () => credit(contract, nowMs)),
        nowMs,
      );
      await emit([credit(quietContract, nowMs)], nowMs + 1);
      const firstTwo = await store.claimDueDeliveries(claim(nowMs + 1, { limit: 2 }));
      expect(new Set(firstTwo.map((d) => d.endpointId))).toEqual(new Set([busy, quiet]));
      // The cap counts the sends in flight: busy already has one (leased above), so one more.
      const capped = await store.claimDueDeliveries(claim(nowMs + 1, { perEndpointLimit: 2 }));
      expect(capped.filter((d) => d.endpointId === busy)).toHaveLength(1);
      const excluded = await store.claimDueDeliveries(claim(nowMs + 1, { excludeEndpointIds: [busy] }));
      expect(excluded.filter((d) => d.endpointId === busy)).toEqual([]);
      for (const d of [...firstTwo, ...capped, ...(await store.claimDueDeliveries(claim(nowMs + 1)))]) {
        await store.recordDeliveryAttempt(d, outcome(nowMs + 1, 200, "SUCCEEDED", null));
      }
    });

    test("a 410 disables the endpoint and fails its other pending deliveries; recover needs it enabled, then queues them", async ({
      store,
      emit,
    }) => {
      const contract = randomAddress();
      const nowMs = T0_MS + 3 * HOUR_MS;
      const id = await created(store, endpoint(contract));
      await emit([credit(contract, nowMs), credit(contract, nowMs), credit(contract, nowMs)], nowMs);
      const [first] = (await store.claimDueDeliveries(claim(nowMs, { perEndpointLimit: 1 }))).filter((d) => d.endpointId === id);
      await store.recordDeliveryAttempt(first!, outcome(nowMs, 410, "FAILED", null, "the endpoint answered 410"));
      expect(await store.getWebhookEndpoint(contract, id)).toMatchObject({ disabled: true, disabledReason: "the endpoint answered 410" });
      const listed = (await store.listDeliveries(contract, id, { limit: 10 }))!.deliveries;
      expect(listed.map((d) => d.status)).toEqual(["FAILED", "FAILED", "FAILED"]);
      expect(listed.every((d) => d.nextAttemptAtMs === null)).toBe(true);
      expect((await store.claimDueDeliveries(claim(nowMs + HOUR_MS))).filter((d) => d.endpointId === id)).toEqual([]);
      expect((await store.recoverDeliveries(contract, id, nowMs, nowMs, 10)).kind).toBe("disabled");
      await store.updateWebhookEndpoint(contract, id, { disabled: false }, nowMs);
      expect((await store.getWebhookEndpoint(contract, id))!.disabledReason).toBeNull();
      expect(await store.recoverDeliveries(contract, id, nowMs + 1, nowMs, 10)).toEqual({ kind: "done", value: 0 });
      expect(await store.recoverDeliveries(contract, id, nowMs, nowMs, 2)).toEqual({ kind: "done", value: 2 });
      expect(await store.recoverDeliveries(contract, id, nowMs, nowMs, 10)).toEqual({ kind: "done", value: 1 });
      const requeued = (await store.claimDueDeliveries(claim(nowMs + 1))).filter((d) => d.endpointId === id);
      expect(requeued.map((d) => d.tries)).toEqual([0, 0, 0]);
      for (const d of requeued) await store.recordDeliveryAttempt(d, outcome(nowMs + 1, 200, "SUCCEEDED", null));
    });

    test("rotation: both secrets sign during the overlap, only the new one after it", async ({ store, emit }) => {
      const contract = randomAddress();
      const nowMs = T0_MS + 4 * HOUR_MS;
      const old = `whsec_${Buffer.alloc(32, 1).toString("base64")}`;
      const fresh = `whsec_${Buffer.alloc(32, 2).toString("base64")}`;
      const id = await created(store, endpoint(contract, { secret: old }));
      expect(await store.rotateWebhookSecret(contract, id, fresh, nowMs, HOUR_MS)).toBe(true);
      expect(await store.rotateWebhookSecret(randomAddress(), id, fresh, nowMs, HOUR_MS)).toBe(false);
      await emit([credit(contract, nowMs)], nowMs);
      const [during] = (await store.claimDueDeliveries(claim(nowMs))).filter((d) => d.endpointId === id);
      expect(during!.secrets).toEqual([fresh, old]);
      const [after] = (await store.claimDueDeliveries(claim(nowMs + HOUR_MS + 1))).filter((d) => d.endpointId === id);
      expect(after!.secrets).toEqual([fresh]);
      await store.recordDeliveryAttempt(after!, outcome(nowMs + HOUR_MS + 1, 200, "SUCCEEDED", null));
    });

    test("retry makes a finished delivery due now; purge deletes finished deliveries in bounded steps; backlog counts pending", async ({
      store,
      emit,
    }) => {
      const contract = randomAddress();
      const nowMs = T0_MS + 5 * HOUR_MS;
      const id = await created(store, endpoint(contract));
      await emit([credit(contract, nowMs), credit(contract, nowMs), credit(contract, nowMs)], nowMs);
      const before = await store.webhookBacklog();
      expect(before.pending).toBeGreaterThanOrEqual(3);
      for (const d of (await store.claimDueDeliveries(claim(nowMs))).filter((c) => c.endpointId === id)) {
        await store.recordDeliveryAttempt(d, outcome(nowMs, 200, "SUCCEEDED", null));
      }
      expect((await store.webhookBacklog()).pending).toBe(before.pending - 3);
      const [one] = (await store.listDeliveries(contract, id, { limit: 1 }))!.deliveries;
      const retried = await store.retryDelivery(contract, id, one!.id, nowMs + 10);
      expect(retried).toMatchObject({ kind: "done", value: { status: "PENDING", nextAttemptAtMs: nowMs + 10 } });
      expect((await store.retryDelivery(randomAddress(), id, one!.id, nowMs)).kind).toBe("not_found");
      expect(await store.purgeDeliveries(nowMs + 1000, 1)).toBe(1);
      expect(await store.purgeDeliveries(nowMs + 1000, 100)).toBeGreaterThanOrEqual(1);
      const left = (await store.listDeliveries(contract, id, { limit: 10 }))!.deliveries;
      expect(left.map((d) => d.id)).toEqual([one!.id]);
      const pendingBefore = (await store.webhookBacklog()).pending;
      expect(await store.deleteWebhookEndpoint(contract, id)).toBe(true);
      // Its deliveries went with it: the retried one no longer waits.
      expect((await store.webhookBacklog()).pending).toBe(pendingBefore - 1);
      expect(await store.getDelivery(contract, id, one!.id)).toBeNull();
    });

    test("an endpoint whose attempts time out is backed off (1 s, 2 s, …) and sent one delivery at a time until it answers", async ({
      store,
      emit,
    }) => {
      const contract = randomAddress();
      const nowMs = T0_MS + 6 * HOUR_MS;
      const id = await created(store, endpoint(contract));
      await emit(
        Array.from({ length: 5 }, () => credit(contract, nowMs)),
        nowMs,
      );
      const mine = async (atMs: number) =>
        (await store.claimDueDeliveries(claim(atMs, { perEndpointLimit: 4 }))).filter((d) => d.endpointId === id);
      const timedOut = (atMs: number): AttemptOutcome => ({
        attempt: { atMs, statusCode: null, error: "no answer within 15 s", durationMs: 15_000 },
        status: "PENDING",
        nextAttemptAtMs: atMs + 15_000 + 5000,
        disableEndpoint: null,
        timedOut: true,
      });
      const [first, ...none] = (await store.claimDueDeliveries(claim(nowMs, { perEndpointLimit: 1 }))).filter((d) => d.endpointId === id);
      expect(none).toEqual([]);
      expect(await store.recordDeliveryAttempt(first!, timedOut(nowMs))).toBe(true);
      // Its other deliveries were due all along: held back 1 s after the attempt ended, then one at a time.
      const firstEndMs = nowMs + 15_000;
      expect(await mine(firstEndMs + 999)).toEqual([]);
      const second = await mine(firstEndMs + 1000);
      expect(second).toHaveLength(1);
      expect(await store.recordDeliveryAttempt(second[0]!, timedOut(firstEndMs + 1000))).toBe(true);
      const secondEndMs = firstEndMs + 1000 + 15_000;
      expect(await mine(secondEndMs + 1999)).toEqual([]);
      const third = await mine(secondEndMs + 2000);
      expect(third).toHaveLength(1);
      expect(await store.recordDeliveryAttempt(third[0]!, timedOut(secondEndMs + 2000))).toBe(true);
      const thirdEndMs = secondEndMs + 2000 + 15_000;
      expect(await mine(thirdEndMs + 1)).toEqual([]);
      // An operator's test ends the backoff at once, still one send at a time.
      expect(
        (await store.createTestDelivery(contract, id, webhookTest(contract, id, thirdEndMs + 1, operatorActor(contract)), thirdEndMs + 1))
          .kind,
      ).toBe("done");
      const tested = await mine(thirdEndMs + 1);
      expect(tested).toHaveLength(1);
      // An answer (even an error status) ends the slowdown: up to the full per-endpoint cap again.
      expect(await store.recordDeliveryAttempt(tested[0]!, outcome(thirdEndMs + 1, 500, "PENDING", thirdEndMs + 2))).toBe(true);
      const healthy = await mine(thirdEndMs + 2);
      expect(healthy).toHaveLength(4);
      for (const d of healthy) await store.recordDeliveryAttempt(d, outcome(thirdEndMs + 2, 200, "SUCCEEDED", null));
      for (const d of await mine(thirdEndMs + HOUR_MS))
        await store.recordDeliveryAttempt(d, outcome(thirdEndMs + HOUR_MS, 200, "SUCCEEDED", null));
    });

    test("caps one contract's sends in flight (live leases) so another contract's delivery is still claimed", async ({ store, emit }) => {
      const busyContract = randomAddress();
      const otherContract = randomAddress();
      const nowMs = T0_MS + 9 * HOUR_MS;
      const busy = [
        await created(store, endpoint(busyContract)),
        await created(store, endpoint(busyContract)),
        await created(store, endpoint(busyContract)),
      ];
      const other = await created(store, endpoint(otherContract));
      await emit(
        Array.from({ length: 4 }, () => credit(busyContract, nowMs)),
        nowMs,
      );
      const capped = (atMs: number, limit = 100) => store.claimDueDeliveries(claim(atMs, { limit, perContractLimit: 5, leaseMs: 10_000 }));
      const first = await capped(nowMs);
      expect(first.filter((d) => busy.includes(d.endpointId))).toHaveLength(5);
      expect(await capped(nowMs + 1)).toEqual([]);
      await emit([credit(otherContract, nowMs + 2)], nowMs + 2);
      const next = await capped(nowMs + 2);
      expect(next.map((d) => d.endpointId)).toEqual([other]);
      // A recorded attempt frees its place; an expired lease (its sender died) does too.
      await store.recordDeliveryAttempt(first[0]!, outcome(nowMs + 3, 200, "SUCCEEDED", null));
      const freed = await capped(nowMs + 3);
      console.log(
        "DEBUG",
        JSON.stringify(freed.map((d) => [d.endpointId, busy.includes(d.endpointId)])),
        JSON.stringify(first.map((d) => d.endpointId)),
      );
      expect(freed).toHaveLength(1);
      const afterLeases = await capped(nowMs + 10_000 + 5);
      expect(afterLeases.filter((d) => busy.includes(d.endpointId))).toHaveLength(5);
      for (const d of [...afterLeases, ...next]) await store.recordDeliveryAttempt(d, outcome(nowMs + 10_005, 200, "SUCCEEDED", null));
      for (const d of await capped(nowMs + HOUR_MS)) await store.recordDeliveryAttempt(d, outcome(nowMs + HOUR_MS, 200, "SUCCEEDED", null));
    });
  });
}

const directory = mkdtempSync(join(tmpdir(), "points-ledger-webhooks-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

webhooksStoreSuite("webhooks store on SQLite", async () => {
  const path = join(directory, "ledger.db");
  const store = createSqliteStore({ path, synchronous: "NORMAL" });
  await store.migrate();
  const fanOut = sqliteFanOutAt(path);
  return {
    store,
    emit: fanOut.emit,
    close: async () => {
      await fanOut.close();
      await store.close();
    },
  };
});

let schema: TestSchema | undefined;
afterAll(async () => schema?.drop());

webhooksStoreSuite("webhooks store on PostgreSQL", async () => {
  if (!DATABASE_URL_TEST) return null;
  schema = await createTestSchema(DATABASE_URL_TEST);
  const store = schema.openStore();
  await store.migrate();
  return { store, ...postgresFanOutAt(schema.connectionString, 2) };
});

describe("webhook claims on PostgreSQL shared by several instances", () => {
  it.skipIf(!DATABASE_URL_TEST)("two stores claiming at once take disjoint deliveries, together all of them", async () => {
    const shared = await createTestSchema(DATABASE_URL_TEST!);
    try {
      const [a, b] = [shared.openStore(), shared.openStore()];
      await a.migrate();
      const contract = randomAddress();
      const ids = [await created(a, endpoint(contract)), await created(a, endpoint(contract))];
      const pool = new pg.Pool({ connectionString: shared.connectionString, max: 1 });
      const client = await pool.connect();
      await client.query("BEGIN");
      await pgFanOut(
        client,
        Array.from({ length: 60 }, () => credit(contract)),
        T0_MS,
      );
      await client.query("COMMIT");
      client.release();
      await pool.end();
      const taken: ClaimedDelivery[][] = [[], []];
      await Promise.all(
        [a, b].map(async (store, i) => {
          for (;;) {
            // Caps out of the way: this is about disjoint claims, not fairness.
            const claimed = await store.claimDueDeliveries(claim(T0_MS, { limit: 7, perEndpointLimit: 1000, perContractLimit: 1000 }));
            if (claimed.length === 0) return;
            taken[i]!.push(...claimed);
          }
        }),
      );
      const all = [...taken[0]!, ...taken[1]!].map((d) => d.id);
      expect(all).toHaveLength(120);
      expect(new Set(all).size).toBe(120);
      expect(new Set([...taken[0]!, ...taken[1]!].map((d) => d.endpointId))).toEqual(new Set(ids));
    } finally {
      await shared.drop();
    }
  });
});
