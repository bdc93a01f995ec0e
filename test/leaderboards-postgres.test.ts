import { afterAll, describe, expect, it } from "vitest";
import type { BatchStatus } from "../src/domain/batch.js";
import { ALL_TIME, DAY_MS, rankBandOf } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { leaderboardsSuite, type OldBatch } from "./leaderboards-suite.js";

/** The schema version that added the leaderboards (and history_backfill). */
const LEADERBOARDS_VERSION = 12;
/** The schema version that replaced them with boards, board_entries, board_bands and received_daily. */
const COMPACT_BOARDS_VERSION = 13;

const schemas: TestSchema[] = [];
afterAll(async () => {
  await Promise.all(schemas.map((schema) => schema.drop()));
});

async function newSchema(): Promise<TestSchema> {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  schemas.push(schema);
  return schema;
}

/** A schema before `version` (by default before the leaderboards), holding `batches` as such a database held them. */
async function writeOldSchema(schema: TestSchema, batches: readonly OldBatch[], version = LEADERBOARDS_VERSION): Promise<void> {
  await schema.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)");
  for (const migration of MIGRATIONS.filter((m) => m.version < version)) {
    await schema.query(migration.sql);
    await schema.query("INSERT INTO schema_migrations VALUES ($1, $2, 0)", [migration.version, migration.name]);
  }
  for (const batch of batches) {
    const total = batch.transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
    const endedAtMs = batch.finalizedAtMs ?? (batch.status === "CANCELLED" ? batch.createdAtMs + 1 : null);
    const [row] = await schema.query<{ seq: string }>(
      `INSERT INTO batches (contract, batch_id, point_type, status, total_units, transfer_count, seconds_to_finalize,
         created_at_ms, finalize_at_ms, updated_at_ms, finalized_at_ms, cancelled_at_ms)
       VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $11) RETURNING seq`,
      [
        batch.contract,
        batch.batchId,
        batch.pointType,
        batch.status,
        total.toString(),
        batch.transfers.length,
        batch.createdAtMs,
        batch.finalizeAtMs,
        endedAtMs,
        batch.finalizedAtMs,
        batch.status === "CANCELLED" ? endedAtMs : null,
      ],
    );
    for (const [idx, transfer] of batch.transfers.entries()) {
      await schema.query("INSERT INTO transfers (seq, idx, to_address, amount_units) VALUES ($1, $2, $3, $4)", [
        row!.seq,
        idx,
        transfer.toAddress,
        transfer.amount.toString(),
      ]);
    }
  }
}

leaderboardsSuite("Leaderboards on PostgreSQL", {
  ...(DATABASE_URL_TEST ? {} : { skipMessage: SKIP_REASON }),
  duplicateRecipients: false,
  freshStore: async () => {
    const store = (await newSchema()).openStore();
    await store.migrate();
    return store;
  },
  oldStores: async (batches) => {
    const schema = await newSchema();
    await writeOldSchema(schema, batches);
    return [schema.openStore(), schema.openStore()];
  },
});

