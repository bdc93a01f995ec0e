import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../clock.js";
import { DEFAULT_WEBHOOK_DELIVERY_RETENTION_DAYS } from "../config.js";
import type { Metrics } from "../metrics.js";
import {
  DELIVERY_PURGE_MAX_STEPS,
  DELIVERY_PURGE_STEP,
  EVENT_PURGE_MAX_STEPS,
  EVENT_PURGE_STEP,
  PURGE_INTERVAL_MS,
  SNAPSHOT_BUILD_ABANDONED_AFTER_MS,
  SNAPSHOT_PURGE_MAX_STEPS,
  SNAPSHOT_PURGE_STEP,
} from "../domain/limits.js";
import type { EventsStore, LedgerStore, PublishersStore, SnapshotsStore, WebhooksStore } from "../store/store.js";
import { purgeCutoffOf, PUBLISHER_KINDS, type PublisherKind } from "../domain/publishers.js";
import { JobLoop } from "../job-loop.js";

const DAY_MS = 24 * 3600 * 1000;

/**
 * Deletes the events older than the retention (EVENT_RETENTION_DAYS) in bounded steps, yielding
 * to the event loop between them so requests are served meanwhile; returns how many it deleted.
 * A cursor before what is deleted answers 410 CURSOR_EXPIRED from then on (the store remembers).
 */
export async function purgeOldEvents(
  store: EventsStore,
  nowMs: number,
  retentionDays: number,
  stepSize = EVENT_PURGE_STEP,
  beforeMs = nowMs - retentionDays * DAY_MS,
): Promise<number> {
  return inSteps((limit) => store.purgeEvents(beforeMs, limit), stepSize, EVENT_PURGE_MAX_STEPS);
}

/**
 * Where the event purge stops while publishers are configured (API.md, Events to a message
 * broker): before the retention's cutoff, and before the oldest event any of them has not
 * published (domain/publishers.ts purgeCutoffOf); says which publishers hold it back.
 */
export async function eventPurgeCutoff(
  store: PublishersStore,
  nowMs: number,
  retentionDays: number,
  kinds: readonly PublisherKind[],
): Promise<{ cutoffMs: number; waitingFor: PublisherKind[] }> {
  const retentionCutoffMs = nowMs - retentionDays * DAY_MS;
  if (kinds.length === 0) return { cutoffMs: retentionCutoffMs, waitingFor: [] };
  return purgeCutoffOf(retentionCutoffMs, await store.publisherStatuses(kinds));
}

/**
 * Deletes the webhook deliveries that finished (SUCCEEDED or FAILED) longer than the retention
 * ago (WEBHOOK_DELIVERY_RETENTION_DAYS) in bounded steps; a PENDING one is never deleted, however
 * old. Returns how many it deleted.
 */
export async function purgeOldDeliveries(
  store: WebhooksStore,
  nowMs: number,
  retentionDays: number,
  stepSize = DELIVERY_PURGE_STEP,
): Promise<number> {
  const finishedBeforeMs = nowMs - retentionDays * DAY_MS;
  return inSteps((limit) => store.purgeDeliveries(finishedBeforeMs, limit), stepSize, DELIVERY_PURGE_MAX_STEPS);
}

/**
 * Deletes the chunks of snapshot builds that will never publish, in bounded steps: builds that
 * failed, lost the race for their id, or wrote nothing for SNAPSHOT_BUILD_ABANDONED_AFTER_MS (their
 * process died mid-build). A build still writing, here or in another process, is left alone, and
 * so is every published snapshot. Returns how many chunks it deleted.
 */
export async function purgeAbandonedSnapshotBuilds(store: SnapshotsStore, nowMs: number, stepSize = SNAPSHOT_PURGE_STEP): Promise<number> {
  const staleBeforeMs = nowMs - SNAPSHOT_BUILD_ABANDONED_AFTER_MS;
  return inSteps((limit) => store.purgeSnapshotBuilds(staleBeforeMs, limit), stepSize, SNAPSHOT_PURGE_MAX_STEPS);
}

