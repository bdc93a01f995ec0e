import type { FastifyBaseLogger } from "fastify";
import { errorText, type PublishersConfig } from "../domain/publishers.js";
import { PUBLISHER_ERROR_MAX_CHARS } from "../domain/limits.js";
import type { Metrics } from "../metrics.js";
import type { PublishersStore } from "../store/store.js";
import { AmqpPublisher } from "./amqp.js";
import { BrokerRefusedError, type BrokerPublisher } from "./broker.js";
import { NatsPublisher } from "./nats.js";
import { PublishJob } from "./publish-job.js";

/*
 * Publishers (API.md, Events to a message broker): the event log, once committed, to NATS
 * JetStream and RabbitMQ. broker.ts is the port, nats.ts and amqp.ts its adapters, publish-job.ts
 * the job that drives one of them from the position stored in the database
 * (src/ledger/publishers.ts over the adapters' publishers.ts), the webhooks' delivery as model.
 */

/** The adapters of the brokers `config` names, in a fixed order (nats, amqp). */
export function brokersOf(config: PublishersConfig): BrokerPublisher[] {
  const brokers: BrokerPublisher[] = [];
  if (config.nats !== null) brokers.push(new NatsPublisher(config.nats));
  if (config.amqp !== null) brokers.push(new AmqpPublisher(config.amqp));
  return brokers;
}

export function createPublishJobs(
  store: PublishersStore,
  config: PublishersConfig,
  metrics: Metrics | null,
  log: FastifyBaseLogger,
): PublishJob[] {
  return brokersOf(config).map(
    (broker) => new PublishJob(store, broker, { from: config.from }, metrics, log.child({ job: "publish", kind: broker.kind })),
  );
}

/** Opens every publisher's broker at start-up: a refusal stops the start, a broker that does not answer is the job's to retry. */
export async function openPublishers(jobs: readonly PublishJob[], log: FastifyBaseLogger): Promise<void> {
  for (const { broker } of jobs) {
    try {
      await broker.open();
    } catch (error) {
      if (error instanceof BrokerRefusedError) throw error;
      log.warn(
        { kind: broker.kind, target: broker.target, error: errorText(error, PUBLISHER_ERROR_MAX_CHARS) },
        "the broker does not answer at start-up; the events wait in the database and are published on its return",
      );
    }
  }
}
