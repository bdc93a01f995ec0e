import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { toPair } from "../src/store/sqlite/db.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { leaderboardsSuite, type OldBatch } from "./leaderboards-suite.js";

/** The schema version that added the leaderboards (and history_backfill). */
const LEADERBOARDS_VERSION = 14;

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

/** A database at the schema before the leaderboards, holding `batches` as such a database held them. */
function writeOldDatabase(path: string, batches: readonly OldBatch[]): void {
  const raw = new Database(path);
  try {
    // A fixture: no need to wait for the disk after each migration.
    raw.pragma("synchronous = OFF");
    raw.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
    for (const migration of MIGRATIONS.filter((m) => m.version < LEADERBOARDS_VERSION)) {
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