/** Runs `step` (one short transaction deleting at most `stepSize` rows) until it deletes fewer, at most `maxSteps` times. */
async function inSteps(step: (limit: number) => Promise<number>, stepSize: number, maxSteps: number): Promise<number> {
  let deleted = 0;
  for (let done = 0; done < maxSteps; done++) {
    const count = await step(stepSize);
    deleted += count;
    if (count < stepSize) return deleted;
    await yieldToEventLoop();
  }
  return deleted;
}

export interface PurgeReport {
  events: number;
  snapshotChunks: number;
}

export interface PurgeOptions {
  eventRetentionDays: number;
  /** WEBHOOK_DELIVERY_RETENTION_DAYS; DEFAULT_WEBHOOK_DELIVERY_RETENTION_DAYS when not given. */
  deliveryRetentionDays?: number;
  intervalMs?: number;
  /** The publishers configured: the purge never deletes an event one of them has not published. */
  publisherKinds?: readonly PublisherKind[];
}

/**
 * The purge job, which owns every retention: deletes expired challenges and tokens, events older
 * than EVENT_RETENTION_DAYS (purgeOldEvents), webhook deliveries finished longer ago than
 * WEBHOOK_DELIVERY_RETENTION_DAYS (purgeOldDeliveries) and the chunks of abandoned snapshot builds
 * (purgeAbandonedSnapshotBuilds), the last three in bounded steps, counted in points_purged_total.
 * A failure is logged and the next run tries again; it never stops the other jobs.
 */
export class PurgeJob {
  private readonly loop = new JobLoop(
    async () => {
      await this.runOnce();
      return this.intervalMs;
    },
    (error) => {
      this.log.error({ err: error }, "purge failed; retrying at the next run");
      return this.intervalMs;
    },
  );

  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly options: PurgeOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  private get intervalMs(): number {
    return this.options.intervalMs ?? PURGE_INTERVAL_MS;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One run: what is expired now is deleted (bounded); returns how many events and snapshot chunks it deleted (deliveries: points_purged_total). */
  async runOnce(): Promise<PurgeReport> {
    const nowMs = this.clock.now();
    await this.store.purgeExpired(nowMs);
    const events = await this.purgeEvents(nowMs);
    const deliveryRetentionDays = this.options.deliveryRetentionDays ?? DEFAULT_WEBHOOK_DELIVERY_RETENTION_DAYS;
    const deliveries = await purgeOldDeliveries(this.store, nowMs, deliveryRetentionDays);
    const snapshotChunks = await purgeAbandonedSnapshotBuilds(this.store, nowMs);
    if (snapshotChunks > 0) this.log.info({ snapshotChunks }, "deleted chunks of abandoned snapshot builds");
    this.metrics?.purged.inc({ kind: "events" }, events);
    this.metrics?.purged.inc({ kind: "deliveries" }, deliveries);
    this.metrics?.purged.inc({ kind: "snapshot_chunks" }, snapshotChunks);
    return { events, snapshotChunks };
  }

  /** The events past their retention, but none a publisher has not published: the wait is logged and in /metrics. */
  private async purgeEvents(nowMs: number): Promise<number> {
    const kinds = this.options.publisherKinds ?? [];
    const { cutoffMs, waitingFor } = await eventPurgeCutoff(this.store, nowMs, this.options.eventRetentionDays, kinds);
    for (const kind of PUBLISHER_KINDS) this.metrics?.eventPurgeWaiting.set({ kind }, waitingFor.includes(kind) ? 1 : 0);
    if (waitingFor.length > 0) {
      this.log.warn(
        { publishers: waitingFor, keptFrom: new Date(cutoffMs).toISOString() },
        "the event purge waits: events past EVENT_RETENTION_DAYS are kept until the publishers named have published them",
      );
    }
    return purgeOldEvents(this.store, nowMs, this.options.eventRetentionDays, EVENT_PURGE_STEP, cutoffMs);
  }
}
