/**
 * How far behind a PostgreSQL replica is, in seconds, measured by positions rather than by
 * timestamps (docs/operations.md, Reads from a replica).
 *
 * Why not `now() - pg_last_xact_replay_timestamp()` on the replica: it is the age of the last
 * transaction replayed, so on a primary that writes nothing for a minute it reads 60 s while the
 * replica has everything; and it cannot see a replica that stopped replaying on a primary that is
 * idle too. Why not `pg_stat_replication.replay_lag` on the primary: it needs monitoring
 * privileges, is NULL while idle, and behind HAProxy's replica port the primary does not know
 * which standby a connection reached.
 *
 * What is measured instead: every check asks the primary for its WAL position
 * (pg_current_wal_lsn(), which every commit acknowledged so far is at or before), noting the time
 * it was asked at; then asks the replica how far it has replayed (pg_last_wal_replay_lsn()). The
 * newest primary sample at or below the replayed position says the replica holds every commit
 * acknowledged before that sample was asked for: its lag is at most the time since. Idle or busy,
 * that bound is real; it is at most one check interval (REPLICA_CHECK_INTERVAL_MS) above the
 * truth while the primary writes, and exact (a few ms) while the replica keeps up.
 */

/** How often the replica check (src/worker/replica-check.ts) samples both servers. */
export const REPLICA_CHECK_INTERVAL_MS = 1000;
/** Primary samples kept: a replica up to this many check intervals behind still gets a measured lag (10 minutes). */
export const REPLICA_LAG_SAMPLES = 600;

/** The primary's WAL position, and when it was asked for (before the question left: conservative). */
export interface PrimarySample {
  askedAtMs: number;
  lsn: bigint;
}

/** What the service knows of its replica (src/store/postgres/replica.ts keeps it, the checks feed it). */
export interface ReplicaState {
  /** The replica answered the last check, and no read has failed on it since. */
  reachable: boolean;
  /**
   * The replica holds every commit acknowledged before this time (the newest primary sample its
   * replay has reached); null while no check has placed it yet.
   */
  heldAtMs: number | null;
  /** When the service began to watch the replica: a replica never placed is this far behind, at least. */
  sinceMs: number;
}

/** A `pg_lsn` as text (`16/B374D848`: two hexadecimal halves) as one number. */
export function parseLsn(text: string): bigint {
  const match = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(text);
  if (match === null) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${match[1]!}`) << 32n) | BigInt(`0x${match[2]!}`);
}

/** Adds a sample, keeping the newest REPLICA_LAG_SAMPLES (they are asked in time order). */
export function withSample(samples: readonly PrimarySample[], sample: PrimarySample): PrimarySample[] {
  return [...samples, sample].slice(-REPLICA_LAG_SAMPLES);
}

/**
 * The time of the newest sample the replayed position has reached. When it has reached none of
 * those kept, `previous` still holds if it is older than all of them (a replica paused longer than
 * the samples go); otherwise nothing is known (null: e.g. HAProxy's port now reaches another
 * standby, further behind than the samples go).
 */
export function heldAtOf(samples: readonly PrimarySample[], replayedLsn: bigint, previous: number | null): number | null {
  for (let index = samples.length - 1; index >= 0; index--) {
    const sample = samples[index]!;
    if (sample.lsn <= replayedLsn) return sample.askedAtMs;
  }
  const oldest = samples[0];
  return previous !== null && (oldest === undefined || previous <= oldest.askedAtMs) ? previous : null;
}

/** Seconds the replica may be behind at nowMs: since the last moment it is known to have held everything. */
export function replicaLagSeconds(state: ReplicaState, nowMs: number): number {
  return Math.max(0, nowMs - (state.heldAtMs ?? state.sinceMs)) / 1000;
}

/** The one rule: a replica serves reads only while it answers and is no further behind than the bound. */
export function replicaUsable(state: ReplicaState, nowMs: number, maxLagSeconds: number): boolean {
  return state.reachable && state.heldAtMs !== null && replicaLagSeconds(state, nowMs) <= maxLagSeconds;
}
