import { randomBytes } from "node:crypto";
import { ADMIN_ACTOR, operatorActor } from "../src/domain/actors.js";
import { SYSTEM_ACTOR, type Actor } from "../src/domain/api-keys.js";
import { getAddress } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { Batch, BatchStatus, NewBatch, PointType } from "../src/domain/batch.js";
import { MAX_POINTS_UNITS, formatPoints, parsePoints } from "../src/domain/points.js";
import { FINALIZE_RETRY_BASE_MS, FINALIZE_RETRY_MAX_DOUBLINGS, FINALIZE_RETRY_MAX_MS } from "../src/domain/finalize-retry.js";
import { byPointTypeThenAsset, LedgerModel } from "./helpers/ledger-model.js";
import {
  availableOf,
  type Balance,
  type BatchQuery,
  type FinalizeFailure,
  type LedgerStore,
  type StoredEvent,
} from "../src/store/store.js";

/**
 * The LedgerStore contract: every adapter runs this same suite (test/store-sqlite.test.ts,
 * test/store-postgres.test.ts). It talks to the port only, makes fresh random addresses and ids
 * in every test, and never assumes an empty database.
 *
 * Time: finalizeDue and nextFinalizeAtMs look at the whole database, so each test takes its own
 * time window (30 days, starting at `epochMs`, default 2001-01-01: before any real clock), and
 * first finalizes whatever an earlier run left due in it. The suite therefore needs to be the
 * only caller of finalizeDue on its database while it runs (on PostgreSQL: its own schema or
 * database, or run serially with other files that finalize).
 */

export interface StoreContractOptions {
  /** Why the suite is skipped when makeStore returns null, e.g. "set TEST_DATABASE_URL". */
  skipMessage?: string;
  /** Start of the suite's time windows, epoch milliseconds. */
  epochMs?: number;
  /**
   * Makes one batch of the suite's store impossible to finalize by corrupting its stored row
   * (e.g. its transfer count, which finalization checks), and returns the repair. It goes to the
   * database directly, since the port cannot corrupt anything; without it the tests of failing
   * finalizations are skipped.
   */
  breakBatch?: (contract: AddressKey, batchId: string) => Promise<() => Promise<void>>;
}

const WINDOW_MS = 30 * 24 * 3600 * 1000;
const DEFAULT_EPOCH_MS = Date.UTC(2001, 0, 1);
/** A bound on drain loops, so a broken finalizeDue fails the test instead of hanging it. */
const MAX_DRAIN_PASSES = 1000;

interface Fixture {
  store: LedgerStore;
  /** Start of a time window no earlier test used, with everything due in it already finalized. */
  freshWindow(): Promise<number>;
  /**
   * A migrated store on a database of its own (makeStore called again), for tests that issue
   * most of a point type's 10^18-point supply, which would leave the shared one none.
   */
  isolatedStore(): Promise<LedgerStore>;
}

