import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import { Finalizer } from "../src/worker/finalize.js";
import { purgeOldEvents } from "../src/worker/purge.js";
import { logEverything } from "./helpers/tlog.js";
import { buildApp } from "../src/http/app.js";
import { createMetrics } from "../src/metrics.js";
import type { LedgerStore } from "../src/store/store.js";
import {
  TEST_ENV,
  addContract,
  batchBody,
  creditPoints,
  expectError,
  expectValidationFailed,
  injectSender,
  newAccount,
  putBatch,
  randomAddress,
  registerOperator,
  signIn,
  type Send,
  type TestLedger,
} from "./helpers/http.js";

/** How long a PostgreSQL read may wait for the newest events to be listed (readAllOnce). */
const VISIBLE_WITHIN_MS = 10_000;

/**
 * The event log's reading side through the real app, one suite for both adapters: every
 * transition appears once with its type, stream and data; paging, filters, errors, retention and
 * isolation between contracts. The stream (SSE) has its own file (events-stream.test.ts).
 */

/** A fresh, empty store and its DATABASE_URL (for loadConfig); `remove` closes and deletes it. */
export interface FreshStore {
  store: LedgerStore;
  databaseUrl: string;
  remove(): Promise<void>;
}

export interface EventJson {
  id: string;
  type: string;
  contractAddress: string | null;
  occurredAt: string;
  actor: Record<string, unknown>;
  data: Record<string, unknown>;
}
interface EventPageJson {
  success: true;
  events: EventJson[];
  cursor: string;
  hasMore: boolean;
}

const T0 = Date.UTC(2026, 4, 1);

async function page(send: Send, url: string, token: string): Promise<EventPageJson> {
  const response = await send({ method: "GET", url, token });
  expect(response.status, response.text).toBe(200);
  const body = response.json as EventPageJson;
  expect(body.success).toBe(true);
  expect(typeof body.cursor).toBe("string");
  return body;
}

/** Every event after `after` (or from the oldest), page by page with `limit`. */
async function readAll(
  send: Send,
  base: string,
  token: string,
  limit: number,
  after?: string,
): Promise<{ events: EventJson[]; cursor: string }> {
  const events: EventJson[] = [];
  let cursor = after;
  for (let pages = 0; pages < 10_000; pages++) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor === undefined ? {} : { after: cursor }) });
    const body = await page(send, `${base}?${query}`, token);
    events.push(...body.events);
    expect(body.events.length).toBeLessThanOrEqual(limit);
    cursor = body.cursor;
    if (!body.hasMore) return { events, cursor };
  }
  throw new Error("paging did not end");
}

/**
 * readAll once `count` events are listed. On PostgreSQL an event is listed once every older
 * transaction of the database has ended (src/store/postgres/events.ts): another suite's open
 * transaction can hold the newest back for a moment, so wait for them (bounded) before paging.
 */