describe.skipIf(!DATABASE_URL_TEST)("compact boards and daily receipts on PostgreSQL (migration 13)", () => {
  it("lists every FINALIZED batch for the history job again when migrating from version 12, which rebuilds boards and receipts from them", async () => {
    const schema = await newSchema();
    const contract = randomAddress();
    const recipients = [randomAddress(), randomAddress()].sort();
    const dayMs = Date.UTC(2026, 2, 1);
    const old = (i: number, status: BatchStatus): OldBatch => ({
      contract,
      batchId: `old-${i}`,
      pointType: "PHASE2_POINTS",
      status,
      transfers: recipients.map((toAddress) => ({ toAddress, amount: 2n * UNITS_PER_POINT })),
      createdAtMs: dayMs + i * 3_600_000,
      finalizeAtMs: dayMs + i * 3_600_000 + 1000,
      finalizedAtMs: status === "FINALIZED" ? dayMs + i * 3_600_000 + 1000 : null,
    });
    await writeOldSchema(schema, [old(0, "FINALIZED"), old(1, "CANCELLED"), old(2, "FINALIZED")], COMPACT_BOARDS_VERSION);
    // Version 12 once its own backfill was done: nothing listed, the history in its tables.
    await schema.query(
      "INSERT INTO leaderboard_entries (contract, point_type, address, points_units) VALUES ($1, 'PHASE2_POINTS', $2, $3)",
      [contract, recipients[0], (4n * UNITS_PER_POINT).toString()],
    );
    expect(await schema.query("SELECT seq FROM history_backfill")).toEqual([]);
    const store = schema.openStore();
    await store.migrate();
    const gone = await schema.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()
       AND tablename IN ('leaderboard_entries', 'leaderboard_bands', 'received_history')`,
    );
    expect(gone).toEqual([]);
    expect(await store.historyBackfillRemaining()).toBe(2);
    const board = { contract, pointType: "PHASE2_POINTS" as const, window: ALL_TIME, limit: 10, after: null };
    expect(await store.readBoard(board)).toEqual({ participants: 0, rows: [], more: false });
    expect(await store.backfillHistory(10)).toBe(2);
    expect(await store.readBoard(board)).toEqual({
      participants: 2,
      rows: recipients.map((address) => ({ address, units: 4n * UNITS_PER_POINT })),
      more: false,
    });
    // One day's row for each recipient, received at +1 s and at +2 h 1 s: between them, the first batch only.
    for (const [asOfMs, received] of [
      [dayMs + 999, 0n],
      [dayMs + 1000, 2n],
      [dayMs + 7_201_000 - 1, 2n],
      [dayMs + 7_201_000, 4n],
    ] as const) {
      const balances = await store.getBalancesAsOf(recipients[1]!, ["PHASE2_POINTS"], asOfMs);
      expect([asOfMs - dayMs, balances.PHASE2_POINTS.receivedCumulative]).toEqual([asOfMs - dayMs, received * UNITS_PER_POINT]);
    }
  });

  it("verify (invariant 5) reports a board entry, a band, a day's received amount or its first and last times that the finalized batches contradict", async () => {
    const schema = await newSchema();
    const store = schema.openStore();
    await store.migrate();
    const [contract, first, second] = [randomAddress(), randomAddress(), randomAddress()];
    const dayMs = Date.UTC(2026, 2, 1);
    await store.credit({
      address: contract,
      creditId: "fund",
      pointType: "PHASE2_POINTS",
      amount: 100n * UNITS_PER_POINT,
      createdAtMs: dayMs,
    });
    // Two batches finalized an hour apart on one UTC day: `first` receives in both (one received_daily row, first < last).
    for (const [i, recipients] of [[first, second], [first]].entries()) {
      const createdAtMs = dayMs + i * 3_600_000;
      const transfers = recipients.map((toAddress) => ({ toAddress, amount: 3n * UNITS_PER_POINT }));
      const total = transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
      const batch = { contract, batchId: `b${i}`, pointType: "PHASE2_POINTS", transfers, total, secondsToFinalize: 1, createdAtMs };
      expect((await store.submitBatch(batch)).kind).toBe("accepted");
      expect(await store.finalizeDue(createdAtMs + 1000, 10)).toHaveLength(1);
    }
    expect(await store.verify()).toEqual([]);
    const [day] = await schema.query<{ first_at_ms: string; last_at_ms: string; day_ms: string }>(
      "SELECT first_at_ms::text, last_at_ms::text, day_ms::text FROM received_daily WHERE address = $1",
      [first],
    );
    expect(day).toEqual({ first_at_ms: String(dayMs + 1000), last_at_ms: String(dayMs + 3_601_000), day_ms: String(dayMs) });
    expect(dayMs % DAY_MS).toBe(0);

    // Each change is one statement on `first`'s rows ($1), run with $2 = 1, verified, then undone with $2 = -1.
    const tampered = async (change: string): Promise<string[]> => {
      await schema.query(change, [first, 1]);
      const violations = await store.verify();
      await schema.query(change, [first, -1]);
      expect(violations.every((violation) => violation.invariant === 5)).toBe(true);
      return violations.map((violation) => violation.message);
    };
    const six = 6n * UNITS_PER_POINT;
    expect(
      await tampered("UPDATE board_entries SET points_units = points_units + $2 WHERE address = decode(substr($1, 3), 'hex')"),
    ).toEqual([`${contract} PHASE2_POINTS ${first}: leaderboard entry (units) is ${six + 1n} but the ledger says ${six}`]);
    expect(
      await tampered(
        `UPDATE board_bands b SET entries = b.entries + $2 FROM board_entries e
         WHERE e.address = decode(substr($1, 3), 'hex') AND b.board = e.board
           AND b.band = length(e.points_units::text) * 100 + left(e.points_units::text, 2)::int`,
      ),
    ).toEqual([`${contract} PHASE2_POINTS band ${rankBandOf(six)}: leaderboard band entries is 2 but the ledger says 1`]);
    expect(await tampered("UPDATE received_daily SET amount_units = amount_units + $2 WHERE address = $1")).toEqual([
      `${first} PHASE2_POINTS: received history (units) is ${six + 1n} but the ledger says ${six}`,
      `${first} PHASE2_POINTS ${dayMs} ${contract}: received on a day (units) is ${six + 1n} but the ledger says ${six}`,
    ]);
    const [firstAtMs, lastAtMs] = [dayMs + 1000, dayMs + 3_601_000];
    expect(await tampered("UPDATE received_daily SET last_at_ms = last_at_ms + $2 WHERE address = $1")).toEqual([
      `${first} PHASE2_POINTS ${dayMs} ${contract}: received on a day (first and last times) is ${firstAtMs} ${lastAtMs + 1} but the ledger says ${firstAtMs} ${lastAtMs}`,
    ]);
    expect(await store.verify()).toEqual([]);
  });
});
