import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { createMetrics } from "../src/metrics.js";
import type { PublisherLease } from "../src/domain/publishers.js";
import type { LedgerStore } from "../src/store/store.js";
import { PurgeJob } from "../src/worker/purge.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import { logCapture } from "./helpers/log-capture.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON } from "./helpers/postgres.js";
import { logEverything } from "./helpers/tlog.js";

/**
 * The publishers' store over each database (src/ledger/publishers.ts, store/<adapter>/publishers.ts):
 * one holder of a kind's lease at a time, a position that moves only for the holder, a first
 * start at the log's end with EVENTS_PUBLISH_FROM=now, and the purge that never deletes an event a
 * configured publisher has not published, saying so in its log and in /metrics.
 */

interface Fixture {
  store: LedgerStore;
  remove: () => Promise<void>;
}

const databases: [string, () => Promise<Fixture>][] = [
  [
    "SQLite",
    async () => {
      const fixture = temporarySqliteStore();
      await fixture.store.migrate();
      return fixture;
    },
  ],
];
if (DATABASE_URL_TEST) {
  databases.push([
    "PostgreSQL",
    async () => {
      const schema = await createTestSchema(DATABASE_URL_TEST!);
      const store = schema.openStore();
      await store.migrate();
      return { store, remove: () => schema.drop() };
    },
  ]);
} else console.warn(SKIP_REASON);

const DAY_MS = 24 * 3600 * 1000;
const LEASE_MS = 60_000;

async function credits(store: LedgerStore, count: number, createdAtMs: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await store.credit({
      address: randomAddress() as AddressKey,
      creditId: `c-${createdAtMs}-${i}`,
      pointType: "PHASE2_POINTS",
      amount: 1n,
      // One millisecond apart: the purge keeps an event of the same millisecond as the oldest unpublished one.
      createdAtMs: createdAtMs + i,
    });
  }
}

describe.each(databases)("publishers' store on %s", (_name, open) => {
  let fixture: Fixture | null = null;
  afterEach(async () => {
    await fixture?.remove();
    fixture = null;
  });

  it("lets one holder publish at a time: another's claim gets nothing until the lease runs out, and then the first cannot move the position", async () => {
    fixture = await open();
    const { store } = fixture;
    await credits(store, 5, Date.now());
    await store.ensurePublisher("nats", "start");
    const a: PublisherLease = { kind: "nats", token: "a" };
    const b: PublisherLease = { kind: "nats", token: "b" };
    const claimA = await store.claimPublish(a, 3, LEASE_MS);
    expect(claimA?.events.map(({ event }) => event.type)).toEqual(["credit.created", "credit.created", "credit.created"]);
    expect(await store.claimPublish(b, 3, LEASE_MS)).toBeNull();
    expect(await store.claimPublish(b, 3, null)).toBeNull();
    // A's own reads inside its lease see the same events; the position moves for A only.
    expect((await store.claimPublish(a, 3, null))?.events.map(({ event }) => event.id)).toEqual(
      claimA!.events.map(({ event }) => event.id),
    );
    const last = claimA!.events.at(-1)!;
    expect(await store.advancePublisher(a, last.position, last.event.id, 0)).toBe(true);
    // A lease of 0 ms has run out: B takes it, and A can no longer move the position or record a state.
    const claimB = await store.claimPublish(b, 10, LEASE_MS);
    expect(claimB?.position).toBe(last.position);
    expect(claimB?.lastEventId).toBe(last.event.id);
    expect(claimB?.events).toHaveLength(2);
    expect(await store.advancePublisher(a, claimB!.events.at(-1)!.position, "evt_x", LEASE_MS)).toBe(false);
    await store.recordPublisherState(a, "stopped", "not the holder");
    await store.recordPublisherState(b, "retrying", "broker down");
    const [status] = await store.publisherStatuses(["nats"]);
    expect(status).toMatchObject({ kind: "nats", lastEventId: last.event.id, state: "retrying", lastError: "broker down" });
    expect(status!.oldestUnpublishedAtMs).toBe(claimB!.events[0]!.event.occurredAtMs);
    // Kinds are independent: amqp's row starts at the beginning.
    await store.ensurePublisher("amqp", "start");
    expect((await store.claimPublish({ kind: "amqp", token: "a" }, 10, LEASE_MS))?.events).toHaveLength(5);
  });

  it("starts at the log's end with EVENTS_PUBLISH_FROM=now, and a second ensure changes nothing", async () => {
    fixture = await open();
    const { store } = fixture;
    await credits(store, 4, Date.now());
    await store.ensurePublisher("amqp", "now");
    const lease: PublisherLease = { kind: "amqp", token: "t" };
    expect((await store.claimPublish(lease, 10, LEASE_MS))?.events).toEqual([]);
    await credits(store, 2, Date.now() + 1);
    await store.ensurePublisher("amqp", "start");
    const claim = await store.claimPublish(lease, 10, LEASE_MS);
    expect(claim?.events).toHaveLength(2);
    const [status] = await store.publisherStatuses(["amqp"]);
    expect(status!.oldestUnpublishedAtMs).toBe(claim!.events[0]!.event.occurredAtMs);
  });

  it("the purge keeps every event a configured publisher has not published, logs that it waits and sets the gauge; published ones go", async () => {
    fixture = await open();
    const { store } = fixture;
    const oldMs = Date.now() - 40 * DAY_MS;
    await credits(store, 10, oldMs);
    await logEverything(store);
    await store.ensurePublisher("nats", "start");
    const lease: PublisherLease = { kind: "nats", token: "p" };
    const claim = (await store.claimPublish(lease, 4, LEASE_MS))!;
    expect(await store.advancePublisher(lease, claim.events.at(-1)!.position, claim.events.at(-1)!.event.id, LEASE_MS)).toBe(true);
    const metrics = createMetrics();
    const capture = logCapture();
    const purge = new PurgeJob(
      store,
      { now: () => Date.now() },
      { eventRetentionDays: 30, publisherKinds: ["nats"] },
      metrics,
      pino({ level: "info" }, capture.stream),
    );
    expect((await purge.runOnce()).events).toBe(4);
    const left = await store.listEvents({ stream: null, after: null, types: null, limit: 100 });
    expect(left.kind === "page" && left.events.map(({ event }) => event.id)).toEqual(
      (await store.claimPublish(lease, 100, null))!.events.map(({ event }) => event.id),
    );
    expect(await metrics.registry.getSingleMetricAsString("points_ledger_event_purge_waiting")).toContain('{kind="nats"} 1');
    expect(capture.lines.some((line) => line.includes("the event purge waits") && line.includes('"publishers":["nats"]'))).toBe(true);
    // Once published, the rest is purged and the gauge falls back to 0.
    const rest = (await store.claimPublish(lease, 100, null))!;
    await store.advancePublisher(lease, rest.events.at(-1)!.position, rest.events.at(-1)!.event.id, LEASE_MS);
    expect((await purge.runOnce()).events).toBe(6);
    expect(await metrics.registry.getSingleMetricAsString("points_ledger_event_purge_waiting")).toContain('{kind="nats"} 0');
    // A publisher that is not configured holds nothing back.
    await credits(store, 2, oldMs + 100);
    await logEverything(store);
    const unconfigured = new PurgeJob(store, { now: () => Date.now() }, { eventRetentionDays: 30 }, metrics, pino({ level: "silent" }));
    expect((await unconfigured.runOnce()).events).toBe(2);
  });
});