async function readAllOnce(send: Send, base: string, token: string, count: number): Promise<{ events: EventJson[]; cursor: string }> {
  const deadlineMs = Date.now() + VISIBLE_WITHIN_MS;
  for (;;) {
    const all = await readAll(send, base, token, 1000);
    if (all.events.length >= count || Date.now() > deadlineMs) return all;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The app over a fresh store, at a manual clock, with one contract signed in and credited. */
async function ledgerOver(fresh: FreshStore, clock: ManualClock): Promise<TestLedger> {
  await fresh.store.migrate();
  const adminToken = `admin-${randomUUID()}`;
  // Private webhook URLs: the actor tests queue a webhook.test to a local address nobody sends to.
  const config = loadConfig({ ...TEST_ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: fresh.databaseUrl, WEBHOOK_ALLOW_PRIVATE_URLS: "true" });
  const metrics = createMetrics();
  const app = await buildApp({ config, store: fresh.store, clock, metrics, logger: false });
  const finalizer = new Finalizer(fresh.store, clock, { intervalMs: 1000, batchesPerPass: 50 }, metrics, app.log);
  const testApp = {
    app,
    store: fresh.store,
    config,
    clock,
    metrics,
    adminToken,
    send: injectSender(app),
    finalizeDue: () => finalizer.runUntilIdle(),
    close: async () => {
      await app.close();
      await fresh.remove();
    },
  };
  try {
    return { ...testApp, ...(await addContract(testApp, { PHASE2_POINTS: "1000" })) };
  } catch (error) {
    await testApp.close();
    throw error;
  }
}

export function describeEventsApi(adapter: string, openStore: () => Promise<FreshStore>): void {
  describe(`events API on ${adapter}`, () => {
    let clock: ManualClock;
    let ledger: TestLedger;
    let eventsUrl: string;

    beforeEach(async () => {
      clock = new ManualClock(T0);
      ledger = await ledgerOver(await openStore(), clock);
      eventsUrl = `/v1/contracts/${ledger.contract}/events`;
    });

    afterEach(async () => {
      await ledger.close();
    });

    async function getBatchJson(batchId: string): Promise<Record<string, unknown>> {
      const response = await ledger.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/batches/${batchId}`,
        token: ledger.token,
      });
      expect(response.status, response.text).toBe(200);
      const { transfers: _transfers, ...batch } = (response.json as { batch: Record<string, unknown> }).batch;
      return batch;
    }

    describe("GET /v1/contracts/{c}/events", () => {
      it("records every transition exactly once, with its type, stream and data", async () => {
        const recipient = randomAddress();
        const initial = await readAll(ledger.send, eventsUrl, ledger.token, 100);
        expect(initial.events.map((e) => e.type)).toEqual(["operator.changed", "credit.created"]);
        expect(initial.events[0]!.data).toEqual({ operatorAddress: ledger.operatorAccount.address, previousOperatorAddress: null });
        expect(initial.events[1]!.data).toMatchObject({ pointType: "PHASE2_POINTS", points: "1000", asset: null, block: null });
        for (const event of initial.events) {
          expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/);
          expect(event.contractAddress).toBe(ledger.contract);
          expect(event.occurredAt).toBe(new Date(T0).toISOString());
        }

        await putBatch(ledger.send, ledger, "kept", batchBody([{ toAddress: recipient, points: "10" }], "PHASE2_POINTS", 1));
        const acceptedJson = await getBatchJson("kept");
        await putBatch(ledger.send, ledger, "dropped", batchBody([{ toAddress: recipient, points: "2.5" }], "PHASE2_POINTS", 60));
        clock.advance(500);
        const cancel = () =>
          ledger.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/dropped`, token: ledger.token });
        expect((await cancel()).status).toBe(200);
        // A repeated cancel (same 200) and rejected requests change nothing, so they make no event.
        expect((await cancel()).status).toBe(200);
        const tooMuch = await ledger.send({
          method: "PUT",
          url: `/v1/contracts/${ledger.contract}/batches/big`,
          token: ledger.token,
          body: batchBody([{ toAddress: recipient, points: "5000" }]),
        });
        expectError(tooMuch, 422, "INSUFFICIENT_BALANCE");
        const reused = await ledger.send({
          method: "PUT",
          url: `/v1/contracts/${ledger.contract}/batches/kept`,
          token: ledger.token,
          body: batchBody([{ toAddress: recipient, points: "10" }]),
        });
        expectError(reused, 409, "BATCH_ID_EXISTS");
        clock.advance(1000);
        expect(await ledger.finalizeDue()).toBe(1);
        await creditPoints(ledger.send, ledger.adminToken, ledger.contract, "PHASE2_POINTS", "7", "credit-seven");
        const assetCredit = await ledger.send({
          method: "PUT",
          url: `/v1/admin/contracts/${ledger.contract}/credits/asset-credit`,
          token: ledger.adminToken,
          body: { pointType: "PHASE2_POINTS", points: "1.5", asset: "ETH", block: 1234 },
        });
        expect(assetCredit.status, assetCredit.text).toBe(200);

        const later = await readAll(ledger.send, eventsUrl, ledger.token, 100, initial.cursor);
        expect(later.events.map((e) => e.type)).toEqual([
          "batch.accepted",
          "batch.accepted",
          "batch.cancelled",
          "batch.finalized",
          "credit.created",
          "credit.created",
        ]);
        const [accepted, , cancelled, finalized, credit, assetCreditEvent] = later.events as [
          EventJson,
          EventJson,
          EventJson,
          EventJson,
          EventJson,
          EventJson,
        ];
        expect(accepted.data).toEqual({ batch: acceptedJson });
        expect(cancelled.data).toEqual({ batch: await getBatchJson("dropped") });
        expect((cancelled.data.batch as { status: string }).status).toBe("CANCELLED");
        expect(finalized.data).toEqual({ batch: await getBatchJson("kept") });
        expect((finalized.data.batch as { status: string }).status).toBe("FINALIZED");
        expect(credit.data).toEqual({ creditId: "credit-seven", pointType: "PHASE2_POINTS", points: "7", asset: null, block: null });
        expect(assetCreditEvent.data).toEqual({
          creditId: "asset-credit",
          pointType: "PHASE2_POINTS",
          points: "1.5",
          asset: "ETH",
          block: 1234,
        });
        const ids = [...initial.events, ...later.events].map((e) => e.id);
        expect(new Set(ids).size).toBe(ids.length);
      });

      it("puts an operator change on the contract's stream with the previous operator", async () => {
        const first = ledger.operatorAccount.address;
        const second = newAccount();
        await registerOperator(ledger.send, ledger.adminToken, ledger.contract, second.address);
        // Registering the same operator again changes nothing.
        await registerOperator(ledger.send, ledger.adminToken, ledger.contract, second.address);
        const token = await signIn(ledger.send, ledger.contract, second);
        const { events } = await readAll(ledger.send, eventsUrl, token, 100);
        const changes = events.filter((e) => e.type === "operator.changed").map((e) => e.data);
        expect(changes).toEqual([
          { operatorAddress: first, previousOperatorAddress: null },
          { operatorAddress: second.address, previousOperatorAddress: first },
        ]);
      });

      it("returns the same sequence whatever the page size", async () => {
        for (let i = 0; i < 7; i++) {
          await putBatch(ledger.send, ledger, `b${i}`, batchBody([{ toAddress: randomAddress(), points: "1" }]));
          if (i % 2 === 0)
            expect(
              (await ledger.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/b${i}`, token: ledger.token })).status,
            ).toBe(200);
        }
        const whole = await readAllOnce(ledger.send, eventsUrl, ledger.token, 2 + 7 + 4);
        expect(whole.events.length).toBe(2 + 7 + 4);
        for (let limit = 1; limit <= whole.events.length; limit++) {
          const paged = await readAll(ledger.send, eventsUrl, ledger.token, limit);
          expect(
            paged.events.map((e) => e.id),
            `limit ${limit}`,
          ).toEqual(whole.events.map((e) => e.id));
          expect(paged.cursor).toBe(whole.cursor);
        }
        // The last cursor is where the next call starts: nothing yet, then only what came after.
        const empty = await page(ledger.send, `${eventsUrl}?after=${whole.cursor}`, ledger.token);
        expect(empty).toEqual({ success: true, events: [], cursor: whole.cursor, hasMore: false });
        await putBatch(ledger.send, ledger, "after", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        const next = await page(ledger.send, `${eventsUrl}?after=${whole.cursor}`, ledger.token);
        expect(next.events.map((e) => (e.data.batch as { id: string }).id)).toEqual(["after"]);
        expect(next.cursor).not.toBe(whole.cursor);
      });

      it("filters by types and keeps the cursor moving", async () => {
        await putBatch(ledger.send, ledger, "one", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        await ledger.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/one`, token: ledger.token });
        await putBatch(ledger.send, ledger, "two", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        const cancelled = await page(ledger.send, `${eventsUrl}?types=batch.cancelled`, ledger.token);
        expect(cancelled.events.map((e) => e.type)).toEqual(["batch.cancelled"]);
        const batches = await page(ledger.send, `${eventsUrl}?types=batch.accepted,batch.cancelled,batch.accepted`, ledger.token);
        expect(batches.events.map((e) => e.type)).toEqual(["batch.accepted", "batch.cancelled", "batch.accepted"]);
        // Asking again after the filtered page's cursor finds nothing more of those types.
        const after = await page(ledger.send, `${eventsUrl}?types=batch.cancelled&after=${cancelled.cursor}`, ledger.token);
        expect(after.events).toEqual([]);
      });

      it("answers 400 naming the field for a bad after, an unknown type or a limit out of range", async () => {
        const bad = (query: string) => ledger.send({ method: "GET", url: `${eventsUrl}?${query}`, token: ledger.token });
        expectValidationFailed(await bad("after=nonsense"), ["after"]);
        expectValidationFailed(await bad(`after=${Buffer.from("ev1:1.2.3.4").toString("base64url")}`), ["after"]);
        expectValidationFailed(await bad(`after=${Buffer.from("v9:12").toString("base64url")}`), ["after"]);
        expectValidationFailed(await bad("after=a%00b"), ["after"]);
        expectValidationFailed(await bad("types=batch.exploded"), ["types"]);
        expectValidationFailed(await bad("types=batch.accepted,"), ["types"]);
        // Not on a contract's stream: sent to one endpoint, or to the admin listing only.
        expectValidationFailed(await bad("types=webhook.test"), ["types"]);
        expectValidationFailed(await bad("types=snapshot.created"), ["types"]);
        expectValidationFailed(await bad("types=BATCH.ACCEPTED"), ["types"]);
        expectValidationFailed(await bad("after=nonsense&types=nope"), ["after", "types"]);
        expectValidationFailed(await bad("limit=0"), ["limit"]);
        expectValidationFailed(await bad("limit=1001"), ["limit"]);
        expectValidationFailed(await bad("limit=ten"), ["limit"]);
        expectValidationFailed(await bad("extra=1"), ["extra"]);
        expect((await bad("limit=1000")).status).toBe(200);
        expect((await bad("limit=1")).status).toBe(200);
      });

      it("answers 410 CURSOR_EXPIRED for a cursor older than the retained events", async () => {
        const first = await page(ledger.send, `${eventsUrl}?limit=1`, ledger.token);
        expect(first.hasMore).toBe(true);
        clock.advance(31 * 24 * 3600 * 1000);
        ledger.token = await signIn(ledger.send, ledger.contract, ledger.operatorAccount);
        await putBatch(ledger.send, ledger, "recent", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        // The purge job, in steps of one event, at the default retention (it purges only what the transparency log has read).
        await logEverything(ledger.store, clock.now());
        expect(await purgeOldEvents(ledger.store, clock.now(), ledger.config.eventRetentionDays, 1)).toBe(2);
        const expired = await ledger.send({ method: "GET", url: `${eventsUrl}?after=${first.cursor}`, token: ledger.token });
        const error = expectError(expired, 410, "CURSOR_EXPIRED");
        expect(error.details).toBeUndefined();
        // Without `after`, reading starts at the oldest retained event.
        const fresh = await page(ledger.send, eventsUrl, ledger.token);
        expect(fresh.events.map((e) => e.type)).toEqual(["batch.accepted"]);
        const again = await page(ledger.send, `${eventsUrl}?after=${fresh.cursor}`, ledger.token);
        expect(again.events).toEqual([]);
      });

      it("never shows another contract's events, and a token reads only its own contract", async () => {
        const other = await addContract(ledger, { PHASE2_POINTS: "50" });
        await putBatch(ledger.send, other, "theirs", batchBody([{ toAddress: ledger.contract, points: "5" }]));
        const mine = await readAll(ledger.send, eventsUrl, ledger.token, 100);
        expect(mine.events.every((e) => e.contractAddress === ledger.contract)).toBe(true);
        expect(mine.events.map((e) => e.type)).toEqual(["operator.changed", "credit.created"]);
        const theirs = await readAll(ledger.send, `/v1/contracts/${other.contract}/events`, other.token, 100);
        expect(theirs.events.map((e) => e.type)).toEqual(["operator.changed", "credit.created", "batch.accepted"]);
        const crossed = await ledger.send({ method: "GET", url: `/v1/contracts/${other.contract}/events`, token: ledger.token });
        expectError(crossed, 403, "FORBIDDEN");
        expectError(await ledger.send({ method: "GET", url: eventsUrl }), 401, "UNAUTHORIZED");
        // A cursor is sealed to the stream it was issued for: on another stream it was never issued (400).
        expectValidationFailed(await ledger.send({ method: "GET", url: `${eventsUrl}?after=${theirs.cursor}`, token: ledger.token }), [
          "after",
        ]);
      });

      it("puts a credit on the credited address's stream, not on the contract's", async () => {
        const recipient = await addContract(ledger, {});
        await creditPoints(ledger.send, ledger.adminToken, recipient.contract, "PHASE2_POINTS", "3", `gift-${randomUUID()}`);
        const theirs = await readAll(ledger.send, `/v1/contracts/${recipient.contract}/events`, recipient.token, 100);
        expect(theirs.events.map((e) => e.type)).toEqual(["operator.changed", "credit.created"]);
        expect(theirs.events[1]!.contractAddress).toBe(recipient.contract);
        const mine = await readAll(ledger.send, eventsUrl, ledger.token, 100);
        expect(mine.events.map((e) => e.type)).toEqual(["operator.changed", "credit.created"]);
      });
    });

    describe("actors: who did what", () => {
      const SYSTEM = { type: "system" };
      const ADMIN = { type: "admin" };

      it("names the operator on its batches' accepted and cancelled events, the system on finalization, the admin on credits and operator changes", async () => {
        const operator = { type: "operator", address: ledger.operatorAccount.address };
        const initial = await readAll(ledger.send, eventsUrl, ledger.token, 100);
        expect(initial.events.map((e) => [e.type, e.actor])).toEqual([
          ["operator.changed", ADMIN],
          ["credit.created", ADMIN],
        ]);
        await putBatch(ledger.send, ledger, "kept", batchBody([{ toAddress: randomAddress(), points: "1" }], "PHASE2_POINTS", 1));
        await putBatch(ledger.send, ledger, "dropped", batchBody([{ toAddress: randomAddress(), points: "1" }], "PHASE2_POINTS", 60));
        const cancel = await ledger.send({
          method: "DELETE",
          url: `/v1/contracts/${ledger.contract}/batches/dropped`,
          token: ledger.token,
        });
        expect(cancel.status, cancel.text).toBe(200);
        expect((cancel.json as { batch: Record<string, unknown> }).batch).toMatchObject({ submittedBy: operator, cancelledBy: operator });
        clock.advance(1000);
        expect(await ledger.finalizeDue()).toBe(1);
        const next = newAccount();
        await registerOperator(ledger.send, ledger.adminToken, ledger.contract, next.address);

        // The operator change revoked the contract's token: read as the admin, past the first two events.
        const events = (await readAll(ledger.send, "/v1/admin/events", ledger.adminToken, 100)).events.slice(initial.events.length);
        expect(events.map((e) => [e.type, e.actor])).toEqual([
          ["batch.accepted", operator],
          ["batch.accepted", operator],
          ["batch.cancelled", operator],
          ["batch.finalized", SYSTEM],
          ["operator.changed", ADMIN],
        ]);
        // The Batch object inside each event says who submitted it, and who cancelled it once cancelled.
        expect(
          events
            .slice(0, 4)
            .map((e) => [(e.data.batch as { submittedBy: unknown }).submittedBy, (e.data.batch as { cancelledBy: unknown }).cancelledBy]),
        ).toEqual([
          [operator, null],
          [operator, null],
          [operator, operator],
          [operator, null],
        ]);
        // Keys of the Event object in API.md's order.
        expect(Object.keys(events[0]!)).toEqual(["id", "type", "contractAddress", "occurredAt", "actor", "data", "logIndex"]);
      });

      it("shows submittedBy and cancelledBy on every batch read, one batch or a page", async () => {
        const operator = { type: "operator", address: ledger.operatorAccount.address };
        await putBatch(ledger.send, ledger, "open", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        await putBatch(ledger.send, ledger, "closed", batchBody([{ toAddress: randomAddress(), points: "1" }]));
        await ledger.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/closed`, token: ledger.token });
        expect(await getBatchJson("open")).toMatchObject({ submittedBy: operator, cancelledBy: null });
        expect(await getBatchJson("closed")).toMatchObject({ submittedBy: operator, cancelledBy: operator });
        const list = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/batches?sort=ASC`, token: ledger.token });
        expect(list.status, list.text).toBe(200);
        const batches = (list.json as { batches: Record<string, unknown>[] }).batches;
        expect(batches.map((b) => [b.id, b.submittedBy, b.cancelledBy])).toEqual([
          ["open", operator, null],
          ["closed", operator, operator],
        ]);
      });

      it("names the admin on snapshot.created and the operator on webhook.test", async () => {
        const snapshot = await ledger.send({
          method: "PUT",
          url: "/v1/admin/snapshots/season-1",
          token: ledger.adminToken,
          body: { pointType: "PHASE2_POINTS" },
        });
        expect(snapshot.status, snapshot.text).toBe(200);
        const created = await page(ledger.send, "/v1/admin/events?types=snapshot.created", ledger.adminToken);
        expect(created.events.map((e) => [e.type, e.actor])).toEqual([["snapshot.created", ADMIN]]);

        const endpoint = await ledger.send({
          method: "POST",
          url: `/v1/contracts/${ledger.contract}/webhook-endpoints`,
          token: ledger.token,
          body: { url: "http://127.0.0.1:9/hook", types: ["batch.finalized"] },
        });
        expect(endpoint.status, endpoint.text).toBe(200);
        const endpointId = (endpoint.json as { endpoint: { id: string } }).endpoint.id;
        const test = await ledger.send({
          method: "POST",
          url: `/v1/contracts/${ledger.contract}/webhook-endpoints/${endpointId}/test`,
          token: ledger.token,
        });
        expect(test.status, test.text).toBe(200);
        // webhook.test is on no stream: its one delivery carries it.
        const claimed = await ledger.store.claimDueDeliveries({
          nowMs: clock.now(),
          limit: 10,
          perEndpointLimit: 10,
          perContractLimit: 10,
          leaseMs: 60_000,
          excludeEndpointIds: [],
        });
        const payloads = claimed.map((delivery) => JSON.parse(delivery.payload) as EventJson);
        expect(payloads.map((e) => [e.type, e.actor])).toEqual([
          ["webhook.test", { type: "operator", address: ledger.operatorAccount.address }],
        ]);
      });
    });

    describe("GET /v1/admin/events", () => {
      it("pages through every stream's events in one order, with the same rules", async () => {
        const other = await addContract(ledger, { PHASE2_POINTS: "5" });
        await putBatch(ledger.send, ledger, "a", batchBody([{ toAddress: other.contract, points: "1" }]));
        await putBatch(ledger.send, other, "b", batchBody([{ toAddress: ledger.contract, points: "1" }]));
        const all = await readAll(ledger.send, "/v1/admin/events", ledger.adminToken, 1000);
        expect(all.events.map((e) => [e.type, e.contractAddress])).toEqual([
          ["operator.changed", ledger.contract],
          ["credit.created", ledger.contract],
          ["operator.changed", other.contract],
          ["credit.created", other.contract],
          ["batch.accepted", ledger.contract],
          ["batch.accepted", other.contract],
        ]);
        const paged = await readAll(ledger.send, "/v1/admin/events", ledger.adminToken, 2);
        expect(paged.events.map((e) => e.id)).toEqual(all.events.map((e) => e.id));
        const mine = await readAll(ledger.send, eventsUrl, ledger.token, 1000);
        const theirs = await readAll(ledger.send, `/v1/contracts/${other.contract}/events`, other.token, 1000);
        expect(new Set(all.events.map((e) => e.id))).toEqual(new Set([...mine.events, ...theirs.events].map((e) => e.id)));

        const filtered = await page(ledger.send, "/v1/admin/events?types=operator.changed,snapshot.created", ledger.adminToken);
        expect(filtered.events.map((e) => e.contractAddress)).toEqual([ledger.contract, other.contract]);
        expectValidationFailed(
          await ledger.send({ method: "GET", url: "/v1/admin/events?types=webhook.tests", token: ledger.adminToken }),
          ["types"],
        );
        expectValidationFailed(await ledger.send({ method: "GET", url: "/v1/admin/events?limit=0", token: ledger.adminToken }), ["limit"]);
        expectError(await ledger.send({ method: "GET", url: "/v1/admin/events", token: ledger.token }), 403, "FORBIDDEN");
        expectError(await ledger.send({ method: "GET", url: "/v1/admin/events" }), 403, "FORBIDDEN");
      });
    });
  });
}
