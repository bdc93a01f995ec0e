import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { bandUpperUnits, rankBandOf, rankPage } from "../src/domain/leaderboard.js";
import type { AddressKey } from "../src/domain/address.js";
import { toTriple } from "../src/store/sqlite/db.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";

/** Amounts of every length the (q, w, f) limbs split differently: 1 unit up to past 10^30 units. */
function amounts(): bigint[] {
  const values = new Set<bigint>();
  for (let digits = 1; digits <= 40; digits++) {
    const base = 10n ** BigInt(digits - 1);
    for (const lead of [1n, 9n, 10n, 12n, 99n]) {
      if (lead >= 10n && digits < 2) continue;
      const head = lead >= 10n ? lead * 10n ** BigInt(digits - 2) : lead * base;
      values.add(head);
      values.add(head + 7n);
      values.add(head * 2n - 1n);
    }
    values.add(base * 10n - 1n);
  }
  return [...values].filter((value) => value > 0n).sort((a, b) => (a < b ? -1 : 1));
}

describe("rank bands", () => {
  it("rankBandOf never decreases as the amount grows, and bandUpperUnits is the first amount of a higher band", () => {
    const sorted = amounts();
    for (let i = 1; i < sorted.length; i++) expect(rankBandOf(sorted[i]!)).toBeGreaterThanOrEqual(rankBandOf(sorted[i - 1]!));
    for (const units of sorted) {
      const upper = bandUpperUnits(rankBandOf(units));
      expect(upper > units).toBe(true);
      expect(rankBandOf(upper)).toBeGreaterThan(rankBandOf(units));
      expect(rankBandOf(upper - 1n)).toBe(rankBandOf(units));
    }
  });

  it("SQLite's triggers file every entry under rankBandOf, and move it when an update changes its band", () => {
    const db = new Database(":memory:");
    db.defaultSafeIntegers(true);
    for (const migration of MIGRATIONS) db.exec(migration.sql);
    const insert = db.prepare("INSERT INTO board_entries (board, address, points_q, points_w, points_f) VALUES (1, ?, ?, ?, ?)");
    const addressOf = (i: number) => Buffer.from(i.toString(16).padStart(40, "0"), "hex");
    const all = amounts();
    all.forEach((units, i) => insert.run(addressOf(i), ...toTriple(units)));
    const bands = () =>
      new Map(
        (db.prepare("SELECT band, entries FROM board_bands WHERE entries > 0").raw(true).all() as [bigint, bigint][]).map(
          ([band, entries]) => [Number(band), Number(entries)],
        ),
      );
    const expected = (values: bigint[]) => {
      const counts = new Map<number, number>();
      for (const units of values) counts.set(rankBandOf(units), (counts.get(rankBandOf(units)) ?? 0) + 1);
      return counts;
    };
    expect(bands()).toEqual(expected(all));
    // Every entry grows past the next power of ten: each moves band, the counts follow.
    const update = db.prepare("UPDATE board_entries SET points_q = ?, points_w = ?, points_f = ? WHERE address = ?");
    const grown = all.map((units) => units * 10n + 3n);
    grown.forEach((units, i) => update.run(...toTriple(units), addressOf(i)));
    expect(bands()).toEqual(expected(grown));
  });

  it("ranks a page from where the previous one ended: ties share the rank of their first entry", () => {
    const row = (units: bigint, n: number) => ({ units, address: `0x${n.toString(16).padStart(40, "0")}` as AddressKey });
    const first = rankPage([row(9n, 1), row(7n, 2)], null);
    const second = rankPage([row(7n, 3), row(7n, 4), row(3n, 5)], first.last);
    expect([...first.entries, ...second.entries].map((entry) => entry.rank)).toEqual([1, 2, 2, 2, 5]);
    expect(rankPage([], second.last)).toEqual({ entries: [], last: null });
  });
});
