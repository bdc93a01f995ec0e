import type { EventDataByType, LedgerEvent } from "./domain/events.js";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { OVERDUE_BATCH_SECONDS, OVERDUE_BATCHES_COUNTED_MAX } from "./domain/limits.js";
import type { LedgerStore } from "./store/store.js";
import { DATABASE_ERROR_KINDS, databaseHealthCounts, type DatabaseErrorKind } from "./store/database-health.js";
import { REPLICA_READ_SERVERS, replicaReadCounts } from "./store/replica-health.js";

const BACKUP_GAUGE_NAME = "points_backup_last_success_timestamp_seconds";

/** One registry per app, so tests can build several apps in one process. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({
      name: "points_http_requests_total",
      help: "HTTP requests by route and status",
      labelNames: ["method", "route", "status"] as const,
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: "points_http_request_duration_seconds",
      help: "HTTP request latency by route and status",
      labelNames: ["method", "route", "status"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    batchesAccepted: new Counter({ name: "points_batches_accepted_total", help: "batches accepted", registers: [registry] }),
    transfersAccepted: new Counter({
      name: "points_transfers_accepted_total",
      help: "transfers in accepted batches",
      registers: [registry],
    }),
    batchesCancelled: new Counter({ name: "points_batches_cancelled_total", help: "batches cancelled", registers: [registry] }),
    batchesFinalized: new Counter({
      name: "points_batches_finalized_total",
      help: "batches finalized by this process",
      registers: [registry],
    }),
    transfersFinalized: new Counter({
      name: "points_transfers_finalized_total",
      help: "transfers finalized by this process",
      registers: [registry],
    }),
    finalizerLagSeconds: new Histogram({
      name: "points_finalizer_lag_seconds",
      help: "time from a batch's finalizeAt to its finalization",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 600],
      registers: [registry],
    }),
    projectionLagSeconds: new Histogram({
      name: "points_projection_lag_seconds",
      help: "time from a batch's finalization to its projection into the leaderboards and balance history (the answers' through)",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 600],
      registers: [registry],
    }),
    projectionTransfers: new Counter({
      name: "points_projection_transfers_total",
      help: "finalized transfers this process applied to the leaderboards and balance history",
      registers: [registry],
    }),
    ...jobMetrics(registry),
    ...databaseMetrics(registry),
    ...replicaMetrics(registry),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** What the background jobs (src/worker/) report: failing finalizations, webhook deliveries, purges. */
