import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../clock.js";
import {
  DEFAULT_WEBHOOK_CLAIM_LEASE_MS,
  MAX_IN_FLIGHT_PER_CONTRACT,
  MAX_IN_FLIGHT_PER_ENDPOINT,
  MAX_IN_FLIGHT_SENDS,
  SEND_TIMEOUT_MS,
} from "../domain/limits.js";
import type { Metrics } from "../metrics.js";
import type { AttemptOutcome, ClaimedDelivery, DeliveryLease } from "../domain/webhooks.js";
import type { LedgerStore } from "../store/store.js";
import { decideOutcome } from "./retry-schedule.js";
import { sendDelivery } from "./send.js";
import { JobLoop } from "../job-loop.js";

/*
 * The outbox (this folder). Every change of the ledger appends its events in the same transaction
 * as the change, and in that transaction the fan-out rule (domain/webhooks.ts) queues one delivery
 * per enabled, subscribed endpoint: an event and its deliveries exist iff the change committed.
 * After commit they leave: this job claims due deliveries and sends them (send.ts, signed by
 * signing.ts, to addresses ssrf.ts allows), retrying by retry-schedule.ts; live streams read the
 * log from their own position (event-stream.ts). The adapters keep only the SQL of the log and of
 * the deliveries (their events.ts and webhooks.ts, by the ports store/ports/events.ts and webhooks.ts).
 */

/**
 * The deliver job (README, Architecture: background jobs): claims due webhook deliveries and sends them, a bounded
 * number at once, and stores each outcome. It is scheduled by JobLoop like the other jobs: it polls
 * while it has free slots, sleeps when all are taken, and is woken when a send frees one. Sends run side by side and each has its own timeout,
 * so an endpoint that hangs or fails holds only its own slots (at most MAX_IN_FLIGHT_PER_ENDPOINT
 * of them, and a contract's endpoints together MAX_IN_FLIGHT_PER_CONTRACT): the claim passes over
 * endpoints and contracts that have that many in flight. An endpoint whose attempts time out is
 * backed off and sent one delivery at a time until it answers again (domain/webhooks.ts). Claims are leased
 * (WEBHOOK_CLAIM_LEASE_MS), so on PostgreSQL several instances share the work without sending one
 * attempt twice at once. The lease is short and renewed every quarter of it while the attempt
 * runs, so a delivery whose sender died (SIGKILL) is sent again within one lease, not after the
 * longest attempt could last. A restarted process cannot tell its own old claims from a live
 * instance's without an identity that survives restarts and is known to be unique (a lock): the
 * short lease gives the same bound without that risk.
 */

export interface DeliveryJobOptions {
  retryScheduleSeconds: readonly number[];
  allowPrivateUrls: boolean;
  /** How long the job sleeps when nothing is due (new deliveries wait at most this). */
  pollIntervalMs?: number;
  sendTimeoutMs?: number;
  /** WEBHOOK_CLAIM_LEASE_MS; DEFAULT_WEBHOOK_CLAIM_LEASE_MS by default. Renewed while an attempt runs, however long it takes. */
  leaseMs?: number;
}

/** Renewals per lease (a claim is renewed every LEASE_RENEWALS_PER_LEASE-th of it while the attempt runs): three may come late or fail before another job may take the delivery. */
const LEASE_RENEWALS_PER_LEASE = 4;
const DEFAULT_POLL_INTERVAL_MS = 500;
/** How long stop() lets sends in flight finish before aborting them. */
const STOP_GRACE_MS = 3000;
/** How often the backlog gauges are refreshed (old deliveries are purged by the purge job, purge.ts). */
const MAINTENANCE_INTERVAL_MS = 10_000;

