import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import { EVENT_CURSOR_REFRESH_MS } from "../src/domain/limits.js";
import { buildApp } from "../src/http/app.js";
import { createMetrics } from "../src/metrics.js";
import type { LedgerStore } from "../src/store/store.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import {
  TEST_ENV,
  addContract,
  batchBody,
  expectValidationFailed,
  injectSender,
  putBatch,
  randomAddress,
  type OperatedContract,
  type Send,
} from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

/**
 * Issue 19, items 5 and 8, on both adapters through the real app. An events cursor is sealed:
 * it carries nothing a tenant can read about other tenants (an idle contract's cursor does not
 * move while others write), it cannot be forged (into the future or at all) or carried to another
 * stream, and every part of every cursor (events, admin events, Last-Event-ID, transfers,
 * batches) is range checked: 400, never 500.
 */

interface Fixture {
  send: Send;
  store: LedgerStore;
  adminToken: string;
  clock: ManualClock;
  close(): Promise<void>;
}

interface PageJson {
  events: { id: string; type: string }[];
  cursor: string;
  hasMore: boolean;
}

const T0 = Date.UTC(2026, 10, 1);
const b64 = (text: string) => Buffer.from(text).toString("base64url");

async function fixtureOver(fresh: { store: LedgerStore; databaseUrl: string; remove(): Promise<void> }): Promise<Fixture> {
  await fresh.store.migrate();
  const adminToken = `admin-${randomUUID()}`;
  // Tokens outlive the clock's jumps past EVENT_CURSOR_REFRESH_MS.
  const config = loadConfig({ ...TEST_ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: fresh.databaseUrl, BEARER_TOKEN_TTL_SECONDS: "86400" });
  const clock = new ManualClock(T0);
  const app = await buildApp({ config, store: fresh.store, clock, metrics: createMetrics(), logger: false });
  return {
    send: injectSender(app),
    store: fresh.store,
    adminToken,
    clock,
    close: async () => {
      await app.close();
      await fresh.remove();
    },
  };
}

