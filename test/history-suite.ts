/**
 * Balances and snapshots as of a time (API.md "Leaderboards and history", `asOf`; "Snapshots"),
 * one suite for both adapters (history-sqlite.test.ts, history-postgres.test.ts), checked against
 * an independent model (helpers/history-model.ts) that records every balance as the ledger moves.
 * A manual clock drives random credits, submits, cancels and finalizations, several often at the
 * same millisecond; every address's balance as of every moment that mattered (each event's time,
 * one ms before and one after) must equal the model's, and a snapshot as of a time taken later
 * must be the snapshot taken at that time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import type { AddressKey } from "../src/domain/address.js";
import { decodeLeafChunk, type SnapshotMeasure } from "../src/domain/snapshot.js";
import { takeSnapshot, type TakeResult } from "../src/snapshots/snapshots.js";
import type { LedgerStore } from "../src/store/store.js";
import { availableIn, HistoryModel, type ModelBalance } from "./helpers/history-model.js";
import { randomAddress } from "./helpers/postgres.js";
import { mulberry32 } from "./helpers/fault-proxy.js";

export interface HistoryFixture {
  store: LedgerStore;
  close(): Promise<void>;
}

const POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
const MEASURES: SnapshotMeasure[] = ["available", "receivedCumulative"];
const UNITS = 1_000_000_000_000n;
const STEPS = 160;
/** The step after which the live snapshots are taken (the moment the later `asOf` ones must reproduce). */
const SNAPSHOT_STEP = 90;
const ALL_ZERO = { earnedCumulative: 0n, receivedCumulative: 0n, finalizedSentCumulative: 0n, pendingSent: 0n };
const START_MS = Date.UTC(2026, 0, 4, 12); // a Sunday noon: any fixed time works

interface Run {
  model: HistoryModel;
  neverPaid: AddressKey;
  /** The time of the live snapshots, and what they were (by `pointType measure`). */
  snapshotAtMs: number;
  liveSnapshots: Map<string, TakeResult>;
  /** Moments checked along the way (before the run ended), with what the model said then. */
  checkedAlongTheWay: number;
}

function balanceJson(balance: ModelBalance) {
  return {
    earnedCumulative: balance.earnedCumulative,
    receivedCumulative: balance.receivedCumulative,
    finalizedSentCumulative: balance.finalizedSentCumulative,
    pendingSent: balance.pendingSent,
  };
}

/** Every address's balances as of each of `moments` from the store equal the model's. */
async function expectAsOfMatches(store: LedgerStore, model: HistoryModel, addresses: readonly string[], moments: readonly number[]) {
  for (const asOfMs of moments) {
    for (const address of addresses) {
      const read = await store.getBalancesAsOf(address as AddressKey, POINT_TYPES, asOfMs);
      for (const pointType of POINT_TYPES) {
        expect(balanceJson(read[pointType]), `${address} ${pointType} as of ${new Date(asOfMs).toISOString()}`).toEqual(
          balanceJson(model.asOf(address, pointType, asOfMs)),
        );
      }
    }
  }
}

/** Each event time, and one ms before and after it ("at or before" counts the event itself). */
function momentsAround(times: readonly number[]): number[] {
  return [...new Set(times.flatMap((t) => [t - 1, t, t + 1]))].sort((a, b) => a - b);
}

async function leavesOf(store: LedgerStore, snapshotId: string): Promise<string[]> {
  const chunks = await store.listSnapshotLeafChunks(snapshotId, 0, 10_000);
  return chunks.flatMap((chunk) => decodeLeafChunk(chunk).map((leaf) => `${leaf.address},${leaf.amount},${leaf.treeIndex}`));
}