export function storeContractSuite(name: string, makeStore: () => Promise<LedgerStore | null>, options: StoreContractOptions = {}): void {
  describe(name, async () => {
    const store = await makeStore();
    if (store === null) {
      it.skip(`skipped: ${options.skipMessage ?? "makeStore returned null (no database configured)"}`, () => {});
      return;
    }
    const isolatedStores: LedgerStore[] = [];
    afterAll(async () => {
      await Promise.all([store, ...isolatedStores].map((opened) => opened.close()));
    });
    await store.migrate();
    let windows = 0;
    const fixture: Fixture = {
      store,
      freshWindow: async () => {
        const startMs = (options.epochMs ?? DEFAULT_EPOCH_MS) + windows++ * WINDOW_MS;
        await finalizeEverythingDue(store, startMs + WINDOW_MS - 1);
        return startMs;
      },
      isolatedStore: async () => {
        const isolated = await makeStore();
        if (isolated === null || isolated === store) throw new Error("makeStore must open a new database on each call");
        isolatedStores.push(isolated);
        await isolated.migrate();
        return isolated;
      },
    };
    schemaTests(fixture);
    creditTests(fixture);
    submitTests(fixture);
    listTests(fixture);
    cancelTests(fixture);
    finalizeTests(fixture);
    authTests(fixture);
    exactAmountTests(fixture);
    concurrencyTests(fixture);
    fairFinalizeTests(fixture);
    failingFinalizeTests(fixture, options.breakBatch);
    configuredPointTypeTests(fixture);
    assetEarningsTests(fixture);
    eventLogTests(fixture);
    it("verify() finds no violation after every operation above", async () => {
      expect(await store.verify()).toEqual([]);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Helpers: only the port, only fresh names.

export function randomAddress(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}

function randomId(prefix: string): string {
  return `${prefix}-${randomBytes(8).toString("hex")}`;
}

function units(text: string): bigint {
  const amount = parsePoints(text);
  if (amount === null) throw new Error(`bad points literal ${text}`);
  return amount;
}

async function finalizeEverythingDue(store: LedgerStore, nowMs: number): Promise<void> {
  for (let pass = 0; pass < MAX_DRAIN_PASSES; pass++) {
    if ((await store.finalizeDue(nowMs, 1000)).length === 0) return;
  }
  throw new Error("finalizeDue kept returning batches");
}

async function fund(store: LedgerStore, address: AddressKey, pointType: PointType, points: string, nowMs: number): Promise<void> {
  const result = await store.credit({ address, creditId: randomId("fund"), pointType, amount: units(points), createdAtMs: nowMs });
  expect(result).toEqual({ kind: "credited" });
}

function batchOf(
  contract: AddressKey,
  transfers: [AddressKey, string][],
  createdAtMs: number,
  more: { batchId?: string; pointType?: PointType; secondsToFinalize?: number } = {},
): NewBatch {
  const parsed = transfers.map(([toAddress, points]) => ({ toAddress, amount: units(points) }));
  return {
    contract,
    batchId: more.batchId ?? randomId("batch"),
    pointType: more.pointType ?? "PHASE2_POINTS",
    transfers: parsed,
    total: parsed.reduce((sum, t) => sum + t.amount, 0n),
    secondsToFinalize: more.secondsToFinalize ?? 60,
    createdAtMs,
  };
}

async function submitAccepted(store: LedgerStore, batch: NewBatch): Promise<Batch> {
  const result = await store.submitBatch(batch);
  if (result.kind !== "accepted") throw new Error(`expected accepted, got ${JSON.stringify(result, bigintJson)}`);
  return result.batch;
}

function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}

async function balanceOf(store: LedgerStore, address: AddressKey, pointType: PointType = "PHASE2_POINTS"): Promise<Balance> {
  return (await store.getBalances(address, [pointType]))[pointType]!;
}

function balance(earned: string, received: string, finalizedSent: string, pending: string): Balance {
  return {
    earnedCumulative: units(earned),
    receivedCumulative: units(received),
    finalizedSentCumulative: units(finalizedSent),
    pendingSent: units(pending),
  };
}

async function statusOf(store: LedgerStore, contract: AddressKey, batchId: string): Promise<BatchStatus | undefined> {
  return (await store.getBatch(contract, batchId))?.status;
}

// ---------------------------------------------------------------------------------------------

function schemaTests({ store }: Fixture): void {
  it("migrate() is idempotent and ping() answers", async () => {
    await store.migrate();
    await store.migrate();
    await expect(store.ping()).resolves.toBeUndefined();
  });
}

function creditTests({ store, freshWindow, isolatedStore }: Fixture): void {
  describe("credit", () => {
    it("adds to earnedCumulative of one point type only", async () => {
      const now = await freshWindow();
      const address = randomAddress();
      expect(await store.getBalances(address)).toEqual({
        PHASE2_POINTS: balance("0", "0", "0", "0"),
        PHASE2_GOLD: balance("0", "0", "0", "0"),
      });
      await fund(store, address, "PHASE2_GOLD", "1.5", now);
      await fund(store, address, "PHASE2_GOLD", "0.000000000001", now);
      expect(await store.getBalances(address)).toEqual({
        PHASE2_POINTS: balance("0", "0", "0", "0"),
        PHASE2_GOLD: balance("1.500000000001", "0", "0", "0"),
      });
    });

    it("is idempotent by creditId and tells whether a repeat matches the stored credit", async () => {
      const now = await freshWindow();
      const address = randomAddress();
      const credit = { address, creditId: randomId("c"), pointType: "PHASE2_POINTS" as const, amount: units("7"), createdAtMs: now };
      expect(await store.credit(credit)).toEqual({ kind: "credited" });
      expect(await store.credit(credit)).toEqual({ kind: "exists", matchesRequest: true });
      expect(await store.credit({ ...credit, amount: units("7.000000000001") })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.credit({ ...credit, pointType: "PHASE2_GOLD" })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.getBalances(address)).toEqual({
        PHASE2_POINTS: balance("7", "0", "0", "0"),
        PHASE2_GOLD: balance("0", "0", "0", "0"),
      });
    });

    it("scopes creditIds to their address", async () => {
      const now = await freshWindow();
      const [first, second] = [randomAddress(), randomAddress()];
      const creditId = randomId("shared");
      for (const address of [first, second]) {
        expect(await store.credit({ address, creditId, pointType: "PHASE2_POINTS", amount: units("2"), createdAtMs: now })).toEqual({
          kind: "credited",
        });
      }
      expect((await balanceOf(store, second)).earnedCumulative).toBe(units("2"));
    });

    it("refuses a credit that would take earnedCumulative past 10^18 points, changing nothing", async () => {
      const store = await isolatedStore();
      const now = await freshWindow();
      const address = randomAddress();
      await fund(store, address, "PHASE2_POINTS", "999999999999999999.999999999999", now);
      const overflowId = randomId("over");
      const tooMuch = { address, creditId: overflowId, pointType: "PHASE2_POINTS" as const, amount: 2n, createdAtMs: now };
      expect(await store.credit(tooMuch)).toEqual({ kind: "overflow" });
      // The refused creditId was not stored: the same id may be used for an amount that fits.
      expect(await store.credit({ ...tooMuch, amount: 1n })).toEqual({ kind: "credited" });
      expect((await balanceOf(store, address)).earnedCumulative).toBe(MAX_POINTS_UNITS);
      expect(await store.credit({ ...tooMuch, creditId: randomId("over"), amount: 1n })).toEqual({ kind: "overflow" });
      expect(await store.credit({ ...tooMuch, creditId: randomId("over"), amount: MAX_POINTS_UNITS + 1n })).toEqual({ kind: "overflow" });
      expect((await balanceOf(store, address)).earnedCumulative).toBe(MAX_POINTS_UNITS);
      // The other point type has its own limit.
      await fund(store, address, "PHASE2_GOLD", "1000000000000000000", now);
    });

    it("refuses a credit that would take the point type's supply (all addresses) past 10^18 points", async () => {
      const store = await isolatedStore();
      const now = await freshWindow();
      const [first, second, third] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, first, "PHASE2_POINTS", "600000000000000000", now);
      await fund(store, second, "PHASE2_POINTS", "399999999999999999.999999999999", now);
      const over = { address: third, creditId: randomId("supply"), pointType: "PHASE2_POINTS" as const, amount: 2n, createdAtMs: now };
      expect(await store.credit(over)).toEqual({ kind: "overflow" });
      expect(await balanceOf(store, third)).toEqual(balance("0", "0", "0", "0"));
      // The last unit fits; after it, nothing more of this point type can be issued to anyone.
      expect(await store.credit({ ...over, amount: 1n })).toEqual({ kind: "credited" });
      expect(await store.credit({ ...over, creditId: randomId("supply"), address: first, amount: 1n })).toEqual({ kind: "overflow" });
      // A repeated credit is still recognized; the other point type has a supply of its own.
      expect(await store.credit({ ...over, amount: 1n })).toEqual({ kind: "exists", matchesRequest: true });
      await fund(store, third, "PHASE2_GOLD", "1000000000000000000", now);
      expect((await balanceOf(store, first)).earnedCumulative).toBe(units("600000000000000000"));
      expect(await store.verify()).toEqual([]);
    });

    it("lets concurrent credits issue no more than the supply", async () => {
      const store = await isolatedStore();
      const now = await freshWindow();
      const amount = MAX_POINTS_UNITS / 4n;
      const credits = Array.from({ length: 10 }, () => ({
        address: randomAddress(),
        creditId: randomId("race"),
        pointType: "PHASE2_GOLD" as const,
        amount,
        createdAtMs: now,
      }));
      const results = await Promise.all(credits.map((credit) => store.credit(credit)));
      expect(results.filter((result) => result.kind === "credited")).toHaveLength(4);
      expect(results.filter((result) => result.kind === "overflow")).toHaveLength(6);
      expect(await store.verify()).toEqual([]);
    });
  });
}

function submitTests({ store, freshWindow }: Fixture): void {
  describe("submitBatch and getBatch", () => {
    it("accepts a covered batch, reserves its total and stores it PENDING", async () => {
      const now = await freshWindow();
      const [contract, alice, bob] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const request = batchOf(
        contract,
        [
          [alice, "1.25"],
          [bob, "2.000000000001"],
        ],
        now,
        { secondsToFinalize: 3600 },
      );
      const batch = await submitAccepted(store, request);
      expect(batch).toEqual({
        contract,
        batchId: request.batchId,
        pointType: "PHASE2_POINTS",
        status: "PENDING",
        total: units("3.250000000001"),
        transferCount: 2,
        secondsToFinalize: 3600,
        createdAtMs: now,
        finalizeAtMs: now + 3_600_000,
        updatedAtMs: null,
        finalizedAtMs: null,
        cancelledAtMs: null,
        submittedBy: SYSTEM_ACTOR,
        cancelledBy: null,
      });
      const stored = await balanceOf(store, contract);
      expect(stored).toEqual(balance("10", "0", "0", "3.250000000001"));
      expect(availableOf(stored)).toBe(units("6.749999999999"));
      // Nothing moves to recipients before finalization.
      expect(await balanceOf(store, alice)).toEqual(balance("0", "0", "0", "0"));
    });

    it("returns the transfers in submitted order", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_GOLD", "100", now);
      const recipients = Array.from({ length: 7 }, randomAddress);
      const transfers = recipients.map((address, i): [AddressKey, string] => [address, `${7 - i}.00000000000${i}`]);
      const request = batchOf(contract, transfers, now, { pointType: "PHASE2_GOLD" });
      await submitAccepted(store, request);
      const stored = await store.getBatch(contract, request.batchId);
      expect(stored?.transfers).toEqual(request.transfers);
      expect(stored?.pointType).toBe("PHASE2_GOLD");
      expect(stored?.total).toBe(request.total);
      expect(stored?.transferCount).toBe(7);
    });

    it("returns null for an unknown batchId or another contract's batch", async () => {
      const now = await freshWindow();
      const [contract, other] = [randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "1", now);
      const request = batchOf(contract, [[randomAddress(), "1"]], now);
      await submitAccepted(store, request);
      expect(await store.getBatch(contract, randomId("missing"))).toBeNull();
      expect(await store.getBatch(other, request.batchId)).toBeNull();
    });

    it("answers a reused batchId with its status and whether the request matches, changing nothing", async () => {
      const now = await freshWindow();
      const [contract, alice, bob] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "100", now);
      const request = batchOf(
        contract,
        [
          [alice, "1"],
          [bob, "2"],
        ],
        now,
        { secondsToFinalize: 120 },
      );
      await submitAccepted(store, request);
      const variants: NewBatch[] = [
        { ...request, transfers: [...request.transfers].reverse() },
        {
          ...request,
          transfers: [request.transfers[0]!, { toAddress: bob, amount: units("2.000000000001") }],
          total: units("3.000000000001"),
        },
        { ...request, transfers: [request.transfers[0]!], total: units("1") },
        { ...request, pointType: "PHASE2_GOLD" },
        { ...request, secondsToFinalize: 121 },
      ];
      // A retry of the same request, even later, matches.
      expect(await store.submitBatch({ ...request, createdAtMs: now + 5000 })).toEqual({
        kind: "exists",
        status: "PENDING",
        matchesRequest: true,
      });
      for (const variant of variants) {
        expect(await store.submitBatch(variant)).toEqual({ kind: "exists", status: "PENDING", matchesRequest: false });
      }
      expect(await balanceOf(store, contract)).toEqual(balance("100", "0", "0", "3"));
      expect(await store.cancelBatch(contract, request.batchId, now + 1)).toMatchObject({ kind: "cancelled", changed: true });
      expect(await store.submitBatch(request)).toEqual({ kind: "exists", status: "CANCELLED", matchesRequest: true });
      expect(await balanceOf(store, contract)).toEqual(balance("100", "0", "0", "0"));
    });

    it("scopes batchIds to their contract", async () => {
      const now = await freshWindow();
      const [first, second] = [randomAddress(), randomAddress()];
      const batchId = randomId("shared");
      const requests = [
        batchOf(first, [[randomAddress(), "1"]], now, { batchId }),
        batchOf(second, [[randomAddress(), "2"]], now, { batchId }),
      ];
      for (const request of requests) {
        await fund(store, request.contract, "PHASE2_POINTS", "2", now);
        expect((await store.submitBatch(request)).kind).toBe("accepted");
      }
      // Each contract reads back its own batch under the shared id, and cancelling one leaves the other.
      for (const request of requests) expect((await store.getBatch(request.contract, batchId))?.transfers).toEqual(request.transfers);
      expect(await store.cancelBatch(first, batchId, now + 1)).toMatchObject({ kind: "cancelled", changed: true });
      expect(await statusOf(store, first, batchId)).toBe("CANCELLED");
      expect(await statusOf(store, second, batchId)).toBe("PENDING");
      expect(await balanceOf(store, first)).toEqual(balance("2", "0", "0", "0"));
      expect(await balanceOf(store, second)).toEqual(balance("2", "0", "0", "2"));
    });

    it("refuses a batch over the available balance and stores nothing of it", async () => {
      const now = await freshWindow();
      const [contract, alice, bob] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "5", now);
      await submitAccepted(store, batchOf(contract, [[alice, "2"]], now));
      const request = batchOf(
        contract,
        [
          [alice, "1"],
          [bob, "2.000000000001"],
        ],
        now,
      );
      expect(await store.submitBatch(request)).toEqual({ kind: "insufficient", available: units("3"), requested: units("3.000000000001") });
      expect(await store.getBatch(contract, request.batchId)).toBeNull();
      expect(await balanceOf(store, contract)).toEqual(balance("5", "0", "0", "2"));
      const listed = await store.listBatches(contract, { sort: "ASC", limit: 10 });
      expect(listed.batches).toHaveLength(1);
      // Another point type's balance does not count.
      await fund(store, contract, "PHASE2_GOLD", "50", now);
      expect(await store.submitBatch(request)).toMatchObject({ kind: "insufficient" });
      // Exactly the available balance is enough, and the refused batchId is still free.
      const exact = { ...request, transfers: [request.transfers[0]!, { toAddress: bob, amount: units("2") }], total: units("3") };
      await submitAccepted(store, exact);
      expect(availableOf(await balanceOf(store, contract))).toBe(0n);
      expect(await store.submitBatch(batchOf(contract, [[alice, "0.000000000001"]], now))).toEqual({
        kind: "insufficient",
        available: 0n,
        requested: 1n,
      });
    });
  });
}

