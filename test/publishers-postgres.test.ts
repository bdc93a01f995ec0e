import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AMQP_URL, AmqpCollector, brokersUnreachable, deleteStream, NATS_URL, readStream } from "./helpers/brokers.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { assertBuilt, newAdminToken, pollUntil, startServerProcess, type ServerProcess } from "./helpers/process.js";
import { brokerNames, expectLog, prepareWorkload, pullAll, routingKey, runWorkload, waitCaughtUp } from "./helpers/publish-check.js";

/**
 * Two instances on one PostgreSQL publish one order (API.md, Events to a message broker): both
 * run the publish jobs against the machine's NATS JetStream and RabbitMQ while a random workload
 * goes to either; one holds each lease at a time, and the instance killed mid-run (SIGKILL) hands
 * the publishing over to the other within one lease. A consumer of each broker receives the pull
 * API's events in its order, duplicates only of the same ids. Skipped without DATABASE_URL_TEST or
 * without the brokers.
 */

const unreachable = await brokersUnreachable();
if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
else if (unreachable !== null) console.warn(unreachable);

const TEST_TIMEOUT_MS = 300_000;

describe.skipIf(!DATABASE_URL_TEST || unreachable !== null)("publishers: two PostgreSQL instances, one order", () => {
  let schema: TestSchema;
  const servers: ServerProcess[] = [];
  const names = brokerNames();
  let collector: AmqpCollector;

  beforeAll(async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    collector = await AmqpCollector.start(AMQP_URL, names.exchange);
  });
  afterAll(async () => {
    for (const server of servers) await server.kill("SIGTERM").catch(() => undefined);
    await collector?.close();
    await deleteStream(NATS_URL, names.stream);
    await schema?.drop();
  });

  it(
    "both instances publish, one at a time: every event arrives once in the log's order (repeats only of the same ids), also across a SIGKILL of one",
    async () => {
      const adminToken = newAdminToken();
      const env = {
        DATABASE_URL: schema.connectionString,
        ADMIN_TOKEN: adminToken,
        PG_POOL_SIZE: "4",
        MINIMUM_FINALIZE_SECONDS: "1",
        FINALIZER_INTERVAL_MS: "100",
        EVENTS_NATS_URL: NATS_URL,
        EVENTS_NATS_STREAM: names.stream,
        EVENTS_NATS_SUBJECT_PREFIX: names.prefix,
        EVENTS_AMQP_URL: AMQP_URL,
        EVENTS_AMQP_EXCHANGE: names.exchange,
      };
      servers.push(await startServerProcess(env), await startServerProcess(env));
      const alive = () => servers.filter((_, index) => index !== killed);
      let killed = -1;
      const pick = () => alive()[randomInt(alive().length)]!.url;
      const load = await prepareWorkload(servers[0]!.url, adminToken);
      await runWorkload(pick, load, 150, 4);
      killed = 0;
      expect((await servers[0]!.kill("SIGKILL")).signal).toBe("SIGKILL");
      await runWorkload(pick, load, 150, 4);
      expect(load.unexpected).toEqual([]);
      const survivor = servers[1]!.url;
      await pollUntil("the batches to finalize", 60_000, async () => {
        const events = await pullAll(survivor, adminToken);
        const accepted = events.filter((e) => e.type === "batch.accepted").length;
        const settled = events.filter((e) => e.type === "batch.finalized" || e.type === "batch.cancelled").length;
        return accepted === settled ? true : undefined;
      });
      const events = await waitCaughtUp(survivor, adminToken, 120_000);
      const natsRepeats = expectLog(await readStream(NATS_URL, names.stream), events, (event) => `${names.prefix}.${routingKey(event)}`);
      await pollUntil("RabbitMQ's deliveries", 20_000, async () => (collector.received.length >= events.length ? true : undefined));
      const amqpRepeats = expectLog(collector.received, events, routingKey);
      console.info(`publishers on two PostgreSQL instances: ${events.length} events; repeats NATS ${natsRepeats}, RabbitMQ ${amqpRepeats}`);
    },
    TEST_TIMEOUT_MS,
  );
});
