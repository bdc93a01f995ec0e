import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { quantile } from "./stats.js";

/**
 * The publication lag (issue 40: commit to broker acknowledgement, p99 ≤ 1 s), with
 * `--publisher nats`: the server publishes to the machine's NATS JetStream (a stream and subjects
 * of the run's own), and the bench holds a plain NATS subscription on those subjects. JetStream
 * stores a message and hands it to plain subscribers as it arrives, just before it acknowledges
 * it; a lag is the first arrival's time less the event's occurredAt (stamped in the event's own
 * transaction, a few milliseconds before its commit).
 */

export const BENCH_NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
/** Waits for the phase's events to reach the broker, well past the 1 s target. */
const PUBLISHED_WAIT_MS = 30_000;
const WAIT_STEP_MS = 100;

export interface PublishLag {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  events: number;
}

/** The settings that make the server publish to this run's stream, and the subscription that times it. */
export class PublishWatch {
  /** event id → first arrival (ms) and occurredAt (ms). */
  private readonly arrivals = new Map<string, { atMs: number; occurredAtMs: number }>();

  private constructor(
    private readonly connection: NatsConnection,
    private readonly subscription: Subscription,
    readonly stream: string,
    readonly prefix: string,
  ) {}

  static async start(tag: string): Promise<PublishWatch> {
    const connection = await connect({ servers: BENCH_NATS_URL });
    const prefix = `bench-${tag}.events`;
    const subscription = connection.subscribe(`${prefix}.>`);
    const watch = new PublishWatch(connection, subscription, `BENCH_${tag.replace(/[^A-Za-z0-9_-]/g, "_")}`, prefix);
    void (async () => {
      for await (const message of subscription) {
        const event = message.json<{ id: string; occurredAt: string }>();
        if (!watch.arrivals.has(event.id)) watch.arrivals.set(event.id, { atMs: Date.now(), occurredAtMs: Date.parse(event.occurredAt) });
      }
    })();
    return watch;
  }

  env(): Record<string, string> {
    return { EVENTS_NATS_URL: BENCH_NATS_URL, EVENTS_NATS_STREAM: this.stream, EVENTS_NATS_SUBJECT_PREFIX: this.prefix };
  }

  /** The lag of the events that occurred from `fromMs` on, once `expected` of them arrived (or the wait is over). */
  async measure(fromMs: number, expected: number): Promise<PublishLag> {
    const deadline = Date.now() + PUBLISHED_WAIT_MS;
    const since = () => [...this.arrivals.values()].filter((arrival) => arrival.occurredAtMs >= fromMs);
    while (since().length < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    const lagsMs = since().map((arrival) => Math.max(0, arrival.atMs - arrival.occurredAtMs));
    return { p50Ms: quantile(lagsMs, 0.5), p99Ms: quantile(lagsMs, 0.99), maxMs: quantile(lagsMs, 1), events: lagsMs.length };
  }

  /** Ends the subscription and deletes the run's stream. */
  async close(): Promise<void> {
    this.subscription.unsubscribe();
    await (await jetstreamManager(this.connection)).streams.delete(this.stream).catch(() => false);
    await this.connection.close();
  }
}
