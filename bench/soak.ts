import autocannon from "autocannon";
import type { Cluster } from "./cluster.js";
import { batchLoad } from "./load.js";
import type { PhaseContext } from "./phases.js";
import { metricValue, scrapeMetrics } from "./server-process.js";
import { round } from "./stats.js";

/** RSS is sampled this often during a soak. */
const SAMPLE_INTERVAL_MS = 10_000;
/** Share of the peak batch rate a soak writes at: sustained, yet with room for reads and finalization. */
const SOAK_WRITE_SHARE = 0.25;
/** Paced reads during a soak: balances, one full batch with its transfers, a page of the listing. */
const SOAK_READS_PER_SEC = 50;

export interface SoakSample {
  tSec: number;
  rssMb: number | null;
  heapUsedMb: number | null;
}

/**
 * Mixed load for `minutes`: paced full-batch PUTs (finalized during the soak) and paced reads,
 * sampling the first server's RSS and heap every 10 s. Flat memory means the last samples sit
 * where the first did once the process is warm.
 */
export async function soakPhase(cluster: Cluster, ctx: PhaseContext, minutes: number, peakBatchesPerSec: number) {
  const durationSec = Math.round(minutes * 60);
  const service = cluster.services[0]!;
  ctx.log(`soak: ${durationSec}s of mixed load`);
  const samples: SoakSample[] = [];
  const startMs = performance.now();
  const sample = async () => {
    const heap = metricValue(await scrapeMetrics(service), "nodejs_heap_size_used_bytes");
    samples.push({ tSec: round((performance.now() - startMs) / 1000), rssMb: service.rssMb() && round(service.rssMb()!, 1), heapUsedMb: round(heap / 1048576, 1) });
  };
  await sample();
  const timer = setInterval(() => void sample(), SAMPLE_INTERVAL_MS);
  try {
    const writes = batchLoad({
      targets: cluster.urls,
      token: ctx.token,
      contract: ctx.operator.contract,
      connections: ctx.connections,
      bodies: ctx.dueSoonBodies,
      batchIdPrefix: `${ctx.runTag}-s`,
      durationSec,
      overallRate: Math.max(1, peakBatchesPerSec * SOAK_WRITE_SHARE),
    });
    const reads = readLoad(cluster.urls[0]!, ctx, durationSec);
    const [written, read] = await Promise.all([writes, reads]);
    await sample();
    return summarize(samples, written.ok, read);
  } finally {
    clearInterval(timer);
  }
}

function readLoad(url: string, ctx: PhaseContext, durationSec: number): Promise<number> {
  const contractPath = `/v1/contracts/${ctx.operator.contract}`;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        connections: 2,
        duration: durationSec,
        overallRate: SOAK_READS_PER_SEC,
        headers: { authorization: `Bearer ${ctx.token}` },
        requests: [
          { method: "GET", path: `${contractPath}/point-balances` },
          { method: "GET", path: `${contractPath}/batches/${ctx.runTag}-a-0-0` },
          { method: "GET", path: `${contractPath}/batches?limit=100` },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result["2xx"])),
    );
  });
}

function summarize(samples: SoakSample[], batchesWritten: number, readsAnswered: number) {
  // The first sample is taken before any soak load; growth is measured from the first loaded one.
  const loaded = samples.slice(1);
  const first = loaded[0];
  const last = loaded[loaded.length - 1];
  const growth = (a: number | null | undefined, b: number | null | undefined) => (a != null && b != null ? round(b - a, 1) : null);
  return {
    batchesWritten,
    readsAnswered,
    samples,
    rssGrowthMb: growth(first?.rssMb, last?.rssMb),
    heapGrowthMb: growth(first?.heapUsedMb, last?.heapUsedMb),
  };
}