function listTests({ store, freshWindow }: Fixture): void {
  describe("listBatches", () => {
    /** Ten batches: equal createdAt pairs, both point types, two statuses; in listing (ASC) order. */
    async function tenBatches(): Promise<{ contract: AddressKey; now: number; asc: Batch[] }> {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "1000", now);
      await fund(store, contract, "PHASE2_GOLD", "1000", now);
      const createdOffsetsMs = [0, 1000, 1000, 2000, 3000, 3000, 3000, 4000, 5000, 6000];
      const asc: Batch[] = [];
      for (const [i, offset] of createdOffsetsMs.entries()) {
        const pointType: PointType = i % 3 === 0 ? "PHASE2_GOLD" : "PHASE2_POINTS";
        const request = batchOf(contract, [[randomAddress(), `${i + 1}`]], now + offset, {
          pointType,
          batchId: `list-${i}-${randomId("b")}`,
        });
        asc.push(await submitAccepted(store, request));
      }
      for (const i of [2, 5]) {
        const result = await store.cancelBatch(contract, asc[i]!.batchId, now + 7000);
        if (result.kind !== "cancelled") throw new Error("setup cancel failed");
        asc[i] = result.batch;
      }
      // A neighbour's batches must never show up.
      const neighbour = randomAddress();
      await fund(store, neighbour, "PHASE2_POINTS", "1", now);
      await submitAccepted(store, batchOf(neighbour, [[randomAddress(), "1"]], now + 3000));
      return { contract, now, asc };
    }

    async function pageThrough(contract: AddressKey, query: Omit<BatchQuery, "after">): Promise<string[]> {
      const seen: string[] = [];
      let after: BatchQuery["after"];
      for (let page = 0; page < 100; page++) {
        const result = await store.listBatches(contract, { ...query, after });
        expect(result.batches.length).toBeLessThanOrEqual(query.limit);
        if (result.batches.length < query.limit) expect(result.next).toBeNull();
        seen.push(...result.batches.map((b) => b.batchId));
        if (result.next === null) return seen;
        after = result.next;
      }
      throw new Error("paging did not end");
    }

    it("sorts by createdAt, ties in submission order, both ways, and returns the stored batches", async () => {
      const { contract, asc } = await tenBatches();
      const all = await store.listBatches(contract, { sort: "ASC", limit: 100 });
      expect(all).toEqual({ batches: asc, next: null });
      const desc = await store.listBatches(contract, { sort: "DESC", limit: 100 });
      expect(desc.batches).toEqual([...asc].reverse());
    });

    it("filters by pointType, status and exclusive createdBefore/createdAfter", async () => {
      const { contract, now, asc } = await tenBatches();
      const ids = async (query: Omit<BatchQuery, "sort" | "limit">) =>
        (await store.listBatches(contract, { sort: "ASC", limit: 100, ...query })).batches.map((b) => b.batchId);
      const expected = (keep: (b: Batch) => boolean) => asc.filter(keep).map((b) => b.batchId);
      expect(await ids({ pointType: "PHASE2_GOLD" })).toEqual(expected((b) => b.pointType === "PHASE2_GOLD"));
      expect(await ids({ status: "CANCELLED" })).toEqual(expected((b) => b.status === "CANCELLED"));
      expect(await ids({ status: "FINALIZED" })).toEqual([]);
      expect(await ids({ status: "PENDING", pointType: "PHASE2_POINTS" })).toEqual(
        expected((b) => b.status === "PENDING" && b.pointType === "PHASE2_POINTS"),
      );
      expect(await ids({ createdAfterMs: now + 1000 })).toEqual(expected((b) => b.createdAtMs > now + 1000));
      expect(await ids({ createdBeforeMs: now + 3000 })).toEqual(expected((b) => b.createdAtMs < now + 3000));
      expect(await ids({ createdAfterMs: now + 1000, createdBeforeMs: now + 4000 })).toEqual(
        expected((b) => b.createdAtMs > now + 1000 && b.createdAtMs < now + 4000),
      );
      expect(await ids({ createdAfterMs: now + 3000, createdBeforeMs: now + 3001 })).toEqual([]);
    });

    it("pages with limit and `after`, visiting each batch exactly once in either order", async () => {
      const { contract, asc } = await tenBatches();
      const ascIds = asc.map((b) => b.batchId);
      for (const limit of [1, 2, 3, 4, 10, 11]) {
        expect(await pageThrough(contract, { sort: "ASC", limit })).toEqual(ascIds);
        expect(await pageThrough(contract, { sort: "DESC", limit })).toEqual([...ascIds].reverse());
      }
      const pending = asc.filter((b) => b.status === "PENDING").map((b) => b.batchId);
      expect(await pageThrough(contract, { sort: "DESC", limit: 2, status: "PENDING" })).toEqual([...pending].reverse());
      const first = await store.listBatches(contract, { sort: "ASC", limit: 3 });
      expect(first.batches.map((b) => b.batchId)).toEqual(ascIds.slice(0, 3));
      expect(first.next).not.toBeNull();
    });
  });
}

