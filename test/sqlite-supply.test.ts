import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch } from "../src/domain/batch.js";
import { MAX_SUPPLY_UNITS, UNITS_PER_POINT } from "../src/domain/points.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { availableOf, type Balance, type LedgerStore } from "../src/store/store.js";
import { randomAddress } from "./store-contract.js";

/**
 * Issue 8 item 9 on SQLite: points passed back and forth grow receivedCumulative and
 * finalizedSentCumulative without bound. With whole points in one 64-bit column, the whole
 * supply (10^18 points) passed round more than 9.2 times overflowed a recipient's column, and
 * every later batch to it stayed PENDING. Cumulative columns now carry into a third limb.
 */

const directory = mkdtempSync(join(tmpdir(), "points-ledger-supply-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** 2^63 / 10^18 ≈ 9.22 round trips overflowed the old column; this goes well past it. */
const ROUND_TRIPS = 12;
const POINTS = "PHASE2_POINTS";
const WHOLE_POINTS_LIMIT_OF_OLD_SCHEMA = 2n ** 63n - 1n;

let counter = 0;
function batch(contract: AddressKey, transfers: [AddressKey, bigint][], createdAtMs: number): NewBatch {
  return {
    contract,
    batchId: `b-${++counter}`,
    pointType: POINTS,
    transfers: transfers.map(([toAddress, amount]) => ({ toAddress, amount })),
    total: transfers.reduce((sum, [, amount]) => sum + amount, 0n),
    secondsToFinalize: 1,
    createdAtMs,
  };
}

async function submitAndFinalize(store: LedgerStore, request: NewBatch): Promise<void> {
  expect((await store.submitBatch(request)).kind).toBe("accepted");
  const finalized = await store.finalizeDue(request.createdAtMs + 1000, 10);
  expect(finalized.map((b) => b.batchId)).toEqual([request.batchId]);
}

function emptyBalance(): Balance {
  return { earnedCumulative: 0n, receivedCumulative: 0n, finalizedSentCumulative: 0n, pendingSent: 0n };
}

describe("SQLite cumulative counters past 2^63 whole points", () => {
  it("finalizes the whole supply passed back and forth, with exact balances and a clean verify", async () => {
    const store = createSqliteStore({ path: join(directory, "round-trips.db"), synchronous: "NORMAL" });
    await store.migrate();
    const [alice, bob, carol] = [randomAddress(), randomAddress(), randomAddress()];
    expect(await store.credit({ address: alice, creditId: "all", pointType: POINTS, amount: MAX_SUPPLY_UNITS, createdAtMs: 0 })).toEqual({
      kind: "credited",
    });
    // The model: the same moves in bigint arithmetic.
    const expected = new Map([alice, bob, carol].map((address) => [address, emptyBalance()]));
    expected.get(alice)!.earnedCumulative = MAX_SUPPLY_UNITS;
    const move = (from: AddressKey, to: AddressKey, amount: bigint) => {
      expected.get(from)!.finalizedSentCumulative += amount;
      expected.get(to)!.receivedCumulative += amount;
    };
    // Bob's share leaves a fraction, so every round carries across fractions and whole points.
    const toBob = MAX_SUPPLY_UNITS - 1n;
    let nowMs = 0;
    for (let round = 0; round < ROUND_TRIPS; round++) {
      await submitAndFinalize(
        store,
        batch(
          alice,
          [
            [bob, toBob],
            [carol, 1n],
          ],
          (nowMs += 10_000),
        ),
      );
      move(alice, bob, toBob);
      move(alice, carol, 1n);
      await submitAndFinalize(store, batch(bob, [[alice, toBob]], (nowMs += 10_000)));
      move(bob, alice, toBob);
      await submitAndFinalize(store, batch(carol, [[alice, 1n]], (nowMs += 10_000)));
      move(carol, alice, 1n);
    }
    expect(expected.get(bob)!.receivedCumulative / UNITS_PER_POINT).toBeGreaterThan(WHOLE_POINTS_LIMIT_OF_OLD_SCHEMA);
    for (const [address, balance] of expected) {
      expect((await store.getBalances(address))[POINTS], address).toEqual(balance);
    }
    expect(availableOf((await store.getBalances(alice))[POINTS])).toBe(MAX_SUPPLY_UNITS);
    expect(await store.nextFinalizeAtMs()).toBeNull();
    expect(await store.verify()).toEqual([]);
    await store.close();
  });

  it("migrates a version-1 database: counters past 10^18 whole points move into the new limb, supply from credits", async () => {
    const path = join(directory, "v1.db");
    const raw = new Database(path);
    raw.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
    raw.exec(MIGRATIONS[0]!.sql);
    raw.prepare("INSERT INTO schema_migrations VALUES (1, 'ledger', 0)").run();
    const [holder, other] = [randomAddress(), randomAddress()];
    // A ledger as version 1 could hold it: 5·10^18 + 7 whole points received and sent back.
    raw.prepare("INSERT INTO credits VALUES (?, 'c', ?, ?, 0)").run(holder, POINTS, String(3n * UNITS_PER_POINT + 5n));
    raw.prepare("INSERT INTO credits VALUES (?, 'c', ?, ?, 0)").run(other, POINTS, String(UNITS_PER_POINT - 5n));
    const cumulative = 5_000_000_000_000_000_007n;
    raw
      .prepare(
        `INSERT INTO accounts (address, point_type, earned_w, earned_f, received_w, received_f, finalized_sent_w, finalized_sent_f)
         VALUES (?, ?, 3, 5, ?, 11, ?, 11)`,
      )
      .run(holder, POINTS, cumulative, cumulative);
    raw
      .prepare("INSERT INTO accounts (address, point_type, earned_w, earned_f) VALUES (?, ?, 0, ?)")
      .run(other, POINTS, UNITS_PER_POINT - 5n);
    raw.close();

    const store = createSqliteStore({ path, synchronous: "NORMAL" });
    await store.migrate();
    const units = cumulative * UNITS_PER_POINT + 11n;
    expect((await store.getBalances(holder))[POINTS]).toEqual({
      earnedCumulative: 3n * UNITS_PER_POINT + 5n,
      receivedCumulative: units,
      finalizedSentCumulative: units,
      pendingSent: 0n,
    });
    // The issued supply is 4 points: everything but 4 points more still fits.
    const room = MAX_SUPPLY_UNITS - 4n * UNITS_PER_POINT;
    expect(await store.credit({ address: other, creditId: "too-much", pointType: POINTS, amount: room + 1n, createdAtMs: 0 })).toEqual({
      kind: "overflow",
    });
    expect(await store.credit({ address: other, creditId: "fits", pointType: POINTS, amount: room, createdAtMs: 0 })).toEqual({
      kind: "credited",
    });
    await store.close();
  });
});
