import { connect, type ChannelModel, type ConfirmChannel } from "amqplib";
import type { LedgerEvent } from "../domain/events.js";
import { BROKER_CONNECT_TIMEOUT_MS } from "../domain/limits.js";
import { routingKeyOf, targetOf, type AmqpSettings } from "../domain/publishers.js";
import { BrokerRefusedError, messageBody, untilAborted, type BrokerPublisher } from "./broker.js";

/** AMQP reply codes that say the broker refuses the configuration rather than fails (AMQP 0-9-1 constants). */
const REFUSALS = /ACCESS[-_]REFUSED|NOT[-_]ALLOWED|PRECONDITION[-_]FAILED|\b(403|406|530)\b/;

/**
 * RabbitMQ through AMQP 0-9-1 (amqplib). A durable topic exchange is declared at each connection;
 * each event is published with the routing key `<contract>.<type>`, persistent, its id as
 * `message-id`, its type as `type`, `content-type: application/json`, on a confirm channel: a
 * step's events are written back to back and the step succeeds once the broker confirmed them all
 * (waitForConfirms). A channel delivers in the order published, and a connection that breaks
 * leaves a prefix of them routed: published again from the position, they arrive as duplicates
 * of the same ids, in order.
 */
export class AmqpPublisher implements BrokerPublisher {
  readonly kind = "amqp" as const;
  readonly target: string;
  private connection: ChannelModel | null = null;
  private channel: ConfirmChannel | null = null;

  constructor(private readonly settings: AmqpSettings) {
    this.target = targetOf(settings.url);
  }

  async open(): Promise<void> {
    if (this.channel !== null) return;
    await this.close();
    let connection: ChannelModel;
    try {
      connection = await connect(this.settings.url, { timeout: BROKER_CONNECT_TIMEOUT_MS });
    } catch (error) {
      throw refusalOr(error, "RabbitMQ refused the connection (EVENTS_AMQP_URL's user, password or virtual host)");
    }
    // A broken connection or channel is noticed here: the next step opens a new one.
    connection.on("error", () => undefined);
    connection.on("close", () => {
      if (this.connection === connection) this.forget();
    });
    try {
      const channel = await connection.createConfirmChannel();
      channel.on("error", () => undefined);
      channel.on("close", () => {
        if (this.channel === channel) this.forget();
      });
      await channel.assertExchange(this.settings.exchange, "topic", { durable: true });
      this.connection = connection;
      this.channel = channel;
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw refusalOr(
        error,
        `RabbitMQ refused the exchange ${this.settings.exchange} (it exists with another type or durability): set EVENTS_AMQP_EXCHANGE to another name`,
      );
    }
  }

  async publish(events: readonly LedgerEvent[], signal: AbortSignal): Promise<void> {
    const channel = this.channel;
    if (channel === null) throw new Error("the AMQP publisher is not open");
    for (const event of events) {
      if (signal.aborted) break;
      const written = channel.publish(this.settings.exchange, routingKeyOf(event), Buffer.from(messageBody(event)), {
        persistent: true,
        messageId: event.id,
        type: event.type,
        contentType: "application/json",
      });
      // The socket's buffer is full: wait for it to drain rather than buffer without bound.
      if (!written) await untilAborted(new Promise((resolve) => channel.once("drain", resolve)), signal);
    }
    try {
      await untilAborted(channel.waitForConfirms(), signal);
    } catch (error) {
      // Unconfirmed messages cannot be taken back: a new channel starts the next step clean.
      await this.close();
      throw error;
    }
  }

  private forget(): void {
    this.connection = null;
    this.channel = null;
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.forget();
    if (connection !== null) await connection.close().catch(() => undefined);
  }
}

/** The broker's refusal named (the publisher stops), any other failure as it is (retried). */
function refusalOr(error: unknown, refusal: string): unknown {
  const text = error instanceof Error ? error.message : String(error);
  return REFUSALS.test(text) ? new BrokerRefusedError(`${refusal}: ${text}`, { cause: error }) : error;
}
