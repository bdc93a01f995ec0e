import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import {
  PUBLISH_MAX_STEP,
  PUBLISH_POLL_INTERVAL_MS,
  PUBLISH_STEP_TIMEOUT_MS,
  PUBLISHER_ERROR_MAX_CHARS,
  PUBLISHER_LEASE_MS,
} from "../domain/limits.js";
import {
  errorText,
  lagSecondsOf,
  publishBackoffMs,
  type PublisherLease,
  type PublisherState,
  type PublishFrom,
} from "../domain/publishers.js";
import { JobLoop } from "../job-loop.js";
import type { Metrics } from "../metrics.js";
import type { PublishersStore } from "../store/store.js";
import { runBoundedSteps } from "../worker/bounded-steps.js";
import { BrokerRefusedError, type BrokerPublisher } from "./broker.js";

export interface PublishJobOptions {
  /** EVENTS_PUBLISH_FROM: where a first start begins. */
  from: PublishFrom;
  pollIntervalMs?: number;
  maxStepSize?: number;
  leaseMs?: number;
  stepTimeoutMs?: number;
}

/** A step whose broker failed: the state it leaves the publisher in. */
class StepFailed extends Error {
  constructor(
    readonly state: Exclude<PublisherState, "ok">,
    readonly reason: unknown,
  ) {
    super(errorText(reason, PUBLISHER_ERROR_MAX_CHARS));
  }
}

/**
 * The publish job of one broker (API.md, Events to a message broker), run in every process: in
 * bounded steps it claims the events after the stored position (src/ledger/publishers.ts), sends
 * them through the broker's adapter (./broker.ts), and moves the position once the broker has
 * acknowledged all of them, so a crash at any moment republishes (same ids), never skips. One
 * instance publishes at a time: the lease in the publisher's row, taken and renewed by the
 * database's clock; this holder sends only while at least half of it is left, and each step's
 * sending stops after PUBLISH_STEP_TIMEOUT_MS, so it has stopped long before anyone else may take
 * it. A broker that fails is retried with back-off; the events wait in the database meanwhile.
 * Nothing here is in a request's path or in the finalization: it polls the committed log.
 */
export class PublishJob {
  private readonly lease: PublisherLease;
  private failuresInRow = 0;
  private state: PublisherState = "ok";
  private ensured = false;
  /** performance.now() until which the lease is surely this holder's (counted from before the statement that took it). */
  private leaseHeldUntilMs = 0;
  private readonly shutdown = new AbortController();
  private readonly loop = new JobLoop(
    () => this.pass(),
    (error) => {
      this.log.error({ err: error }, "publisher pass failed (database); retrying after a back-off");
      return publishBackoffMs(++this.failuresInRow, Math.random());
    },
  );

  constructor(
    private readonly store: PublishersStore,
    readonly broker: BrokerPublisher,
    private readonly options: PublishJobOptions,
    private readonly metrics: Metrics | null,
    private readonly log: FastifyBaseLogger,
  ) {
    this.lease = { kind: broker.kind, token: randomUUID() };
  }

  private get leaseMs(): number {
    return this.options.leaseMs ?? PUBLISHER_LEASE_MS;
  }

  start(): void {
    this.loop.start();
  }

  /** Stops sending (a step in flight gives up waiting; its events are published again by whoever publishes next) and closes the connection. */
  async stop(): Promise<void> {
    this.shutdown.abort();
    await this.loop.stop();
    await this.broker.close();
  }

  /** Steps until caught up (or the bound of steps), then the gauges; the delay before the next pass. */
  private async pass(): Promise<number> {
    const run = await this.runOnce();
    await this.refreshGauges();
    if (run.failed) return publishBackoffMs(this.failuresInRow, Math.random());
    return run.more ? 0 : (this.options.pollIntervalMs ?? PUBLISH_POLL_INTERVAL_MS);
  }

  /** Publishes what is waiting, in bounded steps; returns how many events the broker acknowledged. */
  async runOnce(): Promise<{ published: number; more: boolean; failed: boolean }> {
    if (!this.ensured) {
      await this.store.ensurePublisher(this.broker.kind, this.options.from);
      this.ensured = true;
    }
    try {
      const run = await runBoundedSteps((size) => this.step(size), this.options.maxStepSize ?? PUBLISH_MAX_STEP);
      this.recovered();
      return { published: run.added, more: run.more, failed: false };
    } catch (error) {
      if (!(error instanceof StepFailed)) throw error;
      await this.failed(error);
      return { published: 0, more: false, failed: true };
    }
  }

  /** One claim, its events sent and acknowledged, the position moved; returns how many (fewer than `size`: caught up or not the holder). */
  private async step(size: number): Promise<number> {
    const renew = performance.now() + this.leaseMs / 2 > this.leaseHeldUntilMs;
    const claimedAtMs = performance.now();
    const claim = await this.store.claimPublish(this.lease, size, renew ? this.leaseMs : null);
    if (claim === null) {
      this.leaseHeldUntilMs = 0;
      return 0;
    }
    if (renew) this.leaseHeldUntilMs = claimedAtMs + this.leaseMs;
    if (claim.events.length === 0) return 0;
    const stepTimeoutMs = this.options.stepTimeoutMs ?? PUBLISH_STEP_TIMEOUT_MS;
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(stepTimeoutMs)]);
    try {
      await this.broker.open();
      await this.broker.publish(
        claim.events.map(({ event }) => event),
        signal,
      );
    } catch (error) {
      throw new StepFailed(error instanceof BrokerRefusedError ? "stopped" : "retrying", error);
    }
    const last = claim.events.at(-1)!;
    const advancedAtMs = performance.now();
    if (!(await this.store.advancePublisher(this.lease, last.position, last.event.id, this.leaseMs))) {
      this.log.warn(
        { kind: this.lease.kind },
        "publisher lease lost before its position moved; the next holder publishes these events again",
      );
      this.leaseHeldUntilMs = 0;
      return 0;
    }
    this.leaseHeldUntilMs = advancedAtMs + this.leaseMs;
    this.metrics?.publisherEvents.inc({ kind: this.lease.kind }, claim.events.length);
    return claim.events.length;
  }

  private async failed(failure: StepFailed): Promise<void> {
    this.failuresInRow++;
    const fields = { kind: this.lease.kind, target: this.broker.target, err: failure.reason, failuresInRow: this.failuresInRow };
    if (this.state !== failure.state) {
      const message =
        failure.state === "stopped"
          ? "the broker refuses the publisher's configuration; events wait in the database until it is fixed"
          : "the broker fails; events wait in the database and are published on its return";
      if (failure.state === "stopped") this.log.error(fields, message);
      else this.log.warn(fields, message);
    }
    this.state = failure.state;
    await this.broker.close();
    await this.store.recordPublisherState(this.lease, failure.state, failure.message).catch((error: unknown) => {
      this.log.error({ err: error }, "publisher state not recorded");
    });
  }

  private recovered(): void {
    if (this.state !== "ok") this.log.info({ kind: this.lease.kind, target: this.broker.target }, "the broker is back; publishing");
    this.state = "ok";
    this.failuresInRow = 0;
  }

  /** The lag gauge from the database (every instance reports the same publisher). */
  private async refreshGauges(): Promise<void> {
    if (this.metrics === null) return;
    const [status] = await this.store.publisherStatuses([this.lease.kind]);
    if (status !== undefined) this.metrics.publisherLagSeconds.set({ kind: this.lease.kind }, lagSecondsOf(status, Date.now()));
  }
}