function cancelTests({ store, freshWindow }: Fixture): void {
  describe("cancelBatch", () => {
    async function pendingBatch(): Promise<{ contract: AddressKey; batch: Batch; now: number }> {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const batch = await submitAccepted(store, batchOf(contract, [[randomAddress(), "4"]], now, { secondsToFinalize: 60 }));
      return { contract, batch, now };
    }

    it("stores who submitted and who cancelled with the change, on the batch and its events; a repeated cancel keeps the first canceller", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const key: Actor = { type: "api_key", id: "key_1", name: "nightly “payouts”" };
      const operator = operatorActor(contract);
      const submitted = await store.submitBatch(batchOf(contract, [[randomAddress(), "4"]], now, { secondsToFinalize: 60 }), key);
      if (submitted.kind !== "accepted") throw new Error(`expected accepted, got ${submitted.kind}`);
      expect([submitted.batch.submittedBy, submitted.batch.cancelledBy]).toEqual([key, null]);
      const { batchId } = submitted.batch;
      expect(await store.cancelBatch(contract, batchId, now + 1, operator)).toMatchObject({
        batch: { submittedBy: key, cancelledBy: operator },
      });
      expect(await store.cancelBatch(contract, batchId, now + 2, ADMIN_ACTOR)).toMatchObject({ changed: false });
      const stored = await store.getBatch(contract, batchId);
      expect([stored?.submittedBy, stored?.cancelledBy]).toEqual([key, operator]);
      const events = (await readStream(store, contract, 100)).filter((e) => e.event.type.startsWith("batch."));
      expect(events.map((e) => [e.event.type, e.event.actor])).toEqual([
        ["batch.accepted", key],
        ["batch.cancelled", operator],
      ]);
    });

    it("cancels a PENDING batch before finalizeAt and releases its reservation", async () => {
      const { contract, batch, now } = await pendingBatch();
      const cancelAtMs = batch.finalizeAtMs - 1;
      const result = await store.cancelBatch(contract, batch.batchId, cancelAtMs);
      expect(result).toEqual({
        kind: "cancelled",
        changed: true,
        batch: { ...batch, status: "CANCELLED", updatedAtMs: cancelAtMs, cancelledAtMs: cancelAtMs, cancelledBy: SYSTEM_ACTOR },
      });
      expect(await balanceOf(store, contract)).toEqual(balance("10", "0", "0", "0"));
      expect(await statusOf(store, contract, batch.batchId)).toBe("CANCELLED");
      // A cancelled batch is never finalized.
      expect(await store.finalizeDue(batch.finalizeAtMs + 1, 100)).toEqual([]);
      expect(now).toBeLessThan(cancelAtMs);
    });

    it("answers a repeated cancel with changed: false and changes nothing", async () => {
      const { contract, batch, now } = await pendingBatch();
      const first = await store.cancelBatch(contract, batch.batchId, now + 10);
      const again = await store.cancelBatch(contract, batch.batchId, now + 20);
      expect(again).toEqual({ kind: "cancelled", changed: false, batch: first.kind === "cancelled" ? first.batch : null });
      // Even after finalizeAt a CANCELLED batch stays a no-op success.
      expect(await store.cancelBatch(contract, batch.batchId, batch.finalizeAtMs + 5)).toMatchObject({ kind: "cancelled", changed: false });
      expect(await balanceOf(store, contract)).toEqual(balance("10", "0", "0", "0"));
    });

    it("refuses at and after finalizeAt, leaving the batch PENDING", async () => {
      const { contract, batch } = await pendingBatch();
      for (const nowMs of [batch.finalizeAtMs, batch.finalizeAtMs + 1]) {
        expect(await store.cancelBatch(contract, batch.batchId, nowMs)).toEqual({ kind: "not_cancellable", batch });
      }
      expect(await balanceOf(store, contract)).toEqual(balance("10", "0", "0", "4"));
    });

    it("refuses a FINALIZED batch", async () => {
      const { contract, batch } = await pendingBatch();
      expect(await store.finalizeDue(batch.finalizeAtMs, 100)).toHaveLength(1);
      const result = await store.cancelBatch(contract, batch.batchId, batch.createdAtMs + 1);
      expect(result).toMatchObject({ kind: "not_cancellable", batch: { batchId: batch.batchId, status: "FINALIZED" } });
      expect(await balanceOf(store, contract)).toEqual(balance("10", "0", "4", "0"));
    });

    it("answers not_found for an unknown batch or another contract's batch", async () => {
      const { batch, now } = await pendingBatch();
      expect(await store.cancelBatch(randomAddress(), batch.batchId, now)).toEqual({ kind: "not_found" });
      expect(await store.cancelBatch(batch.contract, randomId("missing"), now)).toEqual({ kind: "not_found" });
    });
  });
}

function finalizeTests({ store, freshWindow }: Fixture): void {
  describe("finalizeDue and nextFinalizeAtMs", () => {
    /** Three batches whose finalizeAt order (b, c, a) differs from their submission order (a, b, c). */
    async function threeBatches() {
      const now = await freshWindow();
      const [contract, alice, bob] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "100", now);
      const a = await submitAccepted(
        store,
        batchOf(
          contract,
          [
            [alice, "1"],
            [bob, "0.5"],
          ],
          now,
          { secondsToFinalize: 300 },
        ),
      );
      const b = await submitAccepted(store, batchOf(contract, [[alice, "2"]], now + 1, { secondsToFinalize: 100 }));
      const c = await submitAccepted(store, batchOf(contract, [[bob, "4.000000000001"]], now + 2, { secondsToFinalize: 200 }));
      return { now, contract, alice, bob, a, b, c };
    }

    it("finalizes only due batches, oldest finalizeAt first, moving the points once", async () => {
      const { contract, alice, bob, a, b, c } = await threeBatches();
      expect(await store.nextFinalizeAtMs()).toBe(b.finalizeAtMs);
      expect(await store.finalizeDue(b.finalizeAtMs - 1, 100)).toEqual([]);
      const due = await store.finalizeDue(c.finalizeAtMs, 100);
      expect(due).toEqual(
        [b, c].map((x) => ({
          contract,
          batchId: x.batchId,
          transferCount: x.transferCount,
          finalizeAtMs: x.finalizeAtMs,
          finalizedAtMs: c.finalizeAtMs,
        })),
      );
      expect(await store.getBatch(contract, b.batchId)).toMatchObject({
        status: "FINALIZED",
        finalizedAtMs: c.finalizeAtMs,
        updatedAtMs: c.finalizeAtMs,
        cancelledAtMs: null,
      });
      expect(await statusOf(store, contract, a.batchId)).toBe("PENDING");
      expect(await store.nextFinalizeAtMs()).toBe(a.finalizeAtMs);
      expect(await balanceOf(store, contract)).toEqual(balance("100", "0", "6.000000000001", "1.5"));
      expect(await balanceOf(store, alice)).toEqual(balance("0", "2", "0", "0"));
      expect(await balanceOf(store, bob)).toEqual(balance("0", "4.000000000001", "0", "0"));
    });

    it("finalizes each batch exactly once even when called again", async () => {
      const { contract, alice, bob, a, b, c } = await threeBatches();
      const first = await store.finalizeDue(a.finalizeAtMs + 10, 100);
      expect(first.map((x) => x.batchId)).toEqual([b, c, a].map((x) => x.batchId));
      expect(await store.finalizeDue(a.finalizeAtMs + 10, 100)).toEqual([]);
      expect(await store.finalizeDue(a.finalizeAtMs + 20_000, 100)).toEqual([]);
      expect(await balanceOf(store, contract)).toEqual(balance("100", "0", "7.500000000001", "0"));
      expect(await balanceOf(store, alice)).toEqual(balance("0", "3", "0", "0"));
      expect(await balanceOf(store, bob)).toEqual(balance("0", "4.500000000001", "0", "0"));
      const next = await store.nextFinalizeAtMs();
      // Nothing of this window is left pending (a later window may hold an earlier run's leftovers).
      expect(next === null || next > a.finalizeAtMs + 20_000).toBe(true);
    });

    it("counts PENDING batches due before a time, up to a limit (countOverdueBatches, the /metrics gauge)", async () => {
      const { contract, a, b, c } = await threeBatches();
      expect(await store.countOverdueBatches(b.finalizeAtMs, 100)).toBe(0);
      expect(await store.countOverdueBatches(b.finalizeAtMs + 1, 100)).toBe(1);
      expect(await store.countOverdueBatches(a.finalizeAtMs + 1, 100)).toBe(3);
      expect(await store.countOverdueBatches(a.finalizeAtMs + 1, 2)).toBe(2);
      // Cancelled and finalized batches are not overdue.
      await store.cancelBatch(contract, c.batchId, c.finalizeAtMs - 1);
      expect(await store.finalizeDue(b.finalizeAtMs, 100)).toHaveLength(1);
      expect(await store.countOverdueBatches(a.finalizeAtMs + 1, 100)).toBe(1);
    });

    it("respects the limit, taking the oldest first", async () => {
      const { a, b, c } = await threeBatches();
      const nowMs = a.finalizeAtMs;
      expect((await store.finalizeDue(nowMs, 1)).map((x) => x.batchId)).toEqual([b.batchId]);
      expect((await store.finalizeDue(nowMs, 1)).map((x) => x.batchId)).toEqual([c.batchId]);
      expect((await store.finalizeDue(nowMs, 5)).map((x) => x.batchId)).toEqual([a.batchId]);
    });

    it("skips cancelled batches and lets recipients spend what they received", async () => {
      const { contract, alice, a, b, c } = await threeBatches();
      await store.cancelBatch(contract, b.batchId, b.finalizeAtMs - 1);
      expect(await store.nextFinalizeAtMs()).toBe(c.finalizeAtMs);
      const done = await store.finalizeDue(a.finalizeAtMs, 100);
      expect(done.map((x) => x.batchId)).toEqual([c.batchId, a.batchId]);
      // alice received 1 point and may pass it on: received points count as available.
      const onward = await submitAccepted(store, batchOf(alice, [[randomAddress(), "1"]], a.finalizeAtMs));
      expect(await balanceOf(store, alice)).toEqual(balance("0", "1", "0", "1"));
      expect(await store.submitBatch(batchOf(alice, [[randomAddress(), "0.000000000001"]], a.finalizeAtMs))).toMatchObject({
        kind: "insufficient",
      });
      expect(onward.status).toBe("PENDING");
    });
  });
}

