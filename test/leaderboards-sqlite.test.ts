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
import { builtSqliteStore, NO_BUILT_STORE } from "./helpers/app-over-store.js";
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
function open(path: string, create = createSqliteStore): LedgerStore {
  const store = create({ path, synchronous: "NORMAL" });
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

/**
 * The suite over a store of `create`: the sources' (under the test runner the projection runs
 * inline, src/ledger/sqlite-projection.ts) or the built one, whose projection runs in its worker
 * thread as a server's does.
 */
function sqliteLeaderboards(name: string, create: typeof createSqliteStore) {
  leaderboardsSuite(name, {
    duplicateRecipients: true,
    freshStore: async () => {
      const store = open(join(directory, `fresh-${databases++}.db`), create);
      await store.migrate();
      return store;
    },
    oldStores: async (batches) => {
      const path = join(directory, `old-${databases++}.db`);
      writeOldDatabase(path, batches);
      return [open(path, create), open(path, create)];
    },
    windowBoards: async (store) => windowBoardsOf(paths.get(store)!),
    shiftWindowEntries: async (store, points) => {
      withRaw(paths.get(store)!, (raw) => raw.prepare("UPDATE window_entries SET points_w = points_w + ?").run(points));
    },
  });
}

sqliteLeaderboards("Leaderboards on SQLite", createSqliteStore);

const built = await builtSqliteStore();
if (built) sqliteLeaderboards("Leaderboards on SQLite, the projection in its worker thread (the built store)", built);
else {
  describe.skip(`Leaderboards on SQLite, the projection in its worker thread: ${NO_BUILT_STORE}`, () => {
    it("skipped", () => undefined);
  });
}

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

describe("The projection's own file on SQLite", () => {
  const t0 = Date.UTC(2026, 4, 1);
  const contract = `0x${"ab".repeat(20)}` as AddressKey;
  const recipients = [`0x${"01".repeat(20)}`, `0x${"02".repeat(20)}`, `0x${"03".repeat(20)}`] as AddressKey[];
  const allTime: DayWindow = { fromDay: null, toDay: null, fromMs: null, toMs: null };
  const boardOf = (store: LedgerStore) =>
    store.readBoard({ contract, pointType: "PHASE2_POINTS", window: allTime, limit: 10, after: null, nowMs: t0 + DAY_MS });

  /** A ledger with three finalized batches, applied; its board as read then. */
  async function ledgerWithBoard(path: string) {
    const store = open(path);
    await store.migrate();
    await store.credit({
      address: contract,
      creditId: "fund",
      pointType: "PHASE2_POINTS",
      amount: 100n * UNITS_PER_POINT,
      createdAtMs: t0,
    });
    for (let i = 0; i < 3; i++) {
      const transfers = recipients.slice(i).map((toAddress, k) => ({ toAddress, amount: BigInt(k + i + 1) * UNITS_PER_POINT }));
      const total = transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
      const submitted = await store.submitBatch({
        contract,
        batchId: `b${i}`,
        pointType: "PHASE2_POINTS",
        transfers,
        total,
        secondsToFinalize: 1,
        createdAtMs: t0 + i * 1000,
      });
      expect(submitted.kind).toBe("accepted");
    }
    expect(await store.finalizeDue(t0 + 10_000, 10)).toHaveLength(3);
    while ((await store.applyProjection(10, t0 + 10_000)).more);
    const board = await boardOf(store);
    expect(board.participants).toBe(3);
    expect(board.throughMs).toBeGreaterThanOrEqual(t0 + 4000);
    await store.close();
    return board;
  }

  /** Applies every queued batch; the board then, and verify's findings. */
  async function caughtUp(store: LedgerStore) {
    for (let steps = 0; (await store.projectionState()).queued > 0 && steps < 10; steps++) await store.applyProjection(10, t0 + 10_000);
    return { board: await boardOf(store), violations: await store.verify() };
  }

  it("rebuilds a missing projection file from the queue, which keeps every FINALIZED batch", async () => {
    const path = join(directory, `rebuilt-${databases++}.db`);
    const before = await ledgerWithBoard(path);
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${projectionPathOf(path)}${suffix}`, { force: true });
    const store = open(path);
    await store.migrate();
    expect(await store.projectionState()).toMatchObject({ throughMs: 0, queued: 3 });
    expect(await boardOf(store)).toMatchObject({ throughMs: 0, participants: 0, rows: [] });
    expect(await caughtUp(store)).toEqual({ board: before, violations: [] });
  });

  it("rebuilds a projection file built for another copy of the ledger (a backup's copy has a new ledger_id), and keeps its own", async () => {
    const path = join(directory, `original-${databases++}.db`);
    const before = await ledgerWithBoard(path);
    const copy = join(directory, `copy-${databases++}.db`);
    const restored = join(directory, `restored-${databases++}.db`);
    for (const target of [copy, restored]) {
      withRaw(path, (raw) => raw.prepare("VACUUM main INTO ?").run(target));
      withRaw(path, (raw) => raw.prepare("VACUUM projection INTO ?").run(projectionPathOf(target)));
    }
    // A copy of both files together is the same ledger: its projection file is used as it is.
    const same = open(copy);
    await same.migrate();
    expect(await same.projectionState()).toMatchObject({ throughMs: before.throughMs, queued: 0 });
    expect(await boardOf(same)).toEqual(before);
    // A backup's copy is another ledger (ops-commands.ts newLedgerCopy): the file beside it is emptied and rebuilt.
    withRaw(restored, (raw) => raw.exec("UPDATE main.projection_state SET ledger_id = lower(hex(randomblob(16))), through_ms = 0"));
    const store = open(restored);
    await store.migrate();
    expect(await store.projectionState()).toMatchObject({ throughMs: 0, queued: 3 });
    expect(await caughtUp(store)).toEqual({ board: before, violations: [] });
  });
});