export class DeliveryJob {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly inFlightByEndpoint = new Map<string, number>();
  /** The claims of the sends in flight, with what aborts a send whose lease was lost. */
  private readonly held = new Map<string, { lease: DeliveryLease; lost: AbortController }>();
  private renewal: NodeJS.Timeout | null = null;
  /** A renewal in progress: a slow database does not pile them up. */
  private renewing = false;
  /** The job's scheduling (loop.ts): polls, and is woken when a send frees a slot. */
  private readonly loop = new JobLoop(
    () => this.pass(),
    (error) => {
      this.log.error({ err: error }, "webhook delivery pass failed; retrying at the next interval");
      return this.nextDelayMs();
    },
  );
  private lastMaintenanceMs = 0;
  private readonly pollIntervalMs: number;
  private readonly leaseMs: number;
  private readonly shutdown = new AbortController();

  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly options: DeliveryJobOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.leaseMs = options.leaseMs ?? DEFAULT_WEBHOOK_CLAIM_LEASE_MS;
  }

  start(): void {
    this.loop.start();
  }

  /**
   * Stops claiming and waits for the sends in flight and the storing of their outcomes; sends
   * still unanswered after STOP_GRACE_MS are aborted and stored as failed attempts, retried by
   * the schedule (a shutdown must finish within SHUTDOWN_TIMEOUT_MS, a send may take 15 s).
   */
  async stop(): Promise<void> {
    await this.loop.stop();
    let grace: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      grace = setTimeout(resolve, STOP_GRACE_MS);
    });
    await Promise.race([Promise.all(this.inFlight), graceOver]);
    clearTimeout(grace);
    this.shutdown.abort();
    await Promise.all(this.inFlight);
  }

  /** Claims and sends everything due now, waiting for every send; returns how many attempts it made (for tests and the CLI). */
  async runOnce(): Promise<number> {
    let sent = 0;
    for (;;) {
      const claimed = await this.claim();
      if (claimed.length === 0) {
        if (this.inFlight.size === 0) return sent;
        await Promise.race(this.inFlight);
        continue;
      }
      sent += claimed.length;
      for (const delivery of claimed) this.launch(delivery);
    }
  }

  /** One claim for the free slots, then maintenance when it is due; returns when to look again. */
  private async pass(): Promise<number | null> {
    const claimed = await this.claim();
    for (const delivery of claimed) this.launch(delivery);
    await this.maintain();
    // Slots were filled: more may be due, so look again at once.
    return claimed.length > 0 ? 0 : this.nextDelayMs();
  }

  /** A full job is woken by the next send that finishes (launch); otherwise it polls. */
  private nextDelayMs(): number | null {
    return this.inFlight.size < MAX_IN_FLIGHT_SENDS ? this.pollIntervalMs : null;
  }

  private async claim(): Promise<ClaimedDelivery[]> {
    const free = MAX_IN_FLIGHT_SENDS - this.inFlight.size;
    if (free <= 0) return [];
    const busy = [...this.inFlightByEndpoint].filter(([, count]) => count >= MAX_IN_FLIGHT_PER_ENDPOINT).map(([id]) => id);
    return this.store.claimDueDeliveries({
      nowMs: this.clock.now(),
      limit: free,
      perEndpointLimit: MAX_IN_FLIGHT_PER_ENDPOINT,
      perContractLimit: MAX_IN_FLIGHT_PER_CONTRACT,
      leaseMs: this.leaseMs,
      excludeEndpointIds: busy,
    });
  }

  private launch(delivery: ClaimedDelivery): void {
    this.inFlightByEndpoint.set(delivery.endpointId, (this.inFlightByEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const lost = new AbortController();
    this.held.set(delivery.id, { lease: { id: delivery.id, claimToken: delivery.claimToken }, lost });
    this.startRenewals();
    const sending: Promise<void> = this.deliver(delivery, lost.signal).finally(() => {
      this.held.delete(delivery.id);
      if (this.held.size === 0) this.stopRenewals();
      this.inFlight.delete(sending);
      const left = (this.inFlightByEndpoint.get(delivery.endpointId) ?? 1) - 1;
      if (left === 0) this.inFlightByEndpoint.delete(delivery.endpointId);
      else this.inFlightByEndpoint.set(delivery.endpointId, left);
      // A slot is free: claim again now rather than at the next poll.
      this.loop.wake();
    });
    this.inFlight.add(sending);
  }

  private startRenewals(): void {
    if (this.renewal) return;
    this.renewal = setInterval(() => void this.renewLeases(), Math.max(1, Math.floor(this.leaseMs / LEASE_RENEWALS_PER_LEASE)));
    this.renewal.unref();
  }

  private stopRenewals(): void {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
  }

  /**
   * Extends the leases of the sends in flight. A send whose lease is gone (it was late by a whole
   * lease and another job took the delivery) is aborted: its outcome could not be stored anyway.
   * A renewal that fails is logged; the next one tries again.
   */
  private async renewLeases(): Promise<void> {
    const held = [...this.held.values()];
    if (held.length === 0 || this.renewing) return;
    this.renewing = true;
    try {
      const renewed = new Set(
        await this.store.renewDeliveryLeases(
          held.map((entry) => entry.lease),
          this.clock.now() + this.leaseMs,
        ),
      );
      for (const entry of held) {
        if (renewed.has(entry.lease.id) || !this.held.has(entry.lease.id)) continue;
        this.log.warn({ deliveryId: entry.lease.id }, "webhook delivery lease lost; its send is abandoned");
        entry.lost.abort();
      }
    } catch (error) {
      this.log.error({ err: error }, "webhook delivery leases not renewed; retrying at the next renewal");
    } finally {
      this.renewing = false;
    }
  }

  /** Sends one delivery and stores its outcome; a failure here is logged, and the lease brings the delivery back. */
  private async deliver(delivery: ClaimedDelivery, leaseLost: AbortSignal): Promise<void> {
    try {
      const result = await sendDelivery(delivery, {
        allowPrivateUrls: this.options.allowPrivateUrls,
        timeoutMs: this.options.sendTimeoutMs ?? SEND_TIMEOUT_MS,
        now: () => this.clock.now(),
        signal: AbortSignal.any([this.shutdown.signal, leaseLost]),
      });
      // The send is over: its lease needs no renewal while the outcome is stored (that clears it).
      this.held.delete(delivery.id);
      const outcome = decideOutcome(delivery.tries, this.options.retryScheduleSeconds, result, Math.random());
      const stored = await this.store.recordDeliveryAttempt(delivery, outcome);
      this.record(delivery, outcome, stored);
    } catch (error) {
      this.log.error(
        { err: error, deliveryId: delivery.id, endpointId: delivery.endpointId },
        "webhook delivery outcome not stored; sent again after its lease",
      );
    }
  }

  private record(delivery: ClaimedDelivery, outcome: AttemptOutcome, stored: boolean): void {
    const result =
      outcome.disableEndpoint !== null ? "endpoint_disabled" : outcome.status === "PENDING" ? "retrying" : outcome.status.toLowerCase();
    this.metrics?.webhookDeliveries.inc({ result });
    if (outcome.status === "SUCCEEDED") return;
    const { statusCode, error } = outcome.attempt;
    const fields = {
      deliveryId: delivery.id,
      endpointId: delivery.endpointId,
      eventId: delivery.eventId,
      statusCode,
      error,
      result,
      stored,
    };
    if (outcome.disableEndpoint !== null) this.log.warn(fields, "webhook endpoint answered 410 and is disabled");
    else
      this.log.info(
        { ...fields, nextAttemptAt: outcome.nextAttemptAtMs && new Date(outcome.nextAttemptAtMs).toISOString() },
        "webhook delivery attempt failed",
      );
  }

  /** Refreshes the backlog gauges every MAINTENANCE_INTERVAL_MS. */
  private async maintain(): Promise<void> {
    const nowMs = this.clock.now();
    if (!this.metrics || nowMs - this.lastMaintenanceMs < MAINTENANCE_INTERVAL_MS) return;
    this.lastMaintenanceMs = nowMs;
    const backlog = await this.store.webhookBacklog();
    this.metrics.webhookDeliveriesPending.set(backlog.pending);
    const oldest = backlog.oldestPendingCreatedAtMs;
    this.metrics.webhookOldestPendingSeconds.set(oldest === null ? 0 : Math.max(0, nowMs - oldest) / 1000);
  }
}
