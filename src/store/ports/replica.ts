import type { AccountsStore } from "./accounts.js";
import type { HistoryStore, LeaderboardsStore } from "./leaderboards.js";
import type { SnapshotsStore } from "./snapshots.js";
import type { TransfersStore } from "./transfers.js";

/**
 * Reads from a replica (DATABASE_READ_URL, docs/operations.md "Reads from a replica"): the one
 * list of the reads a replica may serve, because their answers state their freshness or change
 * rarely, and nobody reads them back right after writing them:
 * - leaderboards and ranks: every answer says its `through`, the replica's own, and is exact for it;
 * - an address's balances read publicly (PUBLIC_READS, no token): a program's page of its users'
 *   points, at most REPLICA_MAX_LAG_SECONDS late (an admin's read, after a credit, stays on the primary);
 * - snapshots, their proofs and trees: immutable once taken (a replica that does not have one yet
 *   sends the read to the primary, so a snapshot is readable as soon as it is taken);
 * - the CSV exports: pages of separate reads already, each as of its own moment.
 * Every other read stays on the primary, so an operator reads its own writes. Callers choose a
 * read from here when the read may be a replica's (src/http/routes/); where it goes is decided in
 * one place, the adapter's (src/store/postgres/replica.ts).
 */
export type ReplicaReads = Pick<
  AccountsStore & LeaderboardsStore & HistoryStore & SnapshotsStore & TransfersStore,
  | "readBoard"
  | "readStanding"
  | "getBalances"
  | "getAssetEarnings"
  | "getBalancesAsOf"
  | "getSnapshot"
  | "findSnapshotLeafChunk"
  | "getSnapshotNodeChunks"
  | "listSnapshotLeafChunks"
  | "listSnapshotNodeChunks"
  | "listTransfers"
  | "listAccountBalances"
>;

/** Every name of ReplicaReads, for adapters that build it operation by operation. */
export const REPLICA_READ_NAMES = [
  "readBoard",
  "readStanding",
  "getBalances",
  "getAssetEarnings",
  "getBalancesAsOf",
  "getSnapshot",
  "findSnapshotLeafChunk",
  "getSnapshotNodeChunks",
  "listSnapshotLeafChunks",
  "listSnapshotNodeChunks",
  "listTransfers",
  "listAccountBalances",
] as const satisfies readonly (keyof ReplicaReads)[];

/** What one check of the replica found (src/worker/replica-check.ts reports it in /metrics). */
export interface ReplicaStatus {
  /** The reads of ReplicaReads go to the replica now. */
  inUse: boolean;
  /** At most this far behind the primary (src/domain/replica-lag.ts); grows while it cannot be reached. */
  lagSeconds: number;
  /** Why it is not in use (unreachable, too far behind), for the log; null while it is. */
  notUsedBecause: string | null;
}

export interface ReplicaStore {
  /** The reads that a replica may serve; without one (SQLite, no DATABASE_READ_URL) the store's own. */
  readonly replicaReads: ReplicaReads;
  /** Measures the replica and decides whether it serves (bounded: each question has its timeouts); null when there is none. */
  checkReplica(): Promise<ReplicaStatus | null>;
}
