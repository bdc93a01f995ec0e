import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AmqpCollector,
  brokersUnreachable,
  deleteStream,
  NATS_URL,
  AMQP_URL,
  natsServerInstalled,
  readStream,
  startPrivateNats,
} from "./helpers/brokers.js";
import { brokerNames, expectLog, prepareWorkload, pullAll, routingKey, runWorkload, waitCaughtUp } from "./helpers/publish-check.js";
import {
  assertBuilt,
  callOk,
  newAdminToken,
  pollUntil,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
} from "./helpers/process.js";
import { startTcpProxy, throughProxy } from "./helpers/tcp-proxy.js";

/**
 * Publishers against the machine's NATS JetStream and RabbitMQ (API.md, Events to a message
 * broker), through the built server on SQLite: a random workload arrives whole, in the pull API's
 * order and with its JSON; a SIGKILL while a backlog is being published skips nothing and repeats
 * only ids already sent; both brokers taken away under load (a private nats-server killed and
 * restarted, RabbitMQ's link cut at a TCP proxy) lose nothing; a stream over other subjects stops
 * the start with one line. Skipped, with a warning, when the brokers do not answer.
 */

const unreachable = await brokersUnreachable();
if (unreachable !== null) console.warn(unreachable);

/** Each test starts servers and drives hundreds of requests on a shared 2-core machine. */
const TEST_TIMEOUT_MS = 300_000;
const BASE_ENV: Env = { MINIMUM_FINALIZE_SECONDS: "1", FINALIZER_INTERVAL_MS: "100" };

