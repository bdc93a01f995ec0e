import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { bandUpperUnits, rankBandOf, rankPage } from "../src/domain/leaderboard.js";
import type { AddressKey } from "../src/domain/address.js";
import { rankBandSql } from "../src/store/postgres/leaderboard-tables.js";
import { toTriple } from "../src/store/sqlite/db.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import { attachProjection } from "../src/store/sqlite/projection-file.js";
import { mulberry32 } from "./helpers/fault-proxy.js";
import { DATABASE_URL_TEST } from "./helpers/postgres.js";

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

/** Amounts drawn at random (seeded): 1 to 40 digits, each digit random, so every limb boundary and leading pair is met. */
function randomAmounts(seed: number, count: number): bigint[] {
  const next = mulberry32(seed);
  const values = new Set<bigint>();
  while (values.size < count) {
    const digits = 1 + Math.floor(next() * 40);
    let text = String(1 + Math.floor(next() * 9));
    for (let i = 1; i < digits; i++) text += String(Math.floor(next() * 10));
    values.add(BigInt(text));
  }
  return [...values];
}

/** SQLite's entries and bands under every migration (the triggers file each entry by the migrations' rankBand). */
function sqliteBoards() {
  const db = new Database(":memory:");
  db.defaultSafeIntegers(true);
  for (const migration of MIGRATIONS) db.exec(migration.sql);
  attachProjection(db, ":memory:", { prepare: true });
  return db;
}

/** The entries each band of `values` holds, by rankBandOf. */
function expectedBands(values: readonly bigint[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const units of values) counts.set(rankBandOf(units), (counts.get(rankBandOf(units)) ?? 0) + 1);
  return counts;
}

const addressOf = (i: number) => Buffer.from(i.toString(16).padStart(40, "0"), "hex");

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
    attachProjection(db, ":memory:", { prepare: true });
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

  for (const [table, key, bands] of [
    ["board_entries", "board", "board_bands"],
    ["window_entries", "window_id", "window_bands"],
  ] as const) {
    it(`SQLite's ${table} triggers file random amounts under rankBandOf, before and after each grows`, () => {
      const db = sqliteBoards();
      const read = () =>
        new Map(
          (db.prepare(`SELECT band, entries FROM ${bands} WHERE entries > 0`).raw(true).all() as [bigint, bigint][]).map(
            ([band, entries]) => [Number(band), Number(entries)],
          ),
        );
      const all = randomAmounts(29, 3000);
      const insert = db.prepare(`INSERT INTO ${table} (${key}, address, points_q, points_w, points_f) VALUES (1, ?, ?, ?, ?)`);
      all.forEach((units, i) => insert.run(addressOf(i), ...toTriple(units)));
      expect(read()).toEqual(expectedBands(all));
      // Each grows by a random amount of its own (some stay in their band, some move): the counts follow.
      const more = randomAmounts(31, all.length);
      const grown = all.map((units, i) => (i % 2 === 0 ? units + more[i]! : units + (more[i]! % 1000n)));
      const update = db.prepare(`UPDATE ${table} SET points_q = ?, points_w = ?, points_f = ? WHERE ${key} = 1 AND address = ?`);
      grown.forEach((units, i) => update.run(...toTriple(units), addressOf(i)));
      expect(read()).toEqual(expectedBands(grown));
    });
  }

  it.skipIf(!DATABASE_URL_TEST)("PostgreSQL's rankBandSql is rankBandOf over random NUMERIC(40,0) amounts", async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL_TEST });
    await client.connect();
    try {
      // NUMERIC(40,0) holds up to 40 digits.
      const all = [...randomAmounts(37, 5000), ...amounts().filter((units) => units < 10n ** 40n)];
      const { rows } = await client.query<{ units: string; band: number }>(
        `SELECT u::text AS units, ${rankBandSql("u")} AS band FROM unnest($1::numeric(40, 0)[]) AS u`,
        [all.map(String)],
      );
      expect(rows.length).toBe(all.length);
      for (const row of rows) expect([row.units, row.band]).toEqual([row.units, rankBandOf(BigInt(row.units))]);
    } finally {
      await client.end();
    }
  });

  it("ranks a page from where the previous one ended: ties share the rank of their first entry", () => {
    const row = (units: bigint, n: number) => ({ units, address: `0x${n.toString(16).padStart(40, "0")}` as AddressKey });
    const first = rankPage([row(9n, 1), row(7n, 2)], null);
    const second = rankPage([row(7n, 3), row(7n, 4), row(3n, 5)], first.last);
    expect([...first.entries, ...second.entries].map((entry) => entry.rank)).toEqual([1, 2, 2, 2, 5]);
    expect(rankPage([], second.last)).toEqual({ entries: [], last: null });
  });
});
