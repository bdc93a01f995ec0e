import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

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
    transfersAccepted: new Counter({ name: "points_transfers_accepted_total", help: "transfers in accepted batches", registers: [registry] }),
    batchesCancelled: new Counter({ name: "points_batches_cancelled_total", help: "batches cancelled", registers: [registry] }),
    batchesFinalized: new Counter({ name: "points_batches_finalized_total", help: "batches finalized by this process", registers: [registry] }),
    transfersFinalized: new Counter({ name: "points_transfers_finalized_total", help: "transfers finalized by this process", registers: [registry] }),
    finalizerLagSeconds: new Histogram({
      name: "points_finalizer_lag_seconds",
      help: "time from a batch's finalizeAt to its finalization",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 600],
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
