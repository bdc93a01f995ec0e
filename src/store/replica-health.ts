/**
 * Where the reads a replica may serve (src/store/ports/replica.ts) were answered, counted for
 * /metrics (points_database_replica_reads_total): by the replica, or by the primary (no replica,
 * one not in use, or one that failed or lacked the answer). One tally per process, as
 * database-health.ts's; the metrics read it at each scrape.
 */

export type ReplicaReadServer = "replica" | "primary";

export const REPLICA_READ_SERVERS: readonly ReplicaReadServer[] = ["replica", "primary"];

const served = new Map<ReplicaReadServer, number>();

export function countReplicaRead(server: ReplicaReadServer): void {
  served.set(server, (served.get(server) ?? 0) + 1);
}

export function replicaReadCounts(): ReadonlyMap<ReplicaReadServer, number> {
  return served;
}
