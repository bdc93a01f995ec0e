import type { Cluster } from "./cluster.js";
import { pacedLoad, type PacedRequest } from "./paced.js";
import type { LoadResult } from "./load.js";
import { batchRequests, type PhaseContext } from "./phases.js";
import { metricValue, scrapeMetrics } from "./server-process.js";
import { quantile, round } from "./stats.js";

export type SoakResult = ReturnType<typeof summarize>;

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
    const tSec = round((performance.now() - startMs) / 1000);
    const rss = service.rssMb();
    // A scrape that fails (the server is busy past its timeout, or gone) leaves a gap, not a crash.
    const heap = await scrapeMetrics(service).then(
      (text) => metricValue(text, "nodejs_heap_size_used_bytes"),
      () => null,
    );
    samples.push({ tSec, rssMb: rss === null ? null : round(rss, 1), heapUsedMb: heap === null ? null : round(heap / 1048576, 1) });
  };
  await sample();
  const timer = setInterval(() => void sample(), SAMPLE_INTERVAL_MS);
  let loads: [LoadResult, LoadResult];
  try {
    const writes = pacedLoad({
      targets: cluster.urls,
      ratePerSec: Math.max(1, peakBatchesPerSec * SOAK_WRITE_SHARE),
      durationSec,
      maxInFlight: ctx.connections * 4,
      request: batchRequests(ctx, `${ctx.runTag}-s`, ctx.dueSoonBodies),
    });
    const reads = pacedLoad({
      targets: cluster.urls,
      ratePerSec: SOAK_READS_PER_SEC,
      durationSec,
      maxInFlight: 8,
      request: readRequests(ctx),
    });
    loads = await Promise.all([writes, reads]);
  } finally {
    clearInterval(timer);
  }
  await sample();
  // A sample still in flight from the timer must not land after the summary (or the server's stop).
  return summarize([...samples], loads[0], loads[1]);
}

/** Balances, one full batch with its 2000 transfers, a page of the listing, in turn. */
function readRequests(ctx: PhaseContext): (n: number) => PacedRequest {
  const contractPath = `/v1/contracts/${ctx.operator.contract}`;
  const paths = [`${contractPath}/point-balances`, `${contractPath}/batches/${ctx.runTag}-a-0-0`, `${contractPath}/batches?limit=100`];
  const headers = { authorization: `Bearer ${ctx.token}` };
  return (n) => ({ method: "GET", path: paths[n % paths.length]!, headers });
}

function summarize(samples: SoakSample[], writes: LoadResult, reads: LoadResult) {
  // The first sample is taken before any soak load; growth is measured from the first loaded one.
  const loaded = samples.slice(1);
  const first = loaded[0];
  const last = loaded[loaded.length - 1];
  const growth = (a: number | null | undefined, b: number | null | undefined) => (a != null && b != null ? round(b - a, 1) : null);
  // Single samples ride the GC sawtooth; the lowest value of the first and last thirds does not.
  const third = Math.max(1, Math.floor(loaded.length / 3));
  const floor = (part: SoakSample[], pick: (s: SoakSample) => number | null) => {
    const values = part.map(pick).filter((v): v is number => v !== null);
    return values.length === 0 ? null : Math.min(...values);
  };
  const floorGrowth = (pick: (s: SoakSample) => number | null) =>
    growth(floor(loaded.slice(0, third), pick), floor(loaded.slice(-third), pick));
  return {
    batchesWritten: writes.ok,
    writeP99Ms: round(quantile(writes.latenciesMs, 0.99), 1),
    readsAnswered: reads.ok,
    readP99Ms: round(quantile(reads.latenciesMs, 0.99), 1),
    failures: writes.non2xx + writes.errors + reads.non2xx + reads.errors,
    firstFailure: writes.firstFailure ?? reads.firstFailure,
    samples,
    rssGrowthMb: growth(first?.rssMb, last?.rssMb),
    heapGrowthMb: growth(first?.heapUsedMb, last?.heapUsedMb),
    rssFloorGrowthMb: floorGrowth((s) => s.rssMb),
    heapFloorGrowthMb: floorGrowth((s) => s.heapUsedMb),
  };
}
