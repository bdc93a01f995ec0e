import type { FastifyBaseLogger } from "fastify";
import { REPLICA_CHECK_INTERVAL_MS } from "../domain/replica-lag.js";
import { JobLoop } from "../job-loop.js";
import type { Metrics } from "../metrics.js";
import type { ReplicaStatus, ReplicaStore } from "../store/store.js";

/**
 * The replica check (DATABASE_READ_URL): every REPLICA_CHECK_INTERVAL_MS, samples the primary's
 * WAL position and places the replica's replay against it (src/store/postgres/replica.ts), which
 * decides whether the reads a replica may serve go there; reports the lag and the decision in
 * /metrics, and logs one line when the decision changes (not one a second). Each check is bounded
 * by the pools' connect and statement timeouts; a check that fails is logged and the next one
 * runs as usual, and it touches no other job. It runs in every process that serves reads, the
 * finalizer's or not (src/server.ts). Without a replica it does nothing after its first check.
 */
export class ReplicaCheckJob {
  private readonly loop: JobLoop;
  private lastInUse: boolean | null = null;

  constructor(
    private readonly store: Pick<ReplicaStore, "checkReplica">,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {
    this.loop = new JobLoop(
      async () => ((await this.runOnce()) === null ? null : REPLICA_CHECK_INTERVAL_MS),
      (error) => {
        this.log.error({ err: error }, "replica check failed; checking again at the next interval");
        return REPLICA_CHECK_INTERVAL_MS;
      },
    );
  }

  /** One check; null when there is no replica. */
  async runOnce(): Promise<ReplicaStatus | null> {
    const status = await this.store.checkReplica();
    if (status === null) return null;
    this.metrics?.replicaLagSeconds.set(status.lagSeconds);
    this.metrics?.replicaInUse.set(status.inUse ? 1 : 0);
    if (status.inUse !== this.lastInUse) this.reportChange(status);
    this.lastInUse = status.inUse;
    return status;
  }

  private reportChange(status: ReplicaStatus): void {
    const lagSeconds = Number(status.lagSeconds.toFixed(3));
    if (status.inUse) this.log.info({ replica: "in use", lagSeconds }, "the replica serves the reads that may be a replica's");
    // The first check finds most replicas in use; one that is not at start-up is worth the same line.
    else this.log.warn({ replica: "not used", lagSeconds }, `reads go to the primary: ${status.notUsedBecause ?? "not in use"}`);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
