import type { FastifyInstance } from "fastify";
import type { Config } from "./config.js";
import { createWorker, type Worker } from "./worker/index.js";
import { buildApp } from "./http/app.js";
import { createMetrics } from "./metrics.js";
import { openStore } from "./store/open.js";
import { assertPointTypesConfigured } from "./store/point-types.js";
import type { LedgerStore } from "./store/store.js";
import { systemClock, type Clock } from "./clock.js";

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
  } catch (error) {
    await store.close();
    throw error;
  }
  const metrics = createMetrics();
  const app = await buildApp({ config, store, clock, metrics });
  const worker = createWorker(store, config, clock, metrics, app.log.child({ component: "worker" }));
  const url = await app.listen({ port: config.port, host: config.host });
  // FINALIZER_ENABLED=false: this process serves the API only; `points-ledger worker` runs the jobs.
  if (config.finalizerEnabled) worker.start();
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
