import type { BackupsPort, BackupsStore } from "../ports/backups.js";
import { toNullableNumber, type PgPool, type Queryable } from "./db.js";

/** One row (id 1); the time only moves forward, so a late record of an older backup does not hide a newer one. */
async function recordBackup(db: Queryable, completedAtMs: number): Promise<void> {
  await db.query({
    name: "pl-record-backup",
    text: `INSERT INTO backup_state (id, last_success_at_ms) VALUES (1, $1)
           ON CONFLICT (id) DO UPDATE SET last_success_at_ms = GREATEST(backup_state.last_success_at_ms, EXCLUDED.last_success_at_ms)`,
    values: [completedAtMs],
  });
}

async function lastBackupAtMs(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ last_success_at_ms: string }>({
    name: "pl-last-backup",
    text: "SELECT last_success_at_ms FROM backup_state WHERE id = 1",
  });
  return toNullableNumber(rows[0]?.last_success_at_ms ?? null);
}

/** The backup record, over pg. */
export const backups = { recordBackup, lastBackupAtMs } satisfies BackupsPort<Queryable, "async">;

/** The store's backup operations, each guarded by `run` as the adapter's other reads and writes. */
export function backupOperations(pool: PgPool, run: <T>(work: () => Promise<T>) => Promise<T>): BackupsStore {
  return {
    recordBackup: (completedAtMs) => run(() => recordBackup(pool, completedAtMs)),
    lastBackupAtMs: () => run(() => lastBackupAtMs(pool)),
  };
}
