import { CLI_PATH, freePort, metricValue, scrapeMetrics, startChild, type ChildService } from "./server-process.js";

/** One or more `points-ledger serve` processes on the same database, each on its own port. */
export interface Cluster {
  services: ChildService[];
  urls: string[];
  /** Sum of a metric over every process. */
  metric(name: string): Promise<number>;
  /** Stops every process; returns the highest peak RSS (MB) any of them reached. */
  stop(): Promise<number | null>;
}

export async function startCluster(options: {
  processes: number;
  env: Record<string, string>;
  nodeArgs: string[];
  label: string;
}): Promise<Cluster> {
  const services: ChildService[] = [];
  try {
    // One at a time: concurrent first starts would race on the migrations for nothing.
    for (let i = 0; i < options.processes; i++) {
      const port = await freePort();
      services.push(
        await startChild({
          name: `${options.label}-${i}`,
          script: CLI_PATH,
          args: ["serve"],
          env: { ...options.env, PORT: String(port) },
          port,
          readyPath: "/readyz",
          nodeArgs: options.nodeArgs,
        }),
      );
    }
  } catch (error) {
    await Promise.all(services.map((service) => service.stop()));
    throw error;
  }
  return {
    services,
    urls: services.map((service) => service.url),
    metric: async (name) => {
      const texts = await Promise.all(services.map((service) => scrapeMetrics(service)));
      return texts.reduce((sum, text) => sum + metricValue(text, name), 0);
    },
    stop: async () => {
      const peaks = await Promise.all(services.map((service) => service.stop()));
      const known = peaks.filter((peak): peak is number => peak !== null);
      return known.length === 0 ? null : Math.max(...known);
    },
  };
}
