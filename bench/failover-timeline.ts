import pg from "pg";
import type { Stack, StackNode } from "./failover-stack.js";
import type { Sample, WriteRecord } from "./failover-load.js";
import { sleep } from "./stats.js";

/**
 * Where the time of one failover went (bench/failover.ts), each figure in ms after the kill:
 * from the nodes' logs, Patroni's own detection (the dead leader's last renewal of its key, which
 * expires `ttl` later, and the survivor that promoted itself), and the new primary's synchronous
 * standby; from probes every 200 ms, when the new leader's REST API answered GET /primary 200
 * (what HAProxy checks), when a connection through HAProxy's write port reached a primary, and
 * when a standby streamed from it synchronously; from the service's answers and the watcher's
 * samples, when writes succeeded again and the background work moved again.
 */

const PROBE_INTERVAL_MS = 200;
const PROBE_TIMEOUT_MS = 1000;

export interface Probed {
  /** GET /cluster shows a leader other than the killed node. */
  newLeaderMs: number | null;
  newLeader: string | null;
  /** That node's GET /primary answered 200. */
  restPrimaryMs: number | null;
  /** A new connection through HAProxy's write port reached a server not in recovery. */
  haproxyMs: number | null;
  /** Through the write port, the primary has a standby streaming synchronously (pg_stat_replication): commits can be acknowledged. */
  syncStandbyMs: number | null;
}