function authTests({ store, freshWindow }: Fixture): void {
  describe("operators, tokens and challenges", () => {
    const token = (contract: AddressKey, operator: AddressKey, createdAtMs: number, ttlMs: number) => ({
      tokenHash: randomBytes(32),
      contract,
      operator,
      createdAtMs,
      expiresAtMs: createdAtMs + ttlMs,
    });

    it("registers and changes an operator; a change revokes that contract's tokens only", async () => {
      const now = await freshWindow();
      const [contract, otherContract, first, second] = [randomAddress(), randomAddress(), randomAddress(), randomAddress()];
      expect(await store.getOperator(contract)).toBeNull();
      await store.setOperator(contract, first, now);
      await store.setOperator(otherContract, first, now);
      expect(await store.getOperator(contract)).toBe(first);
      const kept = token(contract, first, now, 3_600_000);
      const elsewhere = token(otherContract, first, now, 3_600_000);
      await store.createToken(kept);
      await store.createToken(elsewhere);
      expect(await store.findToken(kept.tokenHash, now + 1)).toEqual({ contract, operator: first, expiresAtMs: kept.expiresAtMs });
      // Setting the same operator again is not a change.
      await store.setOperator(contract, first, now + 2);
      expect(await store.findToken(kept.tokenHash, now + 3)).not.toBeNull();
      await store.setOperator(contract, second, now + 4);
      expect(await store.getOperator(contract)).toBe(second);
      expect(await store.findToken(kept.tokenHash, now + 5)).toBeNull();
      expect(await store.findToken(elsewhere.tokenHash, now + 5)).toEqual({
        contract: otherContract,
        operator: first,
        expiresAtMs: elsewhere.expiresAtMs,
      });
      const fresh = token(contract, second, now + 6, 1000);
      await store.createToken(fresh);
      expect(await store.findToken(fresh.tokenHash, now + 7)).toMatchObject({ operator: second });
      // Changing back does not revive the revoked token.
      await store.setOperator(contract, first, now + 8);
      expect(await store.findToken(kept.tokenHash, now + 9)).toBeNull();
    });

    it("expires tokens at expiresAt and ignores unknown hashes", async () => {
      const now = await freshWindow();
      const [contract, operator] = [randomAddress(), randomAddress()];
      await store.setOperator(contract, operator, now);
      const grant = token(contract, operator, now, 1000);
      await store.createToken(grant);
      expect(await store.findToken(grant.tokenHash, grant.expiresAtMs - 1)).not.toBeNull();
      expect(await store.findToken(grant.tokenHash, grant.expiresAtMs)).toBeNull();
      expect(await store.findToken(randomBytes(32), now)).toBeNull();
    });

    it("records a challenge nonce as used once: the first use is true, every later one false", async () => {
      const now = await freshWindow();
      const nonce = randomBytes(16).toString("hex");
      expect(await store.useChallengeNonce(nonce, now + 300_000)).toBe(true);
      expect(await store.useChallengeNonce(nonce, now + 300_000)).toBe(false);
      expect(await store.useChallengeNonce(randomBytes(16).toString("hex"), now + 300_000)).toBe(true);
    });

    it("keeps the first challenge key stored and hands it to every later caller", async () => {
      const first = await store.serverKey("challenge", randomBytes(32));
      const second = await store.serverKey("challenge", randomBytes(32));
      expect(first).toHaveLength(32);
      expect(second.equals(first)).toBe(true);
    });

    it("purgeExpired deletes expired tokens and used nonces and keeps live ones", async () => {
      const now = await freshWindow();
      const [contract, operator] = [randomAddress(), randomAddress()];
      await store.setOperator(contract, operator, now);
      const [shortToken, longToken] = [token(contract, operator, now, 10), token(contract, operator, now, 60_000)];
      await store.createToken(shortToken);
      await store.createToken(longToken);
      const [shortNonce, longNonce] = [randomBytes(16).toString("hex"), randomBytes(16).toString("hex")];
      await store.useChallengeNonce(shortNonce, now + 10);
      await store.useChallengeNonce(longNonce, now + 60_000);
      await store.purgeExpired(now + 10);
      // Asked about an earlier time, only a deleted row can answer null; only a deleted nonce is new again.
      expect(await store.findToken(shortToken.tokenHash, now)).toBeNull();
      expect(await store.useChallengeNonce(shortNonce, now + 10)).toBe(true);
      expect(await store.findToken(longToken.tokenHash, now)).not.toBeNull();
      expect(await store.useChallengeNonce(longNonce, now + 60_000)).toBe(false);
    });
  });
}

function exactAmountTests({ store, freshWindow, isolatedStore }: Fixture): void {
  describe("exact amounts", () => {
    it("keeps amounts near 10^18 points exact through submit, finalize and spending", async () => {
      const store = await isolatedStore();
      const now = await freshWindow();
      const [contract, whale, dust] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "999999999999999999.999999999999", now);
      const big = await submitAccepted(
        store,
        batchOf(
          contract,
          [
            [whale, "999999999999999999.999999999998"],
            [dust, "0.000000000001"],
          ],
          now,
          { secondsToFinalize: 1 },
        ),
      );
      expect(big.total).toBe(MAX_POINTS_UNITS - 1n);
      expect(availableOf(await balanceOf(store, contract))).toBe(0n);
      expect(await store.finalizeDue(big.finalizeAtMs, 10)).toHaveLength(1);
      expect(await balanceOf(store, contract)).toEqual(
        balance("999999999999999999.999999999999", "0", "999999999999999999.999999999999", "0"),
      );
      expect(formatPoints((await balanceOf(store, whale)).receivedCumulative)).toBe("999999999999999999.999999999998");
      expect((await balanceOf(store, dust)).receivedCumulative).toBe(1n);
      // The whale sends everything back; the sender ends with exactly 10^18 - 1 unit available again.
      const back = await submitAccepted(
        store,
        batchOf(whale, [[contract, "999999999999999999.999999999998"]], big.finalizeAtMs, { secondsToFinalize: 1 }),
      );
      expect(await store.finalizeDue(back.finalizeAtMs, 10)).toHaveLength(1);
      const final = await balanceOf(store, contract);
      expect(final.receivedCumulative).toBe(MAX_POINTS_UNITS - 2n);
      expect(availableOf(final)).toBe(MAX_POINTS_UNITS - 2n);
      expect(availableOf(await balanceOf(store, whale))).toBe(0n);
      expect(await store.verify()).toEqual([]);
    });

    it("carries fractional units across whole points when a recipient receives twice", async () => {
      const now = await freshWindow();
      const [contract, recipient] = [randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_GOLD", "10", now);
      for (const points of ["0.6", "0.999999999999", "0.400000000001"]) {
        await submitAccepted(store, batchOf(contract, [[recipient, points]], now, { pointType: "PHASE2_GOLD", secondsToFinalize: 1 }));
      }
      expect(await store.finalizeDue(now + 1000, 10)).toHaveLength(3);
      expect((await balanceOf(store, recipient, "PHASE2_GOLD")).receivedCumulative).toBe(units("2"));
      expect(await balanceOf(store, contract, "PHASE2_GOLD")).toEqual(balance("10", "0", "2", "0"));
    });
  });
}

