import { eventJson, type LedgerEvent } from "../domain/events.js";
import type { PublisherKind } from "../domain/publishers.js";

/**
 * The port a publisher sends through (API.md, Events to a message broker): one adapter per
 * broker, nats.ts (JetStream) and amqp.ts (RabbitMQ). The job (publish-job.ts) decides what to
 * send and when; an adapter only connects, declares, sends in order and waits for the broker's
 * acknowledgements. Its failures are named: BrokerRefusedError for a configuration the broker
 * refuses (the publisher's state `stopped`), anything else a failure to retry (`retrying`).
 */
export interface BrokerPublisher {
  readonly kind: PublisherKind;
  /** The broker's address without credentials, as GET /v1/admin/publishers shows it. */
  readonly target: string;
  /** Connects (when not connected) and creates or checks the stream or exchange; idempotent. */
  open(): Promise<void>;
  /**
   * Sends `events` in this order and resolves once the broker acknowledged every one; rejects
   * when any was not (then nothing is known of the ones after it, and the caller sends them all
   * again from its position). Sending stops, and waiting too, at `signal`.
   */
  publish(events: readonly LedgerEvent[], signal: AbortSignal): Promise<void>;
  /** Closes the connection; open() connects again. */
  close(): Promise<void>;
}

/** The broker refuses the configuration (a stream over other subjects, an exchange of another type, refused credentials). */
export class BrokerRefusedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "BrokerRefusedError";
  }
}

/** A step's sending ran out of time or was stopped (the lease's margin, a shutdown). */
export class PublishAbortedError extends Error {
  constructor() {
    super("publishing stopped before the broker acknowledged every event");
    this.name = "PublishAbortedError";
  }
}

/** The message body: the Event JSON of the pull API, `logIndex` as it stands now. */
export function messageBody(event: LedgerEvent): Uint8Array {
  return Buffer.from(JSON.stringify(eventJson(event)));
}

/** `work`, or a PublishAbortedError as soon as `signal` is aborted. */
export async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw new PublishAbortedError();
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new PublishAbortedError());
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
