import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Metrics } from "../metrics.js";
import type { LedgerStore } from "../store/store.js";
import { DeliveryJob } from "../outbox/delivery-job.js";
import { Finalizer } from "./finalize.js";
import { ProjectionJob } from "./projection.js";
import { PurgeJob } from "./purge.js";
import { TransparencyLogJob } from "./tlog.js";
import { logSigningOf } from "../auth/log-signing-key.js";
import { WindowBoardsJob } from "./window-boards.js";
import { ReplicaCheckJob } from "./replica-check.js";
import { PROJECTION_STEP_TARGET_MS, PROJECTION_STEP_TARGET_MS_POSTGRES } from "../domain/limits.js";
import { configuredKinds } from "../domain/publishers.js";
import { createPublishJobs, openPublishers } from "../publishers/index.js";
import type { PublishJob } from "../publishers/publish-job.js";
import type { ChainOperators } from "../chain/operators.js";
import { ChainFollowJob } from "./chain-follow.js";

/**
 * Background work as named, bounded jobs, run in every server process (`serve`) or alone
 * (`points-ledger worker`): finalize (finalize.ts), deliver (../outbox/delivery-job.ts), purge (purge.ts),
 * projection (projection.ts: the finalized batches into the leaderboards and balance history,
 * after the finalization), windows (window-boards.ts: the window boards that reads asked for),
 * transparencyLog (tlog.ts: the committed events into the transparency log, and its checkpoints),
 * publishers (../publishers/: the committed events to NATS JetStream and RabbitMQ), replicaCheck
 * (replica-check.ts: whether the replica of DATABASE_READ_URL serves reads). Each
 * bounds its own work per pass and isolates its own failures: a failing batch, a failing
 * endpoint or a failed purge never holds up the others. On PostgreSQL the jobs of several
 * processes share the work through row locks (SKIP LOCKED, delivery leases).
 */
export interface Worker {
  finalize: Finalizer;
  deliver: DeliveryJob;
  purge: PurgeJob;
  projection: ProjectionJob;
  windows: WindowBoardsJob;
  transparencyLog: TransparencyLogJob;
  /** One per broker configured (EVENTS_NATS_URL, EVENTS_AMQP_URL): ../publishers/publish-job.ts. */
  publishers: PublishJob[];
  /** Under CHAIN_RPC_URL: the operator registry followed (chain-follow.ts); else null. */
  chainFollow: ChainFollowJob | null;
  /** Started with the others, or alone by a server without them (FINALIZER_ENABLED=false): it serves reads all the same. */
  replicaCheck: ReplicaCheckJob;
  /**
   * Connects each publisher and creates or checks its stream or exchange: throws
   * BrokerRefusedError (start-up stops with its line) when a broker refuses the configuration; a
   * broker that does not answer is logged and retried by its job.
   */
  openPublishers(): Promise<void>;
  start(): void;
  /** Stops every job, waiting for the work in progress (the current batch, the sends in flight). */
  stop(): Promise<void>;
}

function deliveryJob(store: LedgerStore, config: Config, clock: Clock, metrics: Metrics | null, log: FastifyBaseLogger): DeliveryJob {
  return new DeliveryJob(
    store,
    clock,
    {
      retryScheduleSeconds: config.webhookRetryScheduleSeconds,
      allowPrivateUrls: config.webhookAllowPrivateUrls,
      leaseMs: config.webhookClaimLeaseMs,
    },
    metrics,
    log.child({ job: "deliver" }),
  );
}

/** The purge of events and deliveries past their retention, never of an event a publisher has not published. */
function purgeJob(store: LedgerStore, config: Config, clock: Clock, metrics: Metrics | null, log: FastifyBaseLogger): PurgeJob {
  const retention = {
    eventRetentionDays: config.eventRetentionDays,
    deliveryRetentionDays: config.webhookDeliveryRetentionDays,
    publisherKinds: configuredKinds(config.publishers),
  };
  return new PurgeJob(store, clock, retention, metrics, log.child({ job: "purge" }));
}

export function createWorker(
  store: LedgerStore,
  config: Config,
  clock: Clock,
  metrics: Metrics | null,
  log: FastifyBaseLogger,
  chain: ChainOperators | null = null,
): Worker {
  const finalize = new Finalizer(
    store,
    clock,
    { intervalMs: config.finalizerIntervalMs, batchesPerPass: config.finalizerBatchesPerPass },
    metrics,
    log.child({ job: "finalize" }),
  );
  const deliver = deliveryJob(store, config, clock, metrics, log);
  const purge = purgeJob(store, config, clock, metrics, log);
  const projection = new ProjectionJob(
    store,
    clock,
    {
      finalizerDraining: () => finalize.isDraining,
      nextFinalizeAtMs: () => store.nextFinalizeAtMs(),
      stepTargetMs: store.kind === "postgres" ? PROJECTION_STEP_TARGET_MS_POSTGRES : PROJECTION_STEP_TARGET_MS,
    },
    metrics,
    log.child({ job: "projection" }),
  );
  const windows = new WindowBoardsJob(store, {}, log.child({ job: "windows" }));
  const transparencyLog = new TransparencyLogJob(store, logSigningOf(store, config), clock, {}, log.child({ job: "transparency-log" }));
  const publishers = createPublishJobs(store, config.publishers, metrics, log);
  const replicaCheck = new ReplicaCheckJob(store, metrics, log.child({ job: "replica-check" }));
  const chainFollow = chain === null ? null : new ChainFollowJob(store, chain, clock, log.child({ job: "chain-follow" }));
  const jobs = [
    finalize,
    deliver,
    purge,
    projection,
    windows,
    transparencyLog,
    replicaCheck,
    ...publishers,
    ...(chainFollow === null ? [] : [chainFollow]),
  ];
  return {
    finalize,
    deliver,
    purge,
    projection,
    windows,
    transparencyLog,
    publishers,
    chainFollow,
    replicaCheck,
    openPublishers: () => openPublishers(publishers, log),
    start: () => jobs.forEach((job) => job.start()),
    stop: async () => {
      await Promise.all(jobs.map((job) => job.stop()));
    },
  };
}
