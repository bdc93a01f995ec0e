import type { BackupsPort, BackupsStore } from "../ports/backups.js";
import { statement, type SqliteDb } from "./db.js";

/** One row (id 1); the time only moves forward, so a late record of an older backup does not hide a newer one. */
function recordBackup(db: SqliteDb, completedAtMs: number): void {
  statement(
    db,
    `INSERT INTO backup_state (id, last_success_at_ms) VALUES (1, ?)
     ON CONFLICT (id) DO UPDATE SET last_success_at_ms = max(last_success_at_ms, excluded.last_success_at_ms)`,
  ).run(completedAtMs);
}

function lastBackupAtMs(db: SqliteDb): number | null {
  // The connection reads integers as bigint (db.ts); epoch milliseconds fit a double exactly.
  const at = statement(db, "SELECT last_success_at_ms FROM backup_state WHERE id = 1").pluck().get() as bigint | number | undefined;
  return at === undefined ? null : Number(at);
}

/** The backup record, over better-sqlite3. */
export const backups = { recordBackup, lastBackupAtMs } satisfies BackupsPort<SqliteDb, "sync">;

/** The store's backup operations over the current writer connection (`current`: replaced after a read-only recovery). */
export function backupOperations(current: () => SqliteDb): BackupsStore {
  return {
    recordBackup: async (completedAtMs) => {
      const db = current();
      db.transaction(() => recordBackup(db, completedAtMs)).immediate();
    },
    lastBackupAtMs: async () => lastBackupAtMs(current()),
  };
}
