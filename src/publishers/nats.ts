import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError, StorageType, type JetStreamClient, type StreamInfo } from "@nats-io/jetstream";
import type { LedgerEvent } from "../domain/events.js";
import { BROKER_CONNECT_TIMEOUT_MS, PUBLISH_STEP_TIMEOUT_MS } from "../domain/limits.js";
import { subjectOf, targetOf, type NatsSettings } from "../domain/publishers.js";
import { BrokerRefusedError, messageBody, PublishAbortedError, untilAborted, type BrokerPublisher } from "./broker.js";

/** JetStream's API error codes this adapter tells apart (nats-server's errors.json). */
const STREAM_NOT_FOUND = 10059;
const SUBJECTS_OVERLAP = 10065;

/**
 * NATS JetStream (@nats-io/transport-node, @nats-io/jetstream). The stream is created over
 * `<prefix>.>` with file storage and the duplicate window, or an existing one of that name is used
 * when it has exactly those subjects. Each event goes to `<prefix>.<contract>.<type>` with its id
 * as `Nats-Msg-Id`, so JetStream drops an event published again within the window. Events are
 * sent back to back and acknowledged together; every event after a step's first also carries
 * `Nats-Expected-Last-Msg-Id` (the event before it), so a message lost in the pipeline makes every
 * one after it fail too instead of landing out of order. The first carries none: after a crash its
 * predecessor may have been followed by events whose acknowledgement was lost (JetStream answers
 * those as duplicates within the window; past it they are stored again, which API.md allows).
 */
export class NatsPublisher implements BrokerPublisher {
  readonly kind = "nats" as const;
  readonly target: string;
  private connection: NatsConnection | null = null;
  private client: JetStreamClient | null = null;

  constructor(private readonly settings: NatsSettings) {
    this.target = targetOf(settings.url);
  }

  async open(): Promise<void> {
    if (this.connection !== null && this.client !== null && !this.connection.isClosed()) return;
    await this.close();
    const connection = await connect({
      servers: this.settings.url,
      name: "points-ledger",
      timeout: BROKER_CONNECT_TIMEOUT_MS,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    try {
      await this.declareStream(connection);
    } catch (error) {
      await connection.close();
      throw error;
    }
    this.connection = connection;
    this.client = jetstream(connection, { timeout: PUBLISH_STEP_TIMEOUT_MS });
  }

  private async declareStream(connection: NatsConnection): Promise<void> {
    const { stream, subjectPrefix } = this.settings;
    const subjects = [`${subjectPrefix}.>`];
    const manager = await jetstreamManager(connection, { timeout: BROKER_CONNECT_TIMEOUT_MS });
    let info: StreamInfo | null = null;
    try {
      info = await manager.streams.info(stream);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND)) throw error;
    }
    if (info !== null) {
      const have = info.config.subjects ?? [];
      if (have.length !== 1 || have[0] !== subjects[0]) {
        throw new BrokerRefusedError(
          `the NATS stream ${stream} is over the subjects ${have.join(", ") || "(none)"}, not ${subjects[0]}: set EVENTS_NATS_STREAM to another stream, or EVENTS_NATS_SUBJECT_PREFIX to its prefix`,
        );
      }
      return;
    }
    try {
      await manager.streams.add({
        name: stream,
        subjects,
        storage: StorageType.File,
        duplicate_window: nanos(this.settings.duplicateWindowSeconds * 1000),
      });
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === SUBJECTS_OVERLAP) {
        throw new BrokerRefusedError(
          `the NATS subjects ${subjects[0]} are taken by another stream: set EVENTS_NATS_SUBJECT_PREFIX to another prefix, or EVENTS_NATS_STREAM to that stream`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  async publish(events: readonly LedgerEvent[], signal: AbortSignal): Promise<void> {
    const client = this.client;
    if (client === null) throw new Error("the NATS publisher is not open");
    const acks: Promise<unknown>[] = [];
    let previous: string | null = null;
    for (const event of events) {
      if (signal.aborted) break;
      const expect = previous === null ? {} : { expect: { lastMsgID: previous } };
      acks.push(client.publish(subjectOf(this.settings.subjectPrefix, event), messageBody(event), { msgID: event.id, ...expect }));
      previous = event.id;
    }
    // Every acknowledgement, or the first failure (the ones after it fail on their expectation);
    // a stop gives up waiting (JetStream still drops what it stored twice).
    const results = await untilAborted(Promise.allSettled(acks), signal);
    const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    if (acks.length < events.length) throw new PublishAbortedError();
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    this.client = null;
    if (connection !== null && !connection.isClosed()) await connection.close().catch(() => undefined);
  }
}
