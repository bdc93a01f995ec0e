import type { Io, Out } from "./io.js";

/**
 * When the last backup of this database completed (docs/operations.md, "Backup and restore"):
 * written by `points-ledger backup` (SQLite, after its copy is on disk) or `backup --record` (after
 * an operator's own pg_dump or pgBackRest run), read by /metrics as
 * points_backup_last_success_timestamp_seconds, which PointsLedgerBackupTooOld watches.
 */
export interface BackupsPort<Db, out M extends Io = Io> {
  /** Records a backup completed at `completedAtMs`; an earlier time than the one recorded changes nothing. */
  recordBackup(db: Db, completedAtMs: number): Out<M, void>;
  /** When the last recorded backup completed, or null when none was ever recorded. */
  lastBackupAtMs(db: Db): Out<M, number | null>;
}

/** The LedgerStore's view of the backup record. */
export interface BackupsStore {
  recordBackup(completedAtMs: number): Promise<void>;
  lastBackupAtMs(): Promise<number | null>;
}