function describeCursorHardening(
  adapter: string,
  open: () => Promise<{ store: LedgerStore; databaseUrl: string; remove(): Promise<void> }>,
) {
  describe(`event and listing cursors on ${adapter}`, () => {
    let fx: Fixture;
    let idle: OperatedContract;
    let busy: OperatedContract;

    beforeEach(async () => {
      fx = await fixtureOver(await open());
      idle = await addContract(fx, {});
      busy = await addContract(fx, { PHASE2_POINTS: "1000" });
    });

    afterEach(async () => {
      await fx.close();
    });

    const eventsOf = (who: OperatedContract, query = "") =>
      fx.send({ method: "GET", url: `/v1/contracts/${who.contract}/events${query}`, token: who.token });

    async function pageOf(who: OperatedContract, query = ""): Promise<PageJson> {
      const response = await eventsOf(who, query);
      expect(response.status, response.text).toBe(200);
      return response.json as PageJson;
    }

    it("keeps an idle contract's cursor unchanged while another contract writes 50 batches", async () => {
      const first = await pageOf(idle);
      expect(first.events.map((e) => e.type)).toEqual(["operator.changed"]);
      const again = await pageOf(idle, `?after=${first.cursor}`);
      for (let i = 0; i < 50; i++) await putBatch(fx.send, busy, `b${i}`, batchBody([{ toAddress: randomAddress(), points: "1" }]));
      const after = await pageOf(idle, `?after=${again.cursor}`);
      expect(after.events).toEqual([]);
      expect(after.cursor).toBe(first.cursor);
      // A cursor is not the old readable form, and its length does not grow with the log.
      expect(Buffer.from(first.cursor, "base64url").toString("latin1")).not.toMatch(/^ev1:/);
      expect(new Set([first.cursor, (await pageOf(busy)).cursor].map((cursor) => cursor.length)).size).toBe(1);
      // Read without `after`, a stream with no events gets a fresh cursor every time (never the same
      // one twice, so two of them cannot tell whether the log moved between them).
      const none1 = await pageOf(idle, "?types=batch.finalized");
      const none2 = await pageOf(idle, "?types=batch.finalized");
      expect(none1.events).toEqual([]);
      expect(none1.cursor).not.toBe(none2.cursor);
    });

    it("gives an idle cursor a new value only once it is EVENT_CURSOR_REFRESH_MS old, still missing nothing", async () => {
      const first = await pageOf(idle);
      fx.clock.advance(EVENT_CURSOR_REFRESH_MS + 1);
      const refreshed = await pageOf(idle, `?after=${first.cursor}`);
      expect(refreshed.events).toEqual([]);
      expect(refreshed.cursor).not.toBe(first.cursor);
      // The new cursor is still within the stream: an event of the idle contract comes next.
      const credit = await fx.send({
        method: "PUT",
        url: `/v1/admin/contracts/${idle.contract}/credits/c1`,
        token: fx.adminToken,
        body: { pointType: "PHASE2_POINTS", points: "1" },
      });
      expect(credit.status, credit.text).toBe(200);
      expect((await pageOf(idle, `?after=${refreshed.cursor}`)).events.map((e) => e.type)).toEqual(["credit.created"]);
    });

    it("answers 400 to a cursor the service never issued: altered, of another stream, or old-form past the head", async () => {
      const mine = await pageOf(idle);
      const bytes = Buffer.from(mine.cursor, "base64url");
      for (const index of [0, 5, 20, bytes.length - 1]) {
        const altered = Buffer.from(bytes);
        altered[index] = altered[index]! ^ 0x01;
        expectValidationFailed(await eventsOf(idle, `?after=${altered.toString("base64url")}`), ["after"]);
      }
      const theirs = await pageOf(busy);
      expectValidationFailed(await eventsOf(idle, `?after=${theirs.cursor}`), ["after"]);
      const admin = await fx.send({ method: "GET", url: "/v1/admin/events", token: fx.adminToken });
      expectValidationFailed(await eventsOf(idle, `?after=${(admin.json as PageJson).cursor}`), ["after"]);
      // Old-form cursors (from before sealing) are read once, but a future one was never issued.
      const future = fx.store.kind === "sqlite" ? "ev1:1000000" : "ev1:1000000.0";
      expectValidationFailed(await eventsOf(busy, `?after=${b64(future)}`), ["after"]);
      expectValidationFailed(await fx.send({ method: "GET", url: `/v1/admin/events?after=${b64(future)}`, token: fx.adminToken }), [
        "after",
      ]);
    });

    it("reads an old-form cursor the service issued once, answering with a sealed one", async () => {
      await putBatch(fx.send, busy, "one", batchBody([{ toAddress: randomAddress(), points: "1" }]));
      const stored = await fx.store.listEvents({ stream: busy.contract.toLowerCase() as never, after: null, types: null, limit: 2 });
      expect(stored.kind).toBe("page");
      const position = stored.kind === "page" ? stored.events[1]!.position : "";
      const resumed = await pageOf(busy, `?after=${b64(`ev1:${position}`)}`);
      expect(resumed.events.map((e) => e.type)).toEqual(["batch.accepted"]);
      expect(Buffer.from(resumed.cursor, "base64url").toString("latin1")).not.toMatch(/^ev1:/);
      expect((await pageOf(busy, `?after=${resumed.cursor}`)).events).toEqual([]);
    });

    it("answers 400, never 500, to cursor parts out of range in every listing", async () => {
      const outOfRange = [
        "ev1:9223372036854775808",
        "ev1:9999999999999999999",
        "ev1:1.9223372036854775808",
        "ev1:18446744073709551616.1",
        "ev1:99999999999999999999.1",
      ].map(b64);
      for (const cursor of outOfRange) {
        expectValidationFailed(await eventsOf(busy, `?after=${cursor}`), ["after"]);
        expectValidationFailed(await fx.send({ method: "GET", url: `/v1/admin/events?after=${cursor}`, token: fx.adminToken }), ["after"]);
        const stream = await fx.send({
          method: "GET",
          url: `/v1/contracts/${busy.contract}/events/stream`,
          token: busy.token,
          headers: { "last-event-id": cursor },
        });
        expectValidationFailed(stream, ["Last-Event-ID"]);
      }
      for (const cursor of ["1.9223372036854775808.0", "1.9999999999999999999.0", "1.1.2147483648"].map(b64)) {
        expectValidationFailed(
          await fx.send({ method: "GET", url: `/v1/contracts/${busy.contract}/transfers?cursor=${cursor}`, token: busy.token }),
          ["cursor"],
        );
      }
      for (const cursor of ["1.9223372036854775808", "1.9999999999999999999"].map(b64)) {
        expectValidationFailed(
          await fx.send({ method: "GET", url: `/v1/contracts/${busy.contract}/batches?cursor=${cursor}`, token: busy.token }),
          ["cursor"],
        );
      }
      // The largest in-range parts are a position past the head, and the transfers cursor is read.
      const largest = fx.store.kind === "sqlite" ? "ev1:9223372036854775807" : "ev1:18446744073709551615.9223372036854775807";
      expect((await eventsOf(busy, `?after=${b64(largest)}`)).status).toBe(400); // past the head: never issued
      const transfers = await fx.send({
        method: "GET",
        url: `/v1/contracts/${busy.contract}/transfers?cursor=${b64("1.9223372036854775807.0")}`,
        token: busy.token,
      });
      expect(transfers.status, transfers.text).toBe(200);
    });
  });
}

describeCursorHardening("SQLite", async () => temporarySqliteStore());

if (DATABASE_URL_TEST) {
  const url = DATABASE_URL_TEST;
  describeCursorHardening("PostgreSQL", async () => {
    const schema = await createTestSchema(url);
    return { store: schema.openStore(), databaseUrl: schema.connectionString, remove: () => schema.drop() };
  });
} else {
  describe.skip(`event and listing cursors on PostgreSQL (${SKIP_REASON})`, () => {
    it("needs DATABASE_URL_TEST", () => undefined);
  });
}
