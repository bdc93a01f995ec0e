import { openTransparencyLog } from "./auth/log-signing-key.js";
import type { FastifyInstance } from "fastify";
import type { Config } from "./config.js";
import { createWorker, type Worker } from "./worker/index.js";
import { buildApp } from "./http/app.js";
import { createMetrics } from "./metrics.js";
import { openStore } from "./ledger/open.js";
import { assertPointTypesConfigured } from "./store/point-types.js";
import type { LedgerStore } from "./store/store.js";
import { systemClock, type Clock } from "./clock.js";
import { chainOperatorsOf, identifyAtStart } from "./chain/operators.js";

export interface RunningServer {
  app: FastifyInstance;
  store: LedgerStore;
  /** The background jobs (finalize, deliver, purge) of this process. */
  worker: Worker;
  url: string;
  /** Graceful: stop accepting, finish in-flight requests and the current finalization, close the database. */
  stop(): Promise<void>;
}

/** Opens the store, migrates, starts the HTTP server and the background jobs (src/worker/). */
export async function startServer(config: Config, clock: Clock = systemClock): Promise<RunningServer> {
  const store = await openStore(config);
  try {
    await store.migrate();
    await assertPointTypesConfigured(store, config.pointTypes);
    await openTransparencyLog(store, config, clock.now());
  } catch (error) {
    await store.close();
    throw error;
  }
  const metrics = createMetrics();
  const chain = chainOperatorsOf(config, clock);
  const app = await buildApp({ config, store, clock, metrics, chain });
  const worker = createWorker(store, config, clock, metrics, app.log.child({ component: "worker" }), chain);
  let url: string;
  try {
    // A chain without an operator registry stops the start (API.md, Operators on chain).
    if (chain !== null) await identifyAtStart(chain, (message) => app.log.warn(message));
    // A broker that refuses the configuration stops the start (API.md, Events to a message broker).
    if (config.finalizerEnabled) await worker.openPublishers();
    url = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // The port is taken (or may not be used): close what was opened, so the process exits at
    // once (an open PostgreSQL pool would keep it alive) and the CLI says why in one line.
    await Promise.all(worker.publishers.map((job) => job.broker.close()));
    await app.close();
    await store.close();
    throw error;
  }
  // FINALIZER_ENABLED=false: this process serves the API only; `points-ledger worker` runs the jobs.
  // The replica check runs either way: it decides where this process's reads go.
  if (config.finalizerEnabled) worker.start();
  else worker.replicaCheck.start();
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      app.drain();
      await worker.stop();
      await app.close();
      await store.close();
    })());
  return { app, store, worker, url, stop };
}

/**
 * What an operator reads at start-up, besides the JSON log: where the API, the console and the
 * docs are, and whether the admin API is off. `serve` writes these lines to stderr, always (not
 * only on a TTY): stdout stays the JSON log, one object per line, for whatever collects it.
 */
export function startupLines(url: string, config: Pick<Config, "adminToken">): string[] {
  const base = browsableUrl(url);
  const lines = [
    `points-ledger is listening on ${base}`,
    `  API:      ${base}/v1`,
    `  console:  ${base}/console`,
    `  API docs: ${base}/docs`,
  ];
  if (config.adminToken === null) {
    lines.push("warning: ADMIN_TOKEN is not set: the admin API (/v1/admin) and the console's admin screens are off");
  }
  return lines;
}

export const STOPPED_LINE = "points-ledger stopped";

/** A server bound to every IPv6 interface reports http://[::]:port, which a browser cannot open; localhost reaches it. */
function browsableUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.hostname === "[::]" || parsed.hostname === "0.0.0.0") parsed.hostname = "localhost";
  return parsed.origin;
}