/** The random run: returns the model and what was recorded along the way. */
async function randomRun(store: LedgerStore, seed: number): Promise<Run> {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const model = new HistoryModel();
  const people = Array.from({ length: 7 }, () => randomAddress());
  let nowMs = START_MS;
  let sequence = 0;
  let checkedAlongTheWay = 0;
  let snapshotAtMs = 0;
  const liveSnapshots = new Map<string, TakeResult>();

  for (let step = 0; step < STEPS; step++) {
    // Often the same millisecond, sometimes the next one, else up to 25 minutes on.
    const roll = random();
    nowMs += roll < 0.3 ? 0 : roll < 0.45 ? 1 : Math.floor(random() * 25 * 60_000);
    const action = random();
    const pointType = pick(POINT_TYPES);
    // One random action (none when it has nothing to act on).
    const act = async (): Promise<void> => {
      if (action < 0.3 || step < 5) {
        const address = pick(people);
        // Now and then a large amount with a full fraction: sums that carry across the stores' limbs.
        const large = random() < 0.15;
        const whole = large ? BigInt(Math.floor(random() * 1e16)) : BigInt(1 + Math.floor(random() * 1000));
        const fraction = large ? BigInt(Math.floor(random() * 1e12)) : BigInt(Math.floor(random() * 1e6));
        const amount = whole * UNITS + fraction;
        const result = await store.credit({ address, creditId: `c${sequence++}`, pointType, amount, createdAtMs: nowMs });
        expect(result.kind).toBe("credited");
        model.credit(address, pointType, amount, nowMs);
      } else if (action < 0.62) {
        const contract = pick(people);
        const available = availableIn(model.current(contract, pointType));
        if (available < 3n) return;
        const recipients = people.filter((p) => p !== contract).filter(() => random() < 0.5);
        if (recipients.length === 0) return;
        const share = available / BigInt(recipients.length);
        const transfers = recipients.map((toAddress) => ({
          toAddress,
          amount: 1n + ((BigInt(Math.floor(random() * 2 ** 52)) * BigInt(Math.floor(random() * 2 ** 52))) % share),
        }));
        const total = transfers.reduce((sum, t) => sum + t.amount, 0n);
        const batchId = `b${sequence++}`;
        const secondsToFinalize = 60 + Math.floor(random() * 3600);
        const result = await store.submitBatch({ contract, batchId, pointType, transfers, total, secondsToFinalize, createdAtMs: nowMs });
        expect(result.kind).toBe("accepted");
        model.submit({
          contract,
          batchId,
          pointType,
          transfers,
          total,
          createdAtMs: nowMs,
          finalizeAtMs: nowMs + secondsToFinalize * 1000,
        });
      } else if (action < 0.75) {
        const cancellable = [...model.batches.values()].filter((b) => b.status === "PENDING" && nowMs < b.finalizeAtMs);
        if (cancellable.length === 0) return;
        const batch = pick(cancellable);
        const result = await store.cancelBatch(batch.contract as AddressKey, batch.batchId, nowMs);
        expect(result.kind).toBe("cancelled");
        model.cancel(batch.contract, batch.batchId, nowMs);
      } else {
        const finalized = await store.finalizeDue(nowMs, 1000);
        expect(finalized.map((b) => `${b.contract} ${b.batchId}`).sort()).toEqual(model.due(nowMs).sort());
        for (const batch of finalized) {
          expect(batch.finalizedAtMs).toBe(nowMs);
          model.finalize(batch.contract, batch.batchId, nowMs);
        }
        // The projection paused, a step, or caught up: asOf answers the same from received_daily, the queue or both.
        const projection = Math.floor(random() * 3);
        if (projection > 0) await store.applyProjection(projection === 1 ? 1 + Math.floor(random() * 3) : 10_000, nowMs);
      }
    };
    await act();

    if (step === SNAPSHOT_STEP) {
      snapshotAtMs = nowMs;
      for (const type of POINT_TYPES) {
        for (const measure of MEASURES) {
          const request = { id: `live-${type}-${measure}`, pointType: type, measure, decimals: 18, asOfMs: null };
          liveSnapshots.set(`${type} ${measure}`, await takeSnapshot(store, request, () => nowMs, ADMIN_ACTOR));
        }
      }
      // Nothing more at that millisecond: the live snapshots saw everything that happened at or before it.
      nowMs += 1;
    }
    if (step % 40 === 39) {
      // Along the way: the recent moments, while later batches are still pending.
      const recent = model.eventTimes.slice(-6);
      await expectAsOfMatches(store, model, people, momentsAround(recent));
      checkedAlongTheWay += recent.length;
    }
  }
  return { model, neverPaid: randomAddress(), snapshotAtMs, liveSnapshots, checkedAlongTheWay };
}