async function ok(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Through HAProxy's write port: whether it reaches a primary, and whether a standby streams to it synchronously. */
async function throughWritePort(stack: Stack): Promise<{ primary: boolean; syncStreaming: boolean }> {
  const client = new pg.Client({ connectionString: stack.url("postgres"), connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ recovery: boolean; sync: number }>(
      `SELECT pg_is_in_recovery() AS recovery,
              (SELECT count(*)::int FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')) AS sync`,
    );
    return { primary: rows[0]?.recovery === false, syncStreaming: rows[0]?.recovery === false && rows[0].sync > 0 };
  } catch {
    return { primary: false, syncStreaming: false };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Probes the stack after `killed` died at `killedAtMs` until every step is seen or `deadlineMs` passes. */
export async function probeFailover(stack: Stack, killed: StackNode, killedAtMs: number, deadlineMs: number): Promise<Probed> {
  const probed: Probed = { newLeaderMs: null, newLeader: null, restPrimaryMs: null, haproxyMs: null, syncStandbyMs: null };
  const since = () => Date.now() - killedAtMs;
  while (Date.now() < deadlineMs && (probed.restPrimaryMs === null || probed.haproxyMs === null || probed.syncStandbyMs === null)) {
    const startedMs = Date.now();
    const members = await stack.members();
    const leader = members?.find((member) => member.role === "leader" && member.name !== killed.name);
    if (leader && probed.newLeader === null) {
      probed.newLeader = leader.name;
      probed.newLeaderMs = since();
    }
    const node = stack.nodes.find((candidate) => candidate.name === probed.newLeader);
    if (node && probed.restPrimaryMs === null && (await ok(`http://127.0.0.1:${node.restPort}/primary`))) probed.restPrimaryMs = since();
    const writePort = await throughWritePort(stack);
    if (probed.haproxyMs === null && writePort.primary) probed.haproxyMs = since();
    if (probed.syncStandbyMs === null && writePort.syncStreaming) probed.syncStandbyMs = since();
    await sleep(Math.max(0, startedMs + PROBE_INTERVAL_MS - Date.now()));
  }
  return probed;
}

export interface FromLogs {
  /** The dead leader's last "I am the leader with the lock" before the kill (≤ 0). */
  lastRenewalMs: number | null;
  /** That renewal + ttl: when the leader key expired in etcd. */
  keyExpiredMs: number | null;
  /** "promoted self to leader by acquiring session lock" on the new leader. */
  lockTakenMs: number | null;
  /** PostgreSQL on the new leader: "database system is ready to accept read-write connections" (its promotion done). */
  promotedMs: number | null;
  /** "Synchronous standby status assigned to …" on the new leader: commits are acknowledged again. */
  syncAssignedMs: number | null;
}

export function fromLogs(stack: Stack, killed: StackNode, newLeader: string | null, killedAtMs: number, ttlSeconds: number): FromLogs {
  const after = (lines: { atMs: number; text: string }[], pattern: RegExp) =>
    lines.find((line) => line.atMs >= killedAtMs - 1000 && pattern.test(line.text))?.atMs ?? null;
  const relative = (atMs: number | null) => (atMs === null ? null : atMs - killedAtMs);
  const renewals = stack.logLines(killed).filter((line) => line.atMs <= killedAtMs && /the leader with the lock/.test(line.text));
  const lastRenewal = renewals.at(-1)?.atMs ?? null;
  const node = stack.nodes.find((candidate) => candidate.name === newLeader);
  const lines = node ? stack.logLines(node) : [];
  return {
    lastRenewalMs: relative(lastRenewal),
    keyExpiredMs: relative(lastRenewal === null ? null : lastRenewal + ttlSeconds * 1000),
    lockTakenMs: relative(after(lines, /promoted self to leader/)),
    promotedMs: relative(after(lines, /ready to accept read.write connections|database system is ready to accept connections/)),
    syncAssignedMs: relative(after(lines, /Synchronous standby status assigned to/)),
  };
}

export interface Resumed {
  /** The first 200 to a PUT sent after the kill (when its answer came). */
  firstOkMs: number | null;
  /**
   * After that 200 (ms), the first sample where the finalized counter and the checkpoint had grown
   * past their last values read before it, and where `through` had passed the kill.
   */
  finalizingAfterMs: number | null;
  throughPastKillAfterMs: number | null;
  checkpointGrewAfterMs: number | null;
  /** Transfers finalized per second in the 10 s before the kill and the 10 s after writes resumed. */
  finalizedPerSecBefore: number | null;
  finalizedPerSecAfter: number | null;
}

const RATE_WINDOW_MS = 10_000;

/** The finalized counter's rate over [fromMs, toMs] from the samples that answered. */
function rate(samples: Sample[], fromMs: number, toMs: number): number | null {
  const inside = samples.filter((sample) => sample.atMs >= fromMs && sample.atMs <= toMs && sample.finalized !== null);
  if (inside.length < 2) return null;
  const first = inside[0]!;
  const last = inside.at(-1)!;
  return last.atMs > first.atMs ? ((last.finalized! - first.finalized!) * 1000) / (last.atMs - first.atMs) : null;
}

export function resumed(records: WriteRecord[], samples: Sample[], killedAtMs: number): Resumed {
  const firstOk = records
    .filter((record) => record.sentMs >= killedAtMs && record.status === 200)
    .reduce<number | null>((min, record) => (min === null || record.answeredMs < min ? record.answeredMs : min), null);
  // Against the last values read before writes succeeded again (a step in flight at the kill may have moved them after it).
  const outage = samples.filter((sample) => sample.atMs < (firstOk ?? killedAtMs)).reverse();
  const finalizedAtKill = outage.find((sample) => sample.finalized !== null)?.finalized ?? null;
  const sizeAtKill = outage.find((sample) => sample.checkpointSize !== null)?.checkpointSize ?? null;
  const later = samples.filter((sample) => sample.atMs >= (firstOk ?? Number.POSITIVE_INFINITY));
  const firstWhere = (test: (sample: Sample) => boolean) => {
    const found = later.find(test);
    return found === undefined || firstOk === null ? null : found.atMs - firstOk;
  };
  return {
    firstOkMs: firstOk === null ? null : firstOk - killedAtMs,
    finalizingAfterMs: firstWhere((sample) => sample.finalized !== null && finalizedAtKill !== null && sample.finalized > finalizedAtKill),
    throughPastKillAfterMs: firstWhere((sample) => sample.throughMs !== null && sample.throughMs > killedAtMs),
    checkpointGrewAfterMs: firstWhere(
      (sample) => sample.checkpointSize !== null && sizeAtKill !== null && sample.checkpointSize > sizeAtKill,
    ),
    finalizedPerSecBefore: rate(samples, killedAtMs - RATE_WINDOW_MS, killedAtMs),
    finalizedPerSecAfter: firstOk === null ? null : rate(samples, firstOk, firstOk + RATE_WINDOW_MS),
  };
}
