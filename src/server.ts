import type { FastifyInstance } from "fastify";
import type { Config } from "./config.js";
import { Finalizer } from "./finalizer/finalizer.js";
import { buildApp } from "./http/app.js";
import { createMetrics } from "./metrics.js";
import { openStore } from "./store/open.js";
import type { LedgerStore } from "./store/store.js";
import { systemClock, type Clock } from "./clock.js";

export interface RunningServer {
  app: FastifyInstance;
  store: LedgerStore;
  finalizer: Finalizer;
  url: string;
  /** Graceful: stop accepting, finish in-flight requests and the current finalization, close the database. */
  stop(): Promise<void>;
}

/** Opens the store, migrates, starts the HTTP server and the finalizer. */
export async function startServer(config: Config, clock: Clock = systemClock): Promise<RunningServer> {
  const store = await openStore(config);
  await store.migrate();
  const metrics = createMetrics();
  const app = await buildApp({ config, store, clock, metrics });
  const finalizer = new Finalizer(
    store,
    clock,
    { intervalMs: config.finalizerIntervalMs, batchesPerPass: config.finalizerBatchesPerPass },
    metrics,
    app.log.child({ component: "finalizer" }),
  );
  const url = await app.listen({ port: config.port, host: config.host });
  if (config.finalizerEnabled) finalizer.start();
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      app.drain();
      await finalizer.stop();
      await app.close();
      await store.close();
    })());
  return { app, store, finalizer, url, stop };
}
