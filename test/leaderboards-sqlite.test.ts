import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { DAY_MS, type DayWindow } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { toPair } from "../src/store/sqlite/db.js";
import { projectionPathOf } from "../src/store/sqlite/projection-file.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { compactHistorySuite, leaderboardsSuite, type HistoryTamper, type OldBatch, type WindowBoardRow } from "./leaderboards-suite.js";

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
/** Each fresh store's database file, for windowBoards and raiseWindowEntries. */
const paths = new Map<LedgerStore, string>();
function open(path: string): LedgerStore {
  const store = createSqliteStore({ path, synchronous: "NORMAL" });
  stores.push(store);
  paths.set(store, path);
  return store;
}

/** A connection of its own to a ledger file and its projection file (src/store/sqlite/projection-file.ts). */
function rawWithProjection(path: string): Database.Database {
  const raw = new Database(path);
  raw.prepare("ATTACH DATABASE ? AS projection").run(projectionPathOf(path));
  return raw;
}

/** A connection of its own to a database file for one read or change, closed at once. */
function withRaw<T>(path: string, use: (raw: Database.Database) => T): T {
  const raw = rawWithProjection(path);
  try {
    return use(raw);
  } finally {
    raw.close();
  }
}

function windowBoardsOf(path: string): { boards: WindowBoardRow[]; strayEntries: number } {
  return withRaw(path, (raw) => ({
    boards: raw
      .prepare("SELECT from_ms AS fromMs, to_ms AS toMs, state, batches FROM window_boards ORDER BY window_id")
      .all() as WindowBoardRow[],
    strayEntries: raw
      .prepare("SELECT count(*) FROM window_entries WHERE window_id NOT IN (SELECT window_id FROM window_boards)")
      .pluck()
      .get() as number,
  }));
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
  windowBoards: async (store) => windowBoardsOf(paths.get(store)!),
  shiftWindowEntries: async (store, points) => {
    withRaw(paths.get(store)!, (raw) => raw.prepare("UPDATE window_entries SET points_w = points_w + ?").run(points));
  },
});

compactHistorySuite("Compact boards and daily receipts on SQLite", {
  version: COMPACT_BOARDS_VERSION,
  oldDatabase: async (batches, entry) => {
    const path = join(directory, `v14-${databases++}.db`);
    writeOldDatabase(
      path,
      batches,
      COMPACT_BOARDS_VERSION,
      // Version 14 once its own backfill was done: nothing listed, the history in its tables.
      `DELETE FROM history_backfill;
       INSERT INTO leaderboard_entries (contract, point_type, address, points_w, points_f)
         VALUES ('${entry.contract}', 'PHASE2_POINTS', '${entry.address}', ${toPair(entry.units).join(", ")});`,
    );
    const oldTables = async () => {
      const raw = new Database(path, { readonly: true });
      try {
        return raw
          .prepare("SELECT name FROM sqlite_master WHERE name IN ('leaderboard_entries', 'leaderboard_bands', 'received_history')")
          .pluck()
          .all() as string[];
      } finally {
        raw.close();
      }
    };
    return { store: open(path), oldTables };
  },
  freshDatabase: async () => {
    const path = join(directory, `fresh-${databases++}.db`);
    const store = open(path);
    await store.migrate();
    const bytes = (address: string) => Buffer.from(address.slice(2), "hex");
    const changes: Record<HistoryTamper, string> = {
      entry: "UPDATE board_entries SET points_f = points_f + @delta WHERE address = @address",
      band: "UPDATE board_bands SET entries = entries + @delta WHERE band = @band AND @address IS NOT NULL",
      dayAmount: "UPDATE received_daily SET amount_f = amount_f + @delta WHERE address = @address",
      dayLast: "UPDATE received_daily SET last_at_ms = last_at_ms + @delta WHERE address = @address",
    };
    return {
      store,
      dayTimes: async (address) =>
        withRaw(path, (raw) =>
          (
            raw
              .prepare("SELECT day_ms, first_at_ms, last_at_ms FROM received_daily WHERE address = ?")
              .raw(true)
              .get(bytes(address)) as number[]
          ).map(Number),
        ) as [number, number, number],
      tamper: async (kind, address, band, delta) => {
        withRaw(path, (raw) => raw.prepare(changes[kind]).run({ address: bytes(address), band, delta }));
      },
    };
  },
});

describe("Window boards on SQLite", () => {
  it("answers a read of an ended window while another process holds the write lock, and asks for its window board at the next read", async () => {
    const path = join(directory, `busy-${databases++}.db`);
    const store = open(path);
    await store.migrate();
    const t0 = Date.UTC(2026, 2, 1);
    const contract = `0x${"ab".repeat(20)}` as AddressKey;
    const recipient = `0x${"cd".repeat(20)}` as AddressKey;
    await store.credit({ address: contract, creditId: "fund", pointType: "PHASE2_POINTS", amount: 10n * UNITS_PER_POINT, createdAtMs: t0 });
    const submitted = await store.submitBatch({
      contract,
      batchId: "b1",
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient, amount: 3n * UNITS_PER_POINT }],
      total: 3n * UNITS_PER_POINT,
      secondsToFinalize: 1,
      createdAtMs: t0 + 1000,
    });
    expect(submitted.kind).toBe("accepted");
    expect(await store.finalizeDue(t0 + 5000, 10)).toHaveLength(1);
    expect((await store.applyProjection(10, t0 + 5000)).applied).toBe(1);
    const window: DayWindow = { fromDay: "2026-03-01", toDay: "2026-03-02", fromMs: t0, toMs: t0 + DAY_MS };
    const query = { contract, pointType: "PHASE2_POINTS", window, limit: 10, after: null, nowMs: t0 + 2 * DAY_MS };
    const expected = { throughMs: t0 + 5000, participants: 1, rows: [{ address: recipient, units: 3n * UNITS_PER_POINT }], more: false };
    const other = rawWithProjection(path);
    try {
      // Another process's write lock on the projection file outlasts the busy timeout: the read answers, and asks for nothing.
      other.exec("BEGIN IMMEDIATE");
      expect(await store.readBoard(query)).toEqual(expected);
      other.exec("ROLLBACK");
    } finally {
      other.close();
    }
    expect(windowBoardsOf(path).boards).toEqual([]);
    expect(await store.readBoard(query)).toEqual(expected);
    expect(windowBoardsOf(path).boards).toEqual([{ fromMs: t0, toMs: t0 + DAY_MS, state: "building", batches: 0 }]);
  }, 30_000);
});
