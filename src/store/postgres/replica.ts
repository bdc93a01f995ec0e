import {
  heldAtOf,
  parseLsn,
  replicaLagSeconds,
  replicaUsable,
  withSample,
  type PrimarySample,
  type ReplicaState,
} from "../../domain/replica-lag.js";
import type { LedgerOperations } from "../store.js";
import { REPLICA_READ_NAMES, type ReplicaReads, type ReplicaStatus } from "../ports/replica.js";
import { countReplicaRead } from "../replica-health.js";
import * as accounts from "./accounts.js";
import * as credits from "./credits.js";
import { createPool, errorKindOf, guard, type PgPool, type PostgresOptions } from "./db.js";
import type { DatabaseErrorKind } from "../database-health.js";
import { historyOperations } from "./history.js";
import { snapshotOperations } from "./snapshots.js";
import { transfers } from "./transfers.js";

/**
 * Reads from a replica (DATABASE_READ_URL): a second pool, used only by the reads of
 * ReplicaReads (src/store/ports/replica.ts), and the one place that decides, read by read,
 * whether the replica or the primary answers (ReplicaRouter.read). The replica serves while the
 * last check reached it and it is no further behind than REPLICA_MAX_LAG_SECONDS, the lag
 * measured by WAL positions (src/domain/replica-lag.ts says how, and why not by timestamps);
 * otherwise the read goes to the primary. A read that fails on the replica (it went down, a
 * recovery conflict cancelled the statement) is run again on the primary, so a replica's failure
 * is never the answer's; one that finds nothing the primary may have (a snapshot just taken) is
 * asked of the primary too. A replica that is only busy (no free connection within the pool's
 * wait, a statement past its timeout) answers 503 + Retry-After as the primary would when busy:
 * sending its readers to the primary would load the writes with them.
 */

export interface ReplicaOptions {
  connectionString: string;
  maxLagSeconds: number;
}

/** PostgresOptions, and the replica when there is one (DATABASE_READ_URL). */
export interface PostgresStoreOptions extends PostgresOptions {
  replica?: ReplicaOptions | null;
}

/** The primary's WAL position: every commit acknowledged so far is at or before it. */
async function primaryWalPosition(primary: PgPool): Promise<bigint> {
  const { rows } = await primary.query<{ lsn: string }>({
    name: "pl-replica-primary-lsn",
    text: "SELECT pg_current_wal_lsn()::text AS lsn",
  });
  return parseLsn(rows[0]!.lsn);
}

/** How far the replica has replayed; null when the server is no standby (the read URL reaches a primary: nothing to wait for). */
async function replicaReplayPosition(replica: PgPool): Promise<bigint | null> {
  const { rows } = await replica.query<{ replayed: string | null }>({
    name: "pl-replica-replayed",
    text: "SELECT CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_replay_lsn(), '0/0')::text END AS replayed",
  });
  const replayed = rows[0]!.replayed;
  return replayed === null ? null : parseLsn(replayed);
}

type Side = "replica" | "primary";

/** Failures after which the replica counts as gone until a check reaches it again. */
const DISCARDING_KINDS: ReadonlySet<DatabaseErrorKind> = new Set(["connection", "shutdown", "vanished", "read_only"]);

export class ReplicaRouter {
  private samples: PrimarySample[] = [];
  private state: ReplicaState;
  private lastFailure: string | null = null;

  constructor(
    private readonly primary: PgPool,
    readonly replica: PgPool,
    private readonly maxLagSeconds: number,
  ) {
    this.state = { reachable: false, heldAtMs: null, sinceMs: Date.now() };
  }

  /** Whether a read of ReplicaReads goes to the replica now. */
  inUse(nowMs = Date.now()): boolean {
    return replicaUsable(this.state, nowMs, this.maxLagSeconds);
  }

  /**
   * Runs `work` on the replica when it is in use, else on the primary. On the replica, a failure
   * or an answer that is `absent` (what a lagging replica may not have yet) runs it on the primary.
   */
  async read<T>(work: (side: Side) => Promise<T>, absent: (result: T) => boolean): Promise<T> {
    if (!this.inUse()) return this.onPrimary(work);
    let result: T;
    try {
      result = await work("replica");
    } catch (error) {
      const kind = errorKindOf(error);
      // The replica busy (no free connection in time, a statement past its timeout): the primary is
      // not asked instead, which would move the readers' load onto the writes (measured: bench/replica-reads.ts).
      if (kind === "overloaded" || kind === "timeout") throw error;
      // The replica went away: not used until a check reaches it again (within REPLICA_CHECK_INTERVAL_MS).
      if (kind !== undefined && DISCARDING_KINDS.has(kind)) this.markUnreachable(error);
      // Gone, or a statement cancelled by a recovery conflict (the replica's own), or any other
      // failure: the primary answers, or fails as it would have anyway.
      return this.onPrimary(work);
    }
    if (absent(result)) return this.onPrimary(work);
    countReplicaRead("replica");
    return result;
  }

  private onPrimary<T>(work: (side: Side) => Promise<T>): Promise<T> {
    countReplicaRead("primary");
    return work("primary");
  }

