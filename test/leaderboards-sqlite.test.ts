import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { BatchStatus } from "../src/domain/batch.js";
import { ALL_TIME, DAY_MS, rankBandOf } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { toPair } from "../src/store/sqlite/db.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { leaderboardsSuite, type OldBatch } from "./leaderboards-suite.js";

/** The schema version that added the leaderboards (and history_backfill). */
const LEADERBOARDS_VERSION = 14;
/** The schema version that replaced them with boards, board_entries, board_bands and received_daily. */
const COMPACT_BOARDS_VERSION = 15;

const directory = mkdtempSync(join(tmpdir(), "points-ledger-leaderboards-"));
const stores: LedgerStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  rmSync(directory, { recursive: true, force: true });
});

let databases = 0;
function open(path: string): LedgerStore {
  const store = createSqliteStore({ path, synchronous: "NORMAL" });
  stores.push(store);
  return store;
}

/**
 * A database at the schema before `version` (by default before the leaderboards), holding
 * `batches` as such a database held them, then `extraSql`.
 */
function writeOldDatabase(path: string, batches: readonly OldBatch[], version = LEADERBOARDS_VERSION, extraSql = ""): void {
  const raw = new Database(path);
  try {
    // A fixture: no need to wait for the disk after each migration.
    raw.pragma("synchronous = OFF");
    raw.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
    for (const migration of MIGRATIONS.filter((m) => m.version < version)) {
      raw.exec(migration.sql);
      raw.prepare("INSERT INTO schema_migrations VALUES (?, ?, 0)").run(migration.version, migration.name);
    }
    const insertBatch = raw.prepare(
      `INSERT INTO batches (contract, batch_id, point_type, status, total_w, total_f, transfer_count, seconds_to_finalize,
         created_at_ms, finalize_at_ms, updated_at_ms, finalized_at_ms, cancelled_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
    );
    const insertTransfer = raw.prepare("INSERT INTO transfers (seq, idx, to_address, amount_w, amount_f) VALUES (?, ?, ?, ?, ?)");
    for (const batch of batches) {
      const total = batch.transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
      const endedAtMs = batch.finalizedAtMs ?? (batch.status === "CANCELLED" ? batch.createdAtMs + 1 : null);
      const { lastInsertRowid: seq } = insertBatch.run(
        batch.contract,
        batch.batchId,
        batch.pointType,
        batch.status,
        ...toPair(total),
        batch.transfers.length,
        batch.createdAtMs,
        batch.finalizeAtMs,
        endedAtMs,
        batch.finalizedAtMs,
        batch.status === "CANCELLED" ? endedAtMs : null,
      );
      batch.transfers.forEach((transfer, idx) => insertTransfer.run(seq, idx, transfer.toAddress, ...toPair(transfer.amount)));
    }
    raw.exec(extraSql);
  } finally {
    raw.close();
  }
}

leaderboardsSuite("Leaderboards on SQLite", {
  duplicateRecipients: true,
  freshStore: async () => {
    const store = open(join(directory, `fresh-${databases++}.db`));
    await store.migrate();
    return store;
  },
  oldStores: async (batches) => {
    const path = join(directory, `old-${databases++}.db`);
    writeOldDatabase(path, batches);
    return [open(path), open(path)];
  },
});

/** A lowercase address of its own for each call. */
let addresses = 0;
const address = (tag: string) => `0x${tag}${(++addresses).toString(16).padStart(40 - tag.length, "0")}` as AddressKey;

describe("compact boards and daily receipts on SQLite (migration 15)", () => {
  it("lists every FINALIZED batch for the history job again when migrating from version 14, which rebuilds boards and receipts from them", async () => {
    const path = join(directory, `v14-${databases++}.db`);
    const contract = address("c");
    const recipients = [address("a"), address("b")].sort();
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
    // Version 14 once its own backfill was done: nothing listed, the history in its tables.
    writeOldDatabase(
      path,
      [old(0, "FINALIZED"), old(1, "CANCELLED"), old(2, "FINALIZED")],
      COMPACT_BOARDS_VERSION,
      `DELETE FROM history_backfill;
       INSERT INTO leaderboard_entries (contract, point_type, address, points_w, points_f)
         VALUES ('${contract}', 'PHASE2_POINTS', '${recipients[0]}', 4, 0);`,
    );
    const store = open(path);
    await store.migrate();
    const raw = new Database(path, { readonly: true });
    const gone = raw
      .prepare("SELECT name FROM sqlite_master WHERE name IN ('leaderboard_entries', 'leaderboard_bands', 'received_history')")
      .all();
    raw.close();
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
    const path = join(directory, `tamper-${databases++}.db`);
    const store = open(path);
    await store.migrate();
    const [contract, first, second] = [address("c"), address("a"), address("b")];
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
    const raw = new Database(path);
    raw.defaultSafeIntegers(true);
    const bytes = Buffer.from(first.slice(2), "hex");
    expect(raw.prepare("SELECT day_ms, first_at_ms, last_at_ms FROM received_daily WHERE address = ?").raw(true).get(bytes)).toEqual([
      BigInt(dayMs),
      BigInt(dayMs + 1000),
      BigInt(dayMs + 3_601_000),
    ]);
    expect(dayMs % DAY_MS).toBe(0);
    // Each change is one statement on `first`'s rows, run with delta 1, verified, then undone with delta -1.
    const tampered = async (change: string): Promise<string[]> => {
      raw.prepare(change).run({ address: bytes, delta: 1 });
      const violations = await store.verify();
      raw.prepare(change).run({ address: bytes, delta: -1 });
      expect(violations.every((violation) => violation.invariant === 5)).toBe(true);
      return violations.map((violation) => violation.message);
    };
    const six = 6n * UNITS_PER_POINT;
    expect(await tampered("UPDATE board_entries SET points_f = points_f + @delta WHERE address = @address")).toEqual([
      `${contract} PHASE2_POINTS ${first}: leaderboard entry (units) is ${six + 1n} but the ledger says ${six}`,
    ]);
    expect(
      await tampered(`UPDATE board_bands SET entries = entries + @delta WHERE band = ${rankBandOf(six)} AND @address IS NOT NULL`),
    ).toEqual([`${contract} PHASE2_POINTS band ${rankBandOf(six)}: leaderboard band entries is 2 but the ledger says 1`]);
    expect(await tampered("UPDATE received_daily SET amount_f = amount_f + @delta WHERE address = @address")).toEqual([
      `${first} PHASE2_POINTS: received history (units) is ${six + 1n} but the ledger says ${six}`,
      `${first} PHASE2_POINTS ${dayMs} ${contract}: received on a day (units) is ${six + 1n} but the ledger says ${six}`,
    ]);
    const [firstAtMs, lastAtMs] = [dayMs + 1000, dayMs + 3_601_000];
    expect(await tampered("UPDATE received_daily SET last_at_ms = last_at_ms + @delta WHERE address = @address")).toEqual([
      `${first} PHASE2_POINTS ${dayMs} ${contract}: received on a day (first and last times) is ${firstAtMs} ${lastAtMs + 1} but the ledger says ${firstAtMs} ${lastAtMs}`,
    ]);
    raw.close();
    expect(await store.verify()).toEqual([]);
  });
});
