import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { batchStateAsOf, straddlingDayRead, straddlingDayUnits } from "../src/domain/history.js";
import { batchStateSql as postgresBatchStateSql, straddlingReadSql } from "../src/store/postgres/history.js";
import { batchStateSql as sqliteBatchStateSql } from "../src/store/sqlite/history.js";
import { mulberry32 } from "./helpers/fault-proxy.js";
import { DATABASE_URL_TEST } from "./helpers/postgres.js";

/**
 * The `asOf` rules of domain/history.ts against each adapter's SQL form of them, over random
 * inputs: times drawn from a few milliseconds around asOf, so ties (a batch finalized or
 * cancelled exactly at asOf, a day's first or last receipt at it, asOf in the middle of a day)
 * come up often. SQLite decides a straddling day's side in JavaScript (history.ts
 * readStraddlingDay calls straddlingDayRead), so only its batch state has an SQL form to pin.
 */

interface BatchCase {
  finalizedAtMs: number | null;
  cancelledAtMs: number | null;
  asOfMs: number;
}

function batchCases(seed: number, count: number): BatchCase[] {
  const next = mulberry32(seed);
  const time = () => (next() < 0.3 ? null : 1_000 + Math.floor(next() * 8));
  return Array.from({ length: count }, () => ({ finalizedAtMs: time(), cancelledAtMs: time(), asOfMs: 1_000 + Math.floor(next() * 8) }));
}

interface DayCase {
  firstAtMs: number;
  lastAtMs: number;
  asOfMs: number;
}

/** Days that straddle asOf (first ≤ asOf < last), the only ones read by side. */
function dayCases(seed: number, count: number): DayCase[] {
  const next = mulberry32(seed);
  return Array.from({ length: count }, () => {
    const firstAtMs = 5_000 + Math.floor(next() * 20);
    const lastAtMs = firstAtMs + 1 + Math.floor(next() * 20);
    return { firstAtMs, lastAtMs, asOfMs: firstAtMs + Math.floor(next() * (lastAtMs - firstAtMs)) };
  });
}

describe("asOf rules", () => {
  it("a straddling day is read on its shorter side, and the receipts by asOf come out the same either way", () => {
    for (const { firstAtMs, lastAtMs, asOfMs } of dayCases(3, 2000)) {
      const read = straddlingDayRead(firstAtMs, lastAtMs, asOfMs);
      const before = asOfMs - firstAtMs;
      const after = lastAtMs - asOfMs;
      expect(read.side === "before" ? before <= after : before > after).toBe(true);
      // Receipts of 1 unit each millisecond: by asOf there were before + 1, whichever side is read.
      const dayUnits = BigInt(lastAtMs - firstAtMs + 1);
      const sideUnits = BigInt(read.toMs - read.fromMs + 1);
      expect(straddlingDayUnits(read, dayUnits, sideUnits)).toBe(BigInt(before + 1));
    }
    expect(() => straddlingDayRead(10, 20, 20)).toThrow(/does not straddle/);
  });

  it("SQLite's batchStateSql is batchStateAsOf over random times", () => {
    const db = new Database(":memory:");
    const state = db.prepare(`SELECT ${sqliteBatchStateSql("@finalizedAtMs", "@cancelledAtMs", "@asOfMs")}`).pluck();
    for (const batch of batchCases(5, 3000)) {
      expect([batch, state.get(batch)]).toEqual([batch, batchStateAsOf(batch.finalizedAtMs, batch.cancelledAtMs, batch.asOfMs)]);
    }
    db.close();
  });

  describe.skipIf(!DATABASE_URL_TEST)("PostgreSQL", () => {
    async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
      const client = new pg.Client({ connectionString: DATABASE_URL_TEST });
      await client.connect();
      try {
        return await work(client);
      } finally {
        await client.end();
      }
    }

    it("batchStateSql is batchStateAsOf over random times", async () => {
      const batches = batchCases(7, 5000);
      const { rows } = await withClient((client) =>
        client.query<{ i: number; state: string }>(
          `SELECT b.i, ${postgresBatchStateSql("b.finalized_at_ms", "b.cancelled_at_ms", "b.as_of")} AS state
           FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS b(finalized_at_ms, cancelled_at_ms, as_of, i)`,
          [batches.map((b) => b.finalizedAtMs), batches.map((b) => b.cancelledAtMs), batches.map((b) => b.asOfMs)],
        ),
      );
      expect(rows.length).toBe(batches.length);
      for (const row of rows) {
        const batch = batches[Number(row.i) - 1]!;
        expect([batch, row.state]).toEqual([batch, batchStateAsOf(batch.finalizedAtMs, batch.cancelledAtMs, batch.asOfMs)]);
      }
    });

    it("straddlingReadSql reads the side and the range straddlingDayRead picks, over random days", async () => {
      const days = dayCases(11, 5000);
      const sql = straddlingReadSql("d", "d.as_of");
      const { rows } = await withClient((client) =>
        client.query<{ i: string; before: boolean; from_ms: string; to_ms: string }>(
          `SELECT d.i, ${sql.before} AS before,
                  CASE WHEN ${sql.before} THEN ${sql.beforeRange.from} ELSE ${sql.afterRange.from} END AS from_ms,
                  CASE WHEN ${sql.before} THEN ${sql.beforeRange.to} ELSE ${sql.afterRange.to} END AS to_ms
           FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS d(first_at_ms, last_at_ms, as_of, i)`,
          [days.map((d) => d.firstAtMs), days.map((d) => d.lastAtMs), days.map((d) => d.asOfMs)],
        ),
      );
      expect(rows.length).toBe(days.length);
      for (const row of rows) {
        const day = days[Number(row.i) - 1]!;
        const read = straddlingDayRead(day.firstAtMs, day.lastAtMs, day.asOfMs);
        expect([day, row.before ? "before" : "after", Number(row.from_ms), Number(row.to_ms)]).toEqual([
          day,
          read.side,
          read.fromMs,
          read.toMs,
        ]);
      }
    });
  });
});