  private markUnreachable(error: unknown): void {
    this.state = { ...this.state, reachable: false };
    this.lastFailure = error instanceof Error ? error.message : String(error);
  }

  /**
   * One check: the primary's position is sampled (none while it cannot be reached: the replica's
   * lag then grows from its last placing), then the replica's replay placed against the samples.
   * Each question is bounded by the pools' connect and statement timeouts.
   */
  async check(): Promise<ReplicaStatus> {
    const askedAtMs = Date.now();
    const lsn = await primaryWalPosition(this.primary).catch(() => null);
    if (lsn !== null) this.samples = withSample(this.samples, { askedAtMs, lsn });
    try {
      const replayed = await replicaReplayPosition(this.replica);
      const heldAtMs = replayed === null ? askedAtMs : heldAtOf(this.samples, replayed, this.state.heldAtMs);
      this.state = { ...this.state, reachable: true, heldAtMs };
      this.lastFailure = null;
    } catch (error) {
      this.markUnreachable(error);
    }
    return this.status(Date.now());
  }

  private status(nowMs: number): ReplicaStatus {
    const lagSeconds = replicaLagSeconds(this.state, nowMs);
    const inUse = this.inUse(nowMs);
    let notUsedBecause: string | null = null;
    if (!this.state.reachable) notUsedBecause = `the replica cannot be reached: ${this.lastFailure ?? "not checked yet"}`;
    else if (this.state.heldAtMs === null) notUsedBecause = "the replica's replay is behind every primary position sampled";
    else if (!inUse) notUsedBecause = `the replica is ${lagSeconds.toFixed(1)} s behind (REPLICA_MAX_LAG_SECONDS ${this.maxLagSeconds})`;
    return { inUse, lagSeconds, notUsedBecause };
  }
}

/** An answer a lagging replica may lack while the primary has it: the read is asked of the primary too. */
const ABSENT: { [K in keyof ReplicaReads]?: (result: Awaited<ReturnType<ReplicaReads[K]>>) => boolean } = {
  getSnapshot: (snapshot) => snapshot === null,
  findSnapshotLeafChunk: (chunk) => chunk === null,
  getSnapshotNodeChunks: (chunks) => chunks.size === 0,
  listSnapshotLeafChunks: (chunks) => chunks.length === 0,
  listSnapshotNodeChunks: (chunks) => chunks.length === 0,
};

/** The leaderboard reads of the flows (src/ledger/leaderboards.ts) with their snapshots on a pool. */
export type BoardReadsOn = (pool: PgPool) => Pick<LedgerOperations, "readBoard" | "readStanding">;

/** The reads of ReplicaReads on one pool, unguarded (the caller guards the routed operation once). */
function readsOn(pool: PgPool, boardsOn: BoardReadsOn): ReplicaReads {
  const direct = <T>(work: () => Promise<T>) => work();
  const snapshots = snapshotOperations(pool, direct);
  return {
    ...boardsOn(pool),
    getBalances: (address, pointTypes) => accounts.readBalances(pool, address, pointTypes),
    getAssetEarnings: (address) => credits.readAssetEarnings(pool, address),
    ...historyOperations(pool, direct),
    getSnapshot: snapshots.getSnapshot,
    findSnapshotLeafChunk: snapshots.findSnapshotLeafChunk,
    getSnapshotNodeChunks: snapshots.getSnapshotNodeChunks,
    listSnapshotLeafChunks: snapshots.listSnapshotLeafChunks,
    listSnapshotNodeChunks: snapshots.listSnapshotNodeChunks,
    listTransfers: (contract, query) => transfers.listTransfers(pool, contract, query),
    listAccountBalances: (query) => transfers.listAccountBalances(pool, query),
  };
}

type Operation = (...args: never[]) => Promise<unknown>;

/** Each read of ReplicaReads routed by `router`, guarded as the store's other operations (503, never a driver error). */
function routedReads(router: ReplicaRouter, primary: PgPool, onSide: Record<Side, ReplicaReads>): ReplicaReads {
  const routed: Record<string, Operation> = {};
  for (const name of REPLICA_READ_NAMES) {
    const absent = (ABSENT[name] ?? (() => false)) as (result: unknown) => boolean;
    routed[name] = (...args: never[]) => guard(primary, () => router.read((side) => (onSide[side][name] as Operation)(...args), absent));
  }
  return routed as unknown as ReplicaReads;
}

export interface Replica {
  reads: ReplicaReads;
  check(): Promise<ReplicaStatus>;
  close(): Promise<void>;
}

/** The replica's pool (sized and timed as the primary's) and its routed reads; null without DATABASE_READ_URL. */
export function openReplica(options: PostgresStoreOptions, primary: PgPool, boardsOn: BoardReadsOn): Replica | null {
  if (!options.replica) return null;
  const pool = createPool({ ...options, connectionString: options.replica.connectionString });
  const router = new ReplicaRouter(primary, pool, options.replica.maxLagSeconds);
  return {
    reads: routedReads(router, primary, { replica: readsOn(pool, boardsOn), primary: readsOn(primary, boardsOn) }),
    check: () => router.check(),
    close: () => pool.end(),
  };
}