function jobMetrics(registry: Registry) {
  return {
    finalizeFailures: new Counter({
      name: "points_finalize_failures_total",
      help: "batch finalization attempts by this process that failed (the batch stays PENDING and is retried after a backoff)",
      registers: [registry],
    }),
    // Set by the finalizer after each pass from the store (the whole database: every instance
    // sharing a PostgreSQL reports the same number), so a batch stuck failing stays visible.
    finalizeFailingBatches: new Gauge({
      name: "points_finalize_failing_batches",
      help: "PENDING batches whose last finalization attempt failed",
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "points_webhook_deliveries_total",
      help: "webhook delivery attempts by this process, by result (succeeded, retrying, failed, endpoint_disabled)",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    // Set by the delivery job from the store (the whole database), like finalizeFailingBatches.
    webhookDeliveriesPending: new Gauge({
      name: "points_webhook_deliveries_pending",
      help: "webhook deliveries not yet SUCCEEDED or FAILED",
      registers: [registry],
    }),
    purged: new Counter({
      name: "points_purged_total",
      help: "rows the purge job of this process deleted, by kind (events and finished webhook deliveries past their retention, chunks of abandoned snapshot builds)",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    // Publishers (API.md, Events to a message broker): set by the publish job of every process
    // from the database (src/publishers/publish-job.ts), and by the purge while it waits for one.
    publisherLagSeconds: new Gauge({
      name: "points_ledger_publisher_lag_seconds",
      help: "age of the oldest event the publisher of this kind has not published yet (0 when caught up)",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    publisherEvents: new Counter({
      name: "points_ledger_publisher_events_total",
      help: "events this process published to the broker of this kind and saw acknowledged (a republished event counts again)",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    eventPurgeWaiting: new Gauge({
      name: "points_ledger_event_purge_waiting",
      help: "1 while the event purge keeps events past EVENT_RETENTION_DAYS that the publisher of this kind has not published",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    webhookOldestPendingSeconds: new Gauge({
      name: "points_webhook_oldest_pending_delivery_seconds",
      help: "age of the oldest PENDING webhook delivery (0 when none)",
      registers: [registry],
    }),
  };
}

/** Read from the database at each scrape of /metrics (refreshDatabaseGauges), so they hold even when no job runs. */
function databaseMetrics(registry: Registry) {
  return {
    databaseUp: new Gauge({
      name: "points_database_up",
      help: "1 when the database answers and accepts writes (what GET /readyz checks), 0 when it is unreachable, full or read-only",
      registers: [registry],
    }),
    logLagSeconds: new Gauge({
      name: "points_log_lag_seconds",
      help: "age of the oldest committed event the transparency log has not logged yet (0 when none): it grows while the log cannot advance",
      registers: [registry],
    }),
    // Read from the process's tally (src/store/database-health.ts) at each scrape.
    databaseErrors: new Counter({
      name: "points_database_errors_total",
      help: "database operations that failed as unavailable (answered 503 or retried by a job), by kind: connection, read_only (a standby or read-only server), shutdown, vanished (the host stopped answering), timeout, overloaded, conflict",
      labelNames: ["kind"] as const,
      registers: [registry],
      collect() {
        setFromTally(this, databaseHealthCounts().errors);
      },
    }),
    connectionsDiscarded: new Counter({
      name: "points_database_connections_discarded_total",
      help: "pooled database connections closed instead of reused after an error, by the error's kind (see points_database_errors_total)",
      labelNames: ["kind"] as const,
      registers: [registry],
      collect() {
        setFromTally(this, databaseHealthCounts().discards);
      },
    }),
    // Registered at the first scrape that reads the database (refreshDatabaseGauges): absent means
    // not known yet, 0 means no backup was ever recorded (PointsLedgerBackupTooOld fires on both).
    backupLastSuccessSeconds: new Gauge({
      name: BACKUP_GAUGE_NAME,
      help: "when the last backup of the database completed, as recorded by points-ledger backup or backup --record (Unix seconds; 0 when none was ever recorded)",
      registers: [],
    }),
    batchesOverdue: new Gauge({
      name: "points_batches_overdue",
      help: `PENDING batches more than ${OVERDUE_BATCH_SECONDS} s past their finalizeAt (the whole database; counted up to ${OVERDUE_BATCHES_COUNTED_MAX})`,
      registers: [registry],
    }),
  };
}

/**
 * Reads from a replica (DATABASE_READ_URL, docs/operations.md): set by the replica check
 * (src/worker/replica-check.ts) after each check, every second; the reads by who served them.
 */
function replicaMetrics(registry: Registry) {
  return {
    replicaLagSeconds: new Gauge({
      name: "points_database_replica_lag_seconds",
      help: "how far behind the primary the replica of DATABASE_READ_URL may be (an upper bound from WAL positions, src/domain/replica-lag.ts); it grows while the replica cannot be reached; 0 without a replica",
      registers: [registry],
    }),
    replicaInUse: new Gauge({
      name: "points_database_replica_in_use",
      help: "1 while the replica of DATABASE_READ_URL serves the reads that may be a replica's (reachable, no further behind than REPLICA_MAX_LAG_SECONDS), 0 while they go to the primary",
      registers: [registry],
    }),
    replicaReads: new Counter({
      name: "points_database_replica_reads_total",
      help: "reads that a replica may serve (leaderboards, public balances, snapshots, CSV exports), by the server that answered: replica, or primary (no replica in use, or it failed or lacked the answer)",
      labelNames: ["served_by"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const server of REPLICA_READ_SERVERS) this.inc({ served_by: server }, replicaReadCounts().get(server) ?? 0);
      },
    }),
  };
}

function setFromTally(counter: Counter<"kind">, tally: ReadonlyMap<DatabaseErrorKind, number>): void {
  counter.reset();
  for (const kind of DATABASE_ERROR_KINDS) counter.inc({ kind }, tally.get(kind) ?? 0);
}

/**
 * Sets the database gauges just before a scrape: whether the database answers and accepts writes
 * (the store's readiness probe) and, when it does, how many batches are overdue, the transparency log's lag and when
 * the last backup completed. While it does not answer, they keep their last values: points_database_up says why
 * they are stale.
 */
export async function refreshDatabaseGauges(
  metrics: Metrics,
  store: Pick<LedgerStore, "ping" | "countOverdueBatches" | "logStatus" | "lastBackupAtMs">,
  nowMs: number,
): Promise<void> {
  try {
    await store.ping();
  } catch {
    metrics.databaseUp.set(0);
    return;
  }
  metrics.databaseUp.set(1);
  try {
    metrics.batchesOverdue.set(await store.countOverdueBatches(nowMs - OVERDUE_BATCH_SECONDS * 1000, OVERDUE_BATCHES_COUNTED_MAX));
    const { oldestUnloggedAtMs } = await store.logStatus();
    metrics.logLagSeconds.set(oldestUnloggedAtMs === null ? 0 : Math.max(0, nowMs - oldestUnloggedAtMs) / 1000);
    const lastBackupAtMs = await store.lastBackupAtMs();
    metrics.backupLastSuccessSeconds.set(lastBackupAtMs === null ? 0 : lastBackupAtMs / 1000);
    if (metrics.registry.getSingleMetric(BACKUP_GAUGE_NAME) === undefined)
      metrics.registry.registerMetric(metrics.backupLastSuccessSeconds);
  } catch {
    // The probe passed and the count failed: a database going away right now; the next scrape says so.
  }
}

/**
 * The ledger counters, fed only by committed events (store.onCommittedEvents, subscribed once in
 * buildApp): handlers and jobs never count a transition themselves, so a rejected or rolled-back
 * request counts nothing and each change counts once, whoever made it in this process.
 */
export function recordCommittedEvents(metrics: Metrics, events: readonly LedgerEvent[]): void {
  for (const event of events) {
    const batch = (event.data as Partial<EventDataByType["batch.accepted"]>).batch;
    switch (event.type) {
      case "batch.accepted":
        metrics.batchesAccepted.inc();
        metrics.transfersAccepted.inc(batch?.transferCount ?? 0);
        break;
      case "batch.cancelled":
        metrics.batchesCancelled.inc();
        break;
      case "batch.finalized": {
        metrics.batchesFinalized.inc();
        metrics.transfersFinalized.inc(batch?.transferCount ?? 0);
        const lagMs = batch?.finalizedAt ? Date.parse(batch.finalizedAt) - Date.parse(batch.finalizeAt) : 0;
        metrics.finalizerLagSeconds.observe(Math.max(0, lagMs) / 1000);
        break;
      }
      default:
        break;
    }
  }
}