describe.skipIf(unreachable !== null)("publishers to NATS JetStream and RabbitMQ (SQLite)", () => {
  const dirs: string[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(() => assertBuilt());
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  function brokerEnv(names: ReturnType<typeof brokerNames>, natsUrl = NATS_URL, amqpUrl = AMQP_URL): Env {
    cleanups.push(() => deleteStream(NATS_URL, names.stream));
    return {
      EVENTS_NATS_URL: natsUrl,
      EVENTS_NATS_STREAM: names.stream,
      EVENTS_NATS_SUBJECT_PREFIX: names.prefix,
      EVENTS_AMQP_URL: amqpUrl,
      EVENTS_AMQP_EXCHANGE: names.exchange,
    };
  }

  function database(): string {
    const dir = tempDir("pl-publish-");
    dirs.push(dir);
    return sqliteUrl(dir);
  }

  it(
    "publishes every event of a random workload in the pull API's order, with its JSON, subjects, routing keys and headers",
    async () => {
      const names = brokerNames();
      const collector = await AmqpCollector.start(AMQP_URL, names.exchange);
      cleanups.push(() => collector.close());
      const adminToken = newAdminToken();
      const server = await startServerProcess({ ...BASE_ENV, DATABASE_URL: database(), ADMIN_TOKEN: adminToken, ...brokerEnv(names) });
      cleanups.push(() => server.kill("SIGTERM"));
      const load = await prepareWorkload(server.url, adminToken);
      await runWorkload(() => server.url, load, 120);
      expect(load.unexpected).toEqual([]);
      // The 1-second batches finalize, which the log must hold too.
      await pollUntil("the batches to finalize", 30_000, async () => {
        const events = await pullAll(server.url, adminToken);
        const accepted = events.filter((e) => e.type === "batch.accepted").length;
        const settled = events.filter((e) => e.type === "batch.finalized" || e.type === "batch.cancelled").length;
        return accepted === settled ? true : undefined;
      });
      const events = await waitCaughtUp(server.url, adminToken);
      expect(new Set(events.map((e) => e.type)).size).toBeGreaterThanOrEqual(6);

      const streamed = await readStream(NATS_URL, names.stream);
      expect(expectLog(streamed, events, (event) => `${names.prefix}.${routingKey(event)}`)).toBe(0);
      for (const message of streamed) expect(message.headers["Nats-Msg-Id"]).toBe(message.id);

      await pollUntil("RabbitMQ's deliveries", 10_000, async () => (collector.received.length >= events.length ? true : undefined));
      expect(expectLog(collector.received, events, routingKey)).toBe(0);
      for (const message of collector.received) {
        expect(message.headers).toEqual({ type: message.body.type, contentType: "application/json", deliveryMode: 2 });
      }

      const { publishers } = await callOk(server.url, "GET", "/v1/admin/publishers", adminToken);
      expect(publishers).toEqual([
        { kind: "nats", target: NATS_URL, lastEventId: events.at(-1)!.id, lagSeconds: 0, state: "ok" },
        { kind: "amqp", target: "amqp://127.0.0.1:5672", lastEventId: events.at(-1)!.id, lagSeconds: 0, state: "ok" },
      ]);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toContain('points_ledger_publisher_lag_seconds{kind="nats"} 0');
      expect(metrics).toMatch(new RegExp(`points_ledger_publisher_events_total\\{kind="amqp"\\} ${events.length}\\b`));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "a SIGKILL while a backlog is published skips nothing, and what comes again is the same events",
    async () => {
      const names = brokerNames();
      const collector = await AmqpCollector.start(AMQP_URL, names.exchange);
      cleanups.push(() => collector.close());
      const adminToken = newAdminToken();
      const url = database();
      // The backlog: events written while no publisher is configured; a publisher's first start publishes it all.
      const quiet = await startServerProcess({ ...BASE_ENV, DATABASE_URL: url, ADMIN_TOKEN: adminToken });
      const load = await prepareWorkload(quiet.url, adminToken);
      await runWorkload(() => quiet.url, load, 600, 8);
      await quiet.kill("SIGTERM");
      const env = { ...BASE_ENV, DATABASE_URL: url, ADMIN_TOKEN: adminToken, ...brokerEnv(names) };
      const first = await startServerProcess(env);
      // Killed as soon as its publishers have moved but not reached the end.
      await pollUntil("the publishers to be part way", 60_000, async () => {
        const { publishers } = (await callOk(first.url, "GET", "/v1/admin/publishers", adminToken)) as {
          publishers: Record<string, unknown>[];
        };
        return publishers.some((p) => p.lastEventId !== null) && publishers.some((p) => Number(p.lagSeconds) > 0) ? true : undefined;
      });
      expect((await first.kill("SIGKILL")).signal).toBe("SIGKILL");
      const second = await startServerProcess(env);
      cleanups.push(() => second.kill("SIGTERM"));
      const events = await waitCaughtUp(second.url, adminToken, 90_000);
      const streamed = await readStream(NATS_URL, names.stream);
      const natsRepeats = expectLog(streamed, events, (event) => `${names.prefix}.${routingKey(event)}`);
      await pollUntil("RabbitMQ's deliveries", 20_000, async () => (collector.received.length >= events.length ? true : undefined));
      const amqpRepeats = expectLog(collector.received, events, routingKey);
      console.info(
        `publishers SIGKILL: ${events.length} events; repeats NATS ${natsRepeats} (JetStream drops them), RabbitMQ ${amqpRepeats}`,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it.skipIf(!natsServerInstalled())(
    "both brokers taken away under load (nats-server killed and restarted, RabbitMQ's link cut): nothing is lost, the state says retrying",
    async () => {
      const names = brokerNames();
      const nats = await startPrivateNats();
      cleanups.push(() => nats.close());
      const proxy = await startTcpProxy(Number(new URL(AMQP_URL).port));
      cleanups.push(() => proxy.close());
      const collector = await AmqpCollector.start(AMQP_URL, names.exchange);
      cleanups.push(() => collector.close());
      const adminToken = newAdminToken();
      const env = {
        ...BASE_ENV,
        DATABASE_URL: database(),
        ADMIN_TOKEN: adminToken,
        ...brokerEnv(names, nats.url, throughProxy(AMQP_URL, proxy)),
      };
      const server = await startServerProcess(env);
      cleanups.push(() => server.kill("SIGTERM"));
      const load = await prepareWorkload(server.url, adminToken);
      const running = runWorkload(() => server.url, load, 600, 4);
      await runWorkload(() => server.url, load, 50, 1);
      await nats.kill("SIGKILL");
      proxy.cut();
      const retrying = await pollUntil("both publishers to say retrying", 30_000, async () => {
        await runWorkload(() => server.url, load, 5, 1);
        const { publishers } = (await callOk(server.url, "GET", "/v1/admin/publishers", adminToken)) as {
          publishers: Record<string, unknown>[];
        };
        return publishers.every((p) => p.state === "retrying" && Number(p.lagSeconds) >= 0) ? publishers : undefined;
      });
      expect(retrying.map((p) => p.kind)).toEqual(["nats", "amqp"]);
      await nats.start();
      proxy.restore();
      await running;
      expect(load.unexpected).toEqual([]);
      const events = await waitCaughtUp(server.url, adminToken, 90_000);
      expectLog(await readStream(nats.url, names.stream), events, (event) => `${names.prefix}.${routingKey(event)}`);
      await pollUntil("RabbitMQ's deliveries", 20_000, async () => (collector.received.length >= events.length ? true : undefined));
      expectLog(collector.received, events, routingKey);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "a stream of that name over other subjects stops the start with one line, and so do subjects another stream has",
    async () => {
      const names = brokerNames();
      const adminToken = newAdminToken();
      const env = { ...BASE_ENV, DATABASE_URL: database(), ADMIN_TOKEN: adminToken, PORT: "0", ...brokerEnv(names) };
      // A first start creates the stream over <prefix>.>; another prefix with that stream name is refused.
      const server = await startServerProcess(env);
      await server.kill("SIGTERM");
      const otherPrefix = await runCli(["serve"], { ...env, EVENTS_NATS_SUBJECT_PREFIX: `${names.prefix}.other` });
      expect(otherPrefix.code).toBe(1);
      expect(otherPrefix.stderr.trim()).toBe(
        `points-ledger: the NATS stream ${names.stream} is over the subjects ${names.prefix}.>, not ${names.prefix}.other.>: set EVENTS_NATS_STREAM to another stream, or EVENTS_NATS_SUBJECT_PREFIX to its prefix`,
      );
      const otherStream = await runCli(["serve"], { ...env, EVENTS_NATS_STREAM: `${names.stream}_2` });
      expect(otherStream.code).toBe(1);
      expect(otherStream.stderr.trim()).toMatch(/^points-ledger: the NATS subjects \S+ are taken by another stream: /);
    },
    TEST_TIMEOUT_MS,
  );
});