export function describeHistory(name: string, open: () => Promise<HistoryFixture>, skip = false): void {
  describe.skipIf(skip)(`balances and snapshots as of a time (${name})`, () => {
    let fixture: HistoryFixture;
    let run: Run;
    // HISTORY_SEED replays a failing run.
    const seed = Number(process.env.HISTORY_SEED ?? Math.floor(Math.random() * 2 ** 31));

    beforeAll(async () => {
      fixture = await open();
      await fixture.store.migrate();
      run = await randomRun(fixture.store, seed);
    }, 120_000);

    afterAll(async () => {
      await fixture?.close();
    });

    it(`answers every address's balances as of every event time, and 1 ms before and after, as the model recorded them (seed ${seed})`, async () => {
      const { model } = run;
      expect(run.checkedAlongTheWay).toBeGreaterThan(0);
      expect(model.eventTimes.length).toBeGreaterThan(20);
      const statuses = new Set([...model.batches.values()].map((batch) => batch.status));
      expect(statuses.has("CANCELLED") && statuses.has("FINALIZED")).toBe(true);
      await expectAsOfMatches(fixture.store, model, model.addresses(), momentsAround(model.eventTimes));
    }, 120_000);

    it("answers all zero before the first entry, and for an address never paid at any time", async () => {
      const { model, neverPaid } = run;
      const first = model.eventTimes[0]!;
      for (const address of [...model.addresses(), neverPaid]) {
        for (const asOfMs of [0, first - 60_000, first - 1]) {
          const read = await fixture.store.getBalancesAsOf(address as AddressKey, POINT_TYPES, asOfMs);
          for (const pointType of POINT_TYPES) expect(balanceJson(read[pointType])).toEqual(ALL_ZERO);
        }
      }
      const last = model.eventTimes.at(-1)!;
      for (const asOfMs of [first, last, last + 86_400_000]) {
        const read = await fixture.store.getBalancesAsOf(neverPaid, POINT_TYPES, asOfMs);
        for (const pointType of POINT_TYPES) expect(balanceJson(read[pointType])).toEqual(ALL_ZERO);
      }
    });

    it(`takes a snapshot as of a time, later, identical to the one taken at that time, for both measures (seed ${seed})`, async () => {
      const { model, snapshotAtMs, liveSnapshots } = run;
      const laterMs = model.eventTimes.at(-1)! + 3_600_000;
      expect(snapshotAtMs).toBeLessThan(model.eventTimes.at(-1)!);
      for (const pointType of POINT_TYPES) {
        for (const measure of MEASURES) {
          const live = liveSnapshots.get(`${pointType} ${measure}`)!;
          const request = { id: `asof-${pointType}-${measure}`, pointType, measure, decimals: 18, asOfMs: snapshotAtMs };
          const later = await takeSnapshot(fixture.store, request, () => laterMs, ADMIN_ACTOR);
          // The model's holdings as of then: what both must hold.
          const holders = model
            .addresses()
            .map((address) => {
              const balance = model.asOf(address, pointType, snapshotAtMs);
              return { address, units: measure === "available" ? availableIn(balance) : balance.receivedCumulative };
            })
            .filter((holder) => holder.units > 0n);
          if (holders.length === 0) {
            expect(live.kind).toBe("empty");
            expect(later.kind).toBe("empty");
            continue;
          }
          expect(live.kind).toBe("created");
          expect(later.kind).toBe("created");
          if (live.kind !== "created" || later.kind !== "created") continue;
          expect(later.snapshot.asOfMs).toBe(snapshotAtMs);
          expect(live.snapshot.asOfMs).toBeNull();
          const { root, leafCount, totalUnits } = live.snapshot;
          expect({ root: later.snapshot.root, leafCount: later.snapshot.leafCount, totalUnits: later.snapshot.totalUnits }).toEqual({
            root,
            leafCount,
            totalUnits,
          });
          expect(leafCount).toBe(holders.length);
          expect(totalUnits).toBe(holders.reduce((sum, holder) => sum + holder.units, 0n));
          expect(await leavesOf(fixture.store, later.snapshot.id)).toEqual(await leavesOf(fixture.store, live.snapshot.id));
          const stored = await fixture.store.getSnapshot(later.snapshot.id);
          expect(stored?.asOfMs).toBe(snapshotAtMs);
          // The same id again with another asOf is another request; with the same one, the same.
          const other = await takeSnapshot(fixture.store, { ...request, asOfMs: snapshotAtMs - 1 }, () => laterMs, ADMIN_ACTOR);
          expect(other).toMatchObject({ kind: "exists", matchesRequest: false });
          const same = await takeSnapshot(fixture.store, request, () => laterMs, ADMIN_ACTOR);
          expect(same).toMatchObject({ kind: "exists", matchesRequest: true });
        }
      }
    }, 60_000);

    // Last: its finalizations may finalize what the random run left pending (its reads are all as of earlier times).
    it("answers a day paid five times, at each receipt and 1 ms around it, whichever side of the time it reads", async () => {
      const { store } = fixture;
      const [contract, recipient, other] = [randomAddress(), randomAddress(), randomAddress()];
      const dayMs = Date.UTC(2027, 5, 1);
      const HOUR_MS = 3_600_000;
      expect(
        (await store.credit({ address: contract, creditId: "day", pointType: "PHASE2_POINTS", amount: 100n * UNITS, createdAtMs: dayMs }))
          .kind,
      ).toBe("credited");
      // Receipts near both ends of the day and in its middle: a time in it is nearer its first or its last.
      const receipts = [1, 2, 12, 22, 23].map((hour, i) => ({ atMs: dayMs + hour * HOUR_MS, units: BigInt(i + 1) * UNITS }));
      for (const [i, { atMs, units }] of receipts.entries()) {
        const transfers = [
          { toAddress: recipient, amount: units },
          { toAddress: other, amount: UNITS },
        ];
        const batch = { contract, batchId: `day-${i}`, pointType: "PHASE2_POINTS" as const, transfers, total: units + UNITS };
        expect((await store.submitBatch({ ...batch, secondsToFinalize: 60, createdAtMs: atMs - 60_000 })).kind).toBe("accepted");
        expect((await store.finalizeDue(atMs, 100)).some((done) => done.batchId === `day-${i}`)).toBe(true);
      }
      for (const asOfMs of receipts.flatMap(({ atMs }) => [atMs - 1, atMs, atMs + 1, atMs + HOUR_MS / 2])) {
        const expected = receipts.filter(({ atMs }) => atMs <= asOfMs).reduce((sum, { units }) => sum + units, 0n);
        const read = await store.getBalancesAsOf(recipient, ["PHASE2_POINTS"], asOfMs);
        expect({ asOfMs, received: read.PHASE2_POINTS.receivedCumulative }).toEqual({ asOfMs, received: expected });
      }
    });
  });
}