function concurrencyTests({ store, freshWindow }: Fixture): void {
  describe("concurrent calls", () => {
    it("many concurrent submits never overdraw", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const amounts = Array.from({ length: 24 }, (_, i) => `${(i % 4) + 1}`);
      const requests = amounts.map((points) => batchOf(contract, [[randomAddress(), points]], now));
      const results = await Promise.all(requests.map((request) => store.submitBatch(request)));
      const accepted = requests.filter((_, i) => results[i]!.kind === "accepted");
      const acceptedTotal = accepted.reduce((sum, r) => sum + r.total, 0n);
      expect(acceptedTotal).toBeLessThanOrEqual(units("10"));
      const stored = await balanceOf(store, contract);
      expect(stored.pendingSent).toBe(acceptedTotal);
      // Available only fell during the race, so every refused batch exceeds what is left now.
      for (const [i, result] of results.entries()) {
        expect(["accepted", "insufficient"]).toContain(result.kind);
        if (result.kind === "insufficient") expect(requests[i]!.total).toBeGreaterThan(availableOf(stored));
      }
      const listed = await store.listBatches(contract, { sort: "ASC", limit: 100 });
      expect(listed.batches).toHaveLength(accepted.length);
    });

    it("concurrent submits of one batchId accept it once", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const request = batchOf(contract, [[randomAddress(), "3"]], now);
      const results = await Promise.all(Array.from({ length: 10 }, () => store.submitBatch(request)));
      expect(results.filter((r) => r.kind === "accepted")).toHaveLength(1);
      expect(results.filter((r) => r.kind !== "accepted")).toEqual(
        Array.from({ length: 9 }, () => ({ kind: "exists", status: "PENDING", matchesRequest: true })),
      );
      expect(await balanceOf(store, contract)).toEqual(balance("10", "0", "0", "3"));
    });

    it("concurrent credits with one creditId credit once", async () => {
      const now = await freshWindow();
      const address = randomAddress();
      const credit = { address, creditId: randomId("c"), pointType: "PHASE2_GOLD" as const, amount: units("2.5"), createdAtMs: now };
      const results = await Promise.all(Array.from({ length: 10 }, () => store.credit(credit)));
      expect(results.filter((r) => r.kind === "credited")).toHaveLength(1);
      expect((await balanceOf(store, address, "PHASE2_GOLD")).earnedCumulative).toBe(units("2.5"));
    });

    it("concurrent finalizeDue calls finalize each batch exactly once", async () => {
      const now = await freshWindow();
      const [contract, recipient] = [randomAddress(), randomAddress()];
      await fund(store, contract, "PHASE2_POINTS", "100", now);
      const batches: Batch[] = [];
      for (let i = 0; i < 8; i++) {
        batches.push(await submitAccepted(store, batchOf(contract, [[recipient, "1.5"]], now + i, { secondsToFinalize: 10 })));
      }
      const runs = await Promise.all(Array.from({ length: 4 }, () => store.finalizeDue(now + 60_000, 100)));
      const finalizedIds = runs.flat().map((f) => f.batchId);
      expect([...finalizedIds].sort()).toEqual(batches.map((b) => b.batchId).sort());
      expect(await balanceOf(store, contract)).toEqual(balance("100", "0", "12", "0"));
      expect((await balanceOf(store, recipient)).receivedCumulative).toBe(units("12"));
    });

    it("cancel racing finalization: exactly one wins", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "100", now);
      for (let i = 0; i < 6; i++) {
        const batch = await submitAccepted(store, batchOf(contract, [[randomAddress(), "1"]], now + i * 1000, { secondsToFinalize: 1 }));
        const [cancel, finalized] = await Promise.all([
          store.cancelBatch(contract, batch.batchId, batch.finalizeAtMs - 1),
          store.finalizeDue(batch.finalizeAtMs, 10),
        ]);
        const cancelWon = cancel.kind === "cancelled" && cancel.changed;
        const finalizeWon = finalized.some((f) => f.batchId === batch.batchId);
        expect(cancelWon !== finalizeWon, `cancel ${cancel.kind}, finalized ${finalizeWon}`).toBe(true);
        expect(await statusOf(store, contract, batch.batchId)).toBe(cancelWon ? "CANCELLED" : "FINALIZED");
      }
      const stored = await balanceOf(store, contract);
      expect(stored.pendingSent).toBe(0n);
      expect(stored.finalizedSentCumulative).toBeLessThanOrEqual(units("6"));
      expect(await store.verify()).toEqual([]);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Fair and isolated finalization (issue 8 items 6 and 13).

/** The contracts of `batches`, counted. */
function perContract(batches: { contract: AddressKey }[]): Map<AddressKey, number> {
  const counts = new Map<AddressKey, number>();
  for (const batch of batches) counts.set(batch.contract, (counts.get(batch.contract) ?? 0) + 1);
  return counts;
}

function fairFinalizeTests({ store, freshWindow }: Fixture): void {
  describe("fair finalization across contracts", () => {
    it("claims due batches round-robin by contract: a batch behind another contract's backlog goes in the first pass", async () => {
      const now = await freshWindow();
      const [backlog, few, late] = [randomAddress(), randomAddress(), randomAddress()];
      for (const contract of [backlog, few, late]) await fund(store, contract, "PHASE2_POINTS", "100", now);
      const backlogBatches: Batch[] = [];
      for (let i = 0; i < 30; i++) {
        backlogBatches.push(await submitAccepted(store, batchOf(backlog, [[randomAddress(), "1"]], now + i, { secondsToFinalize: 1 })));
      }
      const fewBatches = [
        await submitAccepted(store, batchOf(few, [[randomAddress(), "1"]], now + 30, { secondsToFinalize: 1 })),
        await submitAccepted(store, batchOf(few, [[randomAddress(), "1"]], now + 31, { secondsToFinalize: 1 })),
      ];
      // Submitted after the whole backlog and due after it: oldest-first would take it last.
      const lateBatch = await submitAccepted(store, batchOf(late, [[randomAddress(), "1"]], now + 40, { secondsToFinalize: 1 }));
      const dueMs = lateBatch.finalizeAtMs;

      const first = await store.finalizeDue(dueMs, 3);
      expect(perContract(first)).toEqual(
        new Map([
          [backlog, 1],
          [few, 1],
          [late, 1],
        ]),
      );
      expect(first.map((b) => b.batchId).sort()).toEqual([backlogBatches[0]!, fewBatches[0]!, lateBatch].map((b) => b.batchId).sort());
      const second = await store.finalizeDue(dueMs, 3);
      expect(perContract(second)).toEqual(
        new Map([
          [backlog, 2],
          [few, 1],
        ]),
      );
      expect(second.map((b) => b.batchId).sort()).toEqual(
        [backlogBatches[1]!, backlogBatches[2]!, fewBatches[1]!].map((b) => b.batchId).sort(),
      );

      // The rest of the backlog, oldest first, each batch once.
      const rest: string[] = [];
      for (let pass = 0; pass < MAX_DRAIN_PASSES; pass++) {
        const finalized = await store.finalizeDue(dueMs, 3);
        if (finalized.length === 0) break;
        rest.push(...finalized.map((b) => b.batchId));
      }
      expect(rest).toEqual(backlogBatches.slice(3).map((b) => b.batchId));
      expect(await balanceOf(store, backlog)).toEqual(balance("100", "0", "30", "0"));
    });
  });
}

function failingFinalizeTests({ store, freshWindow }: Fixture, breakBatch: StoreContractOptions["breakBatch"]): void {
  describe("a batch whose finalization fails", () => {
    const test = breakBatch ? it : it.skip;

    test("is set aside with its failure stored while every other due batch finalizes, even more of them than the per-pass limit", async () => {
      const now = await freshWindow();
      const [broken, healthy] = [randomAddress(), randomAddress()];
      await fund(store, broken, "PHASE2_POINTS", "100", now);
      await fund(store, healthy, "PHASE2_POINTS", "100", now);
      const failing: Batch[] = [];
      for (let i = 0; i < 5; i++) {
        failing.push(await submitAccepted(store, batchOf(broken, [[randomAddress(), "1"]], now + i, { secondsToFinalize: 1 })));
      }
      const repairs = await Promise.all(failing.map((batch) => breakBatch!(broken, batch.batchId)));
      const healthyBatches: Batch[] = [];
      for (let i = 0; i < 4; i++) {
        healthyBatches.push(
          await submitAccepted(store, batchOf(healthy, [[randomAddress(), "1"]], now + 10 + i, { secondsToFinalize: 1 })),
        );
      }
      const failingBefore = await store.countFailingBatches();
      const dueMs = now + 60_000;

      const failures: FinalizeFailure[] = [];
      const finalized: string[] = [];
      for (let pass = 0; pass < MAX_DRAIN_PASSES; pass++) {
        let failedThisPass = 0;
        const done = await store.finalizeDue(dueMs, 2, (failure) => {
          failedThisPass++;
          failures.push(failure);
        });
        finalized.push(...done.map((b) => b.batchId));
        if (done.length === 0 && failedThisPass === 0) break;
      }
      expect(finalized.sort()).toEqual(healthyBatches.map((b) => b.batchId).sort());
      // Each failing batch was tried once: its backoff keeps later passes at the same time off it.
      expect(failures.map((f) => f.batchId).sort()).toEqual(failing.map((b) => b.batchId).sort());
      for (const failure of failures) {
        expect(failure).toMatchObject({ contract: broken, failures: 1, retryAtMs: dueMs + FINALIZE_RETRY_BASE_MS });
        expect(failure.error).toBeInstanceOf(Error);
      }
      for (const batch of failing) expect(await statusOf(store, broken, batch.batchId)).toBe("PENDING");
      expect(await store.countFailingBatches()).toBe(failingBefore + failing.length);
      expect(await balanceOf(store, broken)).toEqual(balance("100", "0", "0", "5"));
      expect(await balanceOf(store, healthy)).toEqual(balance("100", "0", "4", "0"));
      expect(await store.nextFinalizeAtMs()).toBe(dueMs + FINALIZE_RETRY_BASE_MS);

      // Repaired, they wait out the backoff, then finalize.
      for (const repair of repairs) await repair();
      expect(await store.finalizeDue(dueMs + FINALIZE_RETRY_BASE_MS - 1, 10)).toEqual([]);
      const retried = await store.finalizeDue(dueMs + FINALIZE_RETRY_BASE_MS, 10);
      expect(retried.map((b) => b.batchId).sort()).toEqual(failing.map((b) => b.batchId).sort());
      expect(await store.countFailingBatches()).toBe(failingBefore);
      expect(await balanceOf(store, broken)).toEqual(balance("100", "0", "5", "0"));
      expect(await store.verify()).toEqual([]);
    });

    test("is retried after a backoff that doubles with each failure, up to a bound", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const batch = await submitAccepted(store, batchOf(contract, [[randomAddress(), "1"]], now, { secondsToFinalize: 1 }));
      const repair = await breakBatch!(contract, batch.batchId);
      let atMs = batch.finalizeAtMs;
      const delays: number[] = [];
      for (let attempt = 1; attempt <= FINALIZE_RETRY_MAX_DOUBLINGS + 3; attempt++) {
        const failures: FinalizeFailure[] = [];
        expect(await store.finalizeDue(atMs, 10, (failure) => failures.push(failure))).toEqual([]);
        expect(failures).toHaveLength(1);
        expect(failures[0]!.failures).toBe(attempt);
        delays.push(failures[0]!.retryAtMs - atMs);
        atMs = failures[0]!.retryAtMs;
      }
      const expected = delays.map((_, i) => Math.min(FINALIZE_RETRY_MAX_MS, FINALIZE_RETRY_BASE_MS * 2 ** i));
      expect(delays).toEqual(expected);
      expect(delays[delays.length - 1]).toBe(FINALIZE_RETRY_MAX_MS);
      await repair();
      expect((await store.finalizeDue(atMs, 10)).map((b) => b.batchId)).toEqual([batch.batchId]);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Point types are configuration, and credits may name an asset and a block.

function configuredPointTypeTests({ store, freshWindow, isolatedStore }: Fixture): void {
  describe("configured point types", () => {
    it("keeps each point type its own pool, and getBalances answers exactly the types asked for", async () => {
      const now = await freshWindow();
      const [sender, recipient] = [randomAddress(), randomAddress()];
      await fund(store, sender, "LIQUIDITY", "10", now);
      await fund(store, sender, "DEVELOPER", "3", now);
      expect(await store.submitBatch(batchOf(sender, [[recipient, "11"]], now, { pointType: "LIQUIDITY" }))).toMatchObject({
        kind: "insufficient",
        available: units("10"),
      });
      await submitAccepted(store, batchOf(sender, [[recipient, "4"]], now, { pointType: "LIQUIDITY" }));
      const types = ["PHASE2_POINTS", "LIQUIDITY", "DEVELOPER", "XP"] as const;
      expect(await store.getBalances(sender, types)).toEqual({
        PHASE2_POINTS: balance("0", "0", "0", "0"),
        LIQUIDITY: balance("10", "0", "0", "4"),
        DEVELOPER: balance("3", "0", "0", "0"),
        XP: balance("0", "0", "0", "0"),
      });
      // A type not asked for is left out, whatever the address holds of it.
      expect(Object.keys(await store.getBalances(sender, ["XP"]))).toEqual(["XP"]);
      expect(await store.pointTypesInUse()).toEqual(expect.arrayContaining(["LIQUIDITY", "DEVELOPER"]));
    });

    it("pointTypesInUse() names every type with a credit, a batch or a balance, and nothing else", async () => {
      const isolated = await isolatedStore();
      const now = await freshWindow();
      expect(await isolated.pointTypesInUse()).toEqual([]);
      const [first, second, recipient] = [randomAddress(), randomAddress(), randomAddress()];
      await fund(isolated, first, "XP", "5", now);
      await fund(isolated, second, "GEMS", "5", now);
      await submitAccepted(isolated, batchOf(second, [[recipient, "1"]], now, { pointType: "GEMS", secondsToFinalize: 1 }));
      await finalizeEverythingDue(isolated, now + 2000);
      expect([...(await isolated.pointTypesInUse())].sort()).toEqual(["GEMS", "XP"]);
    });
  });
}

function assetEarningsTests({ store, freshWindow }: Fixture): void {
  describe("credits that name an asset and a block", () => {
    it("sums credits per (point type, asset) exactly and keeps the highest block; others feed no asset", async () => {
      const now = await freshWindow();
      const address = randomAddress();
      const model = new LedgerModel();
      const credits = [
        { pointType: "PHASE2_POINTS", points: "1.000000000001", asset: "ETH", block: 100 },
        { pointType: "PHASE2_POINTS", points: "0.999999999999", asset: "ETH", block: 90 },
        { pointType: "PHASE2_POINTS", points: "999999999999.5", asset: "ETH", block: null },
        { pointType: "PHASE2_POINTS", points: "2", asset: "USDB", block: null },
        { pointType: "PHASE2_GOLD", points: "0.000001", asset: "ETH", block: 7 },
        { pointType: "PHASE2_POINTS", points: "5", asset: null, block: 1_000_000 },
        { pointType: "PHASE2_POINTS", points: "6", asset: null, block: null },
      ];
      for (const [i, credit] of credits.entries()) {
        const request = {
          address,
          creditId: randomId(`asset${i}`),
          pointType: credit.pointType,
          amount: units(credit.points),
          createdAtMs: now,
        };
        const withSource = { ...request, asset: credit.asset, block: credit.block };
        expect(await store.credit(withSource)).toEqual({ kind: "credited" });
        expect(model.credit(withSource)).toEqual({ kind: "credited" });
      }
      const stored = [...(await store.getAssetEarnings(address))].sort(byPointTypeThenAsset);
      expect(stored).toEqual(model.assetEarningsOf(address));
      expect(stored).toEqual([
        { pointType: "PHASE2_GOLD", asset: "ETH", earnedCumulative: units("0.000001"), earnedCumulativeBlock: 7 },
        { pointType: "PHASE2_POINTS", asset: "ETH", earnedCumulative: units("1000000000001.5"), earnedCumulativeBlock: 100 },
        { pointType: "PHASE2_POINTS", asset: "USDB", earnedCumulative: units("2"), earnedCumulativeBlock: 0 },
      ]);
      // earnedCumulative still counts every credit, with an asset or without.
      expect((await balanceOf(store, address)).earnedCumulative).toBe(units("1000000000014.5"));
      expect(await store.getAssetEarnings(randomAddress())).toEqual([]);
    });

    it("a reused creditId matches only with the same asset and block", async () => {
      const now = await freshWindow();
      const address = randomAddress();
      const credit = {
        address,
        creditId: randomId("src"),
        pointType: "PHASE2_POINTS",
        amount: units("3"),
        createdAtMs: now,
        asset: "ETH",
        block: 12,
      };
      expect(await store.credit(credit)).toEqual({ kind: "credited" });
      expect(await store.credit(credit)).toEqual({ kind: "exists", matchesRequest: true });
      expect(await store.credit({ ...credit, asset: "WETH" })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.credit({ ...credit, asset: null })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.credit({ ...credit, block: 13 })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.credit({ ...credit, block: null })).toEqual({ kind: "exists", matchesRequest: false });
      const plain = { address, creditId: randomId("plain"), pointType: "PHASE2_POINTS", amount: units("1"), createdAtMs: now };
      expect(await store.credit(plain)).toEqual({ kind: "credited" });
      // Absent and null both mean "no asset, no block".
      expect(await store.credit({ ...plain, asset: null, block: null })).toEqual({ kind: "exists", matchesRequest: true });
      expect(await store.credit({ ...plain, asset: "ETH" })).toEqual({ kind: "exists", matchesRequest: false });
      expect(await store.getAssetEarnings(address)).toEqual([
        { pointType: "PHASE2_POINTS", asset: "ETH", earnedCumulative: units("3"), earnedCumulativeBlock: 12 },
      ]);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The event log: every transition appends exactly its events, in its own transaction.

/** Every event of `stream` (a contract or credited address), paged `limit` at a time. */
/**
 * Every event of a stream, read page by page. On PostgreSQL a reader sees an event only once no
 * older transaction is still open (the xmin rule of the event log), and test files running beside
 * this one hold transactions open for a moment: `atLeast` waits (bounded) until that many are visible.
 */
async function streamEvents(store: LedgerStore, stream: AddressKey, limit = 1000, atLeast = 0): Promise<StoredEvent[]> {
  for (let attempt = 0; ; attempt++) {
    const events = await readStream(store, stream, limit);
    if (events.length >= atLeast || attempt >= VISIBILITY_POLLS) return events;
    await new Promise((resolve) => setTimeout(resolve, VISIBILITY_POLL_MS));
  }
}

const VISIBILITY_POLLS = 100;
const VISIBILITY_POLL_MS = 50;

async function readStream(store: LedgerStore, stream: AddressKey, limit: number): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_DRAIN_PASSES; page++) {
    const result = await store.listEvents({ stream, after, types: null, limit });
    if (result.kind !== "page") throw new Error("cursor expired");
    events.push(...result.events);
    after = result.position;
    if (!result.hasMore) return events;
  }
  throw new Error("listEvents kept saying hasMore");
}

function eventSummary(events: StoredEvent[]): [string, string | null][] {
  return events.map(({ event }) => [event.type, (event.data as { batch?: { id: string; status: string } }).batch?.status ?? null]);
}

function eventLogTests({ store, freshWindow }: Fixture): void {
  describe("the event log", () => {
    it("appends exactly one event per transition, on the right stream, with the batch as it is after the change", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      const kept = await submitAccepted(store, batchOf(contract, [[randomAddress(), "2"]], now + 1, { secondsToFinalize: 60 }));
      const dropped = await submitAccepted(store, batchOf(contract, [[randomAddress(), "3"]], now + 2, { secondsToFinalize: 60 }));
      const cancel = await store.cancelBatch(contract, dropped.batchId, now + 3);
      expect(cancel).toMatchObject({ kind: "cancelled", changed: true });
      expect(await store.finalizeDue(kept.finalizeAtMs, 100)).toHaveLength(1);
      const events = await streamEvents(store, contract, 1000, 5);
      expect(eventSummary(events)).toEqual([
        ["credit.created", null],
        ["batch.accepted", "PENDING"],
        ["batch.accepted", "PENDING"],
        ["batch.cancelled", "CANCELLED"],
        ["batch.finalized", "FINALIZED"],
      ]);
      const finalized = events[4]!.event;
      expect(finalized.stream).toBe(contract);
      expect(finalized.occurredAtMs).toBe(kept.finalizeAtMs);
      expect(finalized.data).toMatchObject({
        batch: { id: kept.batchId, points: "2", finalizedAt: new Date(kept.finalizeAtMs).toISOString() },
      });
      expect(new Set(events.map(({ event }) => event.id)).size).toBe(events.length);
      expect(events.every(({ event }) => /^evt_[0-9a-f]{32}$/.test(event.id))).toBe(true);
    });

    it("appends nothing for a refused or repeated request (insufficient, existing batchId, repeated cancel, late cancel, credit reuse)", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      const creditId = randomId("credit");
      await store.credit({ address: contract, creditId, pointType: "PHASE2_POINTS", amount: units("5"), createdAtMs: now });
      const batch = await submitAccepted(store, batchOf(contract, [[randomAddress(), "1"]], now + 1));
      const before = await streamEvents(store, contract, 1000, 2);
      expect((await store.submitBatch(batchOf(contract, [[randomAddress(), "100"]], now + 2))).kind).toBe("insufficient");
      expect((await store.submitBatch({ ...batchOf(contract, [[randomAddress(), "1"]], now + 3), batchId: batch.batchId })).kind).toBe(
        "exists",
      );
      expect(
        (await store.credit({ address: contract, creditId, pointType: "PHASE2_POINTS", amount: units("5"), createdAtMs: now })).kind,
      ).toBe("exists");
      expect(await store.cancelBatch(contract, batch.batchId, batch.finalizeAtMs)).toMatchObject({ kind: "not_cancellable" });
      await store.cancelBatch(contract, batch.batchId, now + 4);
      await store.cancelBatch(contract, batch.batchId, now + 5);
      const after = await streamEvents(store, contract, 1000, before.length + 1);
      expect(eventSummary(after)).toEqual([...eventSummary(before), ["batch.cancelled", "CANCELLED"]]);
    });

    it("puts credit.created on the credited address's stream and operator.changed on the contract's, only when it changes", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      const [first, second] = [randomAddress(), randomAddress()];
      await store.setOperator(contract, first, now);
      await store.setOperator(contract, first, now + 1);
      await store.setOperator(contract, second, now + 2);
      await store.credit({
        address: contract,
        creditId: randomId("c"),
        pointType: "PHASE2_GOLD",
        amount: units("0.5"),
        createdAtMs: now + 3,
        asset: "ETH",
        block: 7,
      });
      const events = (await streamEvents(store, contract, 1000, 3)).map(({ event }) => [event.type, event.data]);
      expect(events).toEqual([
        ["operator.changed", { operatorAddress: checksum(first), previousOperatorAddress: null }],
        ["operator.changed", { operatorAddress: checksum(second), previousOperatorAddress: checksum(first) }],
        ["credit.created", { creditId: expect.any(String), pointType: "PHASE2_GOLD", points: "0.5", asset: "ETH", block: 7 }],
      ]);
    });

    it("pages with any limit to the same sequence, filters by type, and shows no other stream's events", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      const other = randomAddress();
      await fund(store, contract, "PHASE2_POINTS", "10", now);
      await fund(store, other, "PHASE2_POINTS", "10", now);
      for (let i = 0; i < 4; i++) {
        await submitAccepted(store, batchOf(contract, [[randomAddress(), "1"]], now + 10 + i));
        await submitAccepted(store, batchOf(other, [[randomAddress(), "1"]], now + 10 + i));
      }
      const whole = await streamEvents(store, contract, 1000, 5);
      expect(whole).toHaveLength(5);
      for (const limit of [1, 2, 3]) expect(await streamEvents(store, contract, limit)).toEqual(whole);
      const accepted = await store.listEvents({ stream: contract, after: null, types: ["batch.accepted"], limit: 100 });
      expect(accepted.kind === "page" && accepted.events.map(({ event }) => event.type)).toEqual(Array(4).fill("batch.accepted"));
      const all = await store.listEvents({ stream: null, after: whole[0]!.position, types: null, limit: 1000 });
      const streams = new Set(all.kind === "page" ? all.events.map(({ event }) => event.stream) : []);
      expect(streams.has(contract) && streams.has(other)).toBe(true);
      // At the end of the stream the position moves on past other streams' events (a quiet
      // reader's cursor keeps up), yet the contract's next event is still the next one read.
      await submitAccepted(store, batchOf(other, [[randomAddress(), "1"]], now + 20));
      const end = await store.listEvents({ stream: contract, after: whole.at(-1)!.position, types: null, limit: 10 });
      expect(end).toMatchObject({ kind: "page", events: [], hasMore: false });
      const next = await submitAccepted(store, batchOf(contract, [[randomAddress(), "1"]], now + 21));
      const resumed = await store.listEvents({
        stream: contract,
        after: end.kind === "page" ? end.position : null,
        types: null,
        limit: 10,
      });
      expect(resumed.kind === "page" && resumed.events.map(({ event }) => (event.data as { batch: { id: string } }).batch.id)).toEqual([
        next.batchId,
      ]);
    });

    it("hands each committed transaction's events to listeners, and none of a refused or rolled-back one", async () => {
      const now = await freshWindow();
      const contract = randomAddress();
      const heard: string[][] = [];
      const unsubscribe = store.onCommittedEvents((events) => heard.push(events.map((event) => event.type)));
      try {
        await fund(store, contract, "PHASE2_POINTS", "3", now);
        const batch = await submitAccepted(store, batchOf(contract, [[randomAddress(), "2"]], now + 1));
        expect((await store.submitBatch(batchOf(contract, [[randomAddress(), "5"]], now + 2))).kind).toBe("insufficient");
        expect((await store.submitBatch({ ...batchOf(contract, [[randomAddress(), "1"]], now + 3), batchId: batch.batchId })).kind).toBe(
          "exists",
        );
        await store.cancelBatch(contract, batch.batchId, now + 4);
        await store.cancelBatch(contract, batch.batchId, now + 5);
        expect(heard).toEqual([["credit.created"], ["batch.accepted"], ["batch.cancelled"]]);
      } finally {
        unsubscribe();
      }
      await fund(store, contract, "PHASE2_POINTS", "1", now + 6);
      expect(heard).toHaveLength(3);
    });

    it("refuses a position it never gave out", async () => {
      await expect(store.listEvents({ stream: null, after: "not-a-position", types: null, limit: 1 })).rejects.toMatchObject({
        code: "VALIDATION_FAILED",
      });
    });
  });
}

function checksum(address: AddressKey): string {
  return getAddress(address);
}
