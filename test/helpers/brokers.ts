import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as amqpConnect, type ChannelModel } from "amqplib";
import { freePort, sleep } from "./process.js";

/**
 * The machine's brokers (NATS with JetStream on 4222, RabbitMQ on 5672, started before every
 * session and CI run) as the publisher tests read them: a stream read whole, a queue bound to an
 * exchange, a private nats-server of a test's own to kill and restart. Tests skip with
 * BROKERS_SKIP_REASON when the brokers do not answer.
 */

export const NATS_URL = process.env.EVENTS_NATS_URL_TEST ?? "nats://127.0.0.1:4222";
export const AMQP_URL = process.env.EVENTS_AMQP_URL_TEST ?? "amqp://guest:guest@127.0.0.1:5672";
const NATS_SERVER_BIN = "/usr/sbin/nats-server";
const READ_BATCH = 500;
const READ_DEADLINE_MS = 60_000;

export const BROKERS_SKIP_REASON =
  "NATS (127.0.0.1:4222, with -js) or RabbitMQ (127.0.0.1:5672, guest/guest) does not answer: broker tests skipped (apt-get install nats-server rabbitmq-server, start both; EVENTS_NATS_URL_TEST and EVENTS_AMQP_URL_TEST name others)";

/** null when both brokers answer, else why not. */
export async function brokersUnreachable(): Promise<string | null> {
  try {
    const nc = await natsConnect({ servers: NATS_URL, timeout: 2000 });
    await (await jetstreamManager(nc)).getAccountInfo();
    await nc.close();
    const amqp = await amqpConnect(AMQP_URL, { timeout: 2000 });
    await amqp.close();
    return null;
  } catch (error) {
    return `${BROKERS_SKIP_REASON}: ${String(error)}`;
  }
}

/** One message as a consumer received it. */
export interface Received {
  /** Nats-Msg-Id, or the AMQP message-id. */
  id: string;
  /** The NATS subject, or the AMQP routing key. */
  key: string;
  body: Record<string, unknown>;
  headers: Record<string, unknown>;
}

/** Every message of `stream`, in its order (an ordered consumer, read to the end). */
export async function readStream(url: string, stream: string): Promise<Received[]> {
  const nc = await natsConnect({ servers: url, timeout: 5000 });
  try {
    const info = await (await jetstreamManager(nc)).streams.info(stream);
    const total = info.state.messages;
    const consumer = await jetstream(nc).consumers.get(stream);
    const received: Received[] = [];
    const deadline = Date.now() + READ_DEADLINE_MS;
    while (received.length < total && Date.now() < deadline) {
      const batch = await consumer.fetch({ max_messages: Math.min(READ_BATCH, total - received.length), expires: 2000 });
      for await (const message of batch) {
        received.push({
          id: message.headers?.get("Nats-Msg-Id") ?? "",
          key: message.subject,
          body: message.json<Record<string, unknown>>(),
          headers: Object.fromEntries([...(message.headers?.keys() ?? [])].map((key) => [key, message.headers!.get(key)])),
        });
      }
    }
    return received;
  } finally {
    await nc.close();
  }
}

export async function deleteStream(url: string, stream: string): Promise<void> {
  const nc = await natsConnect({ servers: url, timeout: 5000 });
  try {
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false);
  } finally {
    await nc.close();
  }
}

/** A queue of its own bound to `exchange` with `#` (every event), collecting what arrives. */
export class AmqpCollector {
  readonly received: Received[] = [];

  private constructor(
    private readonly connection: ChannelModel,
    readonly exchange: string,
  ) {}

  static async start(url: string, exchange: string): Promise<AmqpCollector> {
    const connection = await amqpConnect(url);
    const collector = new AmqpCollector(connection, exchange);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, "topic", { durable: true });
    const { queue } = await channel.assertQueue("", { exclusive: true });
    await channel.bindQueue(queue, exchange, "#");
    await channel.consume(
      queue,
      (message) => {
        if (message === null) return;
        collector.received.push({
          id: String(message.properties.messageId),
          key: message.fields.routingKey,
          body: JSON.parse(message.content.toString("utf8")) as Record<string, unknown>,
          headers: {
            type: message.properties.type,
            contentType: message.properties.contentType,
            deliveryMode: message.properties.deliveryMode,
          },
        });
      },
      { noAck: true },
    );
    return collector;
  }

  /** Closes the queue's connection and deletes the exchange. */
  async close(): Promise<void> {
    const channel = await this.connection.createChannel();
    await channel.deleteExchange(this.exchange).catch(() => undefined);
    await this.connection.close();
  }
}

/**
 * What a consumer that dedupes by id sees: the ids in their first arrival's order; and every
 * repeat checked to carry the same body as its first arrival (a republished event is the same event).
 */
export function firstArrivals(received: readonly Received[]): { ids: string[]; duplicates: number; changedRepeats: string[] } {
  const seen = new Map<string, string>();
  const ids: string[] = [];
  const changedRepeats: string[] = [];
  let duplicates = 0;
  for (const message of received) {
    const { logIndex: _logIndex, ...body } = message.body;
    const text = JSON.stringify(body);
    const first = seen.get(message.id);
    if (first === undefined) {
      seen.set(message.id, text);
      ids.push(message.id);
    } else {
      duplicates++;
      if (first !== text) changedRepeats.push(message.id);
    }
  }
  return { ids, duplicates, changedRepeats };
}

/** A nats-server with JetStream of a test's own (its port, its store): killed and restarted at will, never the machine's. */
export interface PrivateNats {
  url: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

export function natsServerInstalled(): boolean {
  return existsSync(NATS_SERVER_BIN);
}

export async function startPrivateNats(): Promise<PrivateNats> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "pl-nats-"));
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(NATS_SERVER_BIN, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" });
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        const nc = await natsConnect({ servers: url, timeout: 500 });
        await (await jetstreamManager(nc)).getAccountInfo();
        await nc.close();
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error(`the private nats-server on ${port} did not start`);
  };
  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    const running = child as ChildProcess | null;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill(signal);
    await exited;
  };
  await start();
  return {
    url,
    kill,
    start,
    close: async () => {
      await kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
