import { Agent, request as httpRequest } from "node:http";
import { metricValue } from "./server-process.js";
import { sleep } from "./stats.js";

/**
 * The failover bench's load (bench/failover.ts), shaped like the bench's mixed phase: full batches
 * due after the minimum delay, PUT on a fixed schedule (open loop, as paced.ts) while the same
 * process finalizes them, and a watcher reading the finalized counter, a leaderboard's `through`
 * and the log's checkpoint. Unlike paced.ts it keeps every answer (batchId, when it was sent and
 * answered, its status): which writes were acknowledged, and when writes succeeded again.
 */

export interface WriteRecord {
  batchId: string;
  sentMs: number;
  answeredMs: number;
  /** 0: no answer (the connection failed or the request timed out). */
  status: number;
  retryAfter: string | null;
  body: string;
}

export interface Sample {
  atMs: number;
  /** points_transfers_finalized_total; null when /metrics did not answer. */
  finalized: number | null;
  /** The leaderboard's `through` (epoch ms); null when the read did not answer 200. */
  throughMs: number | null;
  /** The signed checkpoint's tree size; null when the read did not answer 200. */
  checkpointSize: number | null;
}

/** Per-request bound: an answer later than this counts as none. */
const REQUEST_TIMEOUT_MS = 30_000;
const SAMPLE_INTERVAL_MS = 250;
const READ_TIMEOUT_MS = 5_000;

export interface Writes {
  records: WriteRecord[];
  stop(): Promise<void>;
}

/** PUTs `ratePerSec` batches a second (bodies in rotation, ids `${prefix}-n`) until stop(). */
export function startWrites(options: {
  url: string;
  token: string;
  contract: string;
  bodies: Buffer[];
  ratePerSec: number;
  maxInFlight: number;
  prefix: string;
}): Writes {
  const agent = new Agent({ keepAlive: true, maxSockets: options.maxInFlight });
  const target = new URL(options.url);
  const records: WriteRecord[] = [];
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  const loop = (async () => {
    const startMs = performance.now();
    for (let n = 0; !stopped; n++) {
      const waitMs = startMs + (n * 1000) / options.ratePerSec - performance.now();
      if (waitMs > 1) await sleep(waitMs);
      const batchId = `${options.prefix}-${n}`;
      const sent = put(
        agent,
        target,
        `/v1/contracts/${options.contract}/batches/${batchId}`,
        options.token,
        options.bodies[n % options.bodies.length]!,
      )
        .then((answer) => void records.push({ batchId, ...answer }))
        .finally(() => inFlight.delete(sent));
      inFlight.add(sent);
    }
    await Promise.all(inFlight);
  })();
  return {
    records,
    stop: async () => {
      stopped = true;
      await loop;
      agent.destroy();
    },
  };
}

function put(agent: Agent, target: URL, path: string, token: string, body: Buffer): Promise<Omit<WriteRecord, "batchId">> {
  const sentMs = Date.now();
  return new Promise((resolve) => {
    const none = (reason: string) => resolve({ sentMs, answeredMs: Date.now(), status: 0, retryAfter: null, body: reason });
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: "PUT",
        path,
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        agent,
        timeout: REQUEST_TIMEOUT_MS,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => none(error.message));
        response.on("end", () => {
          const retryAfter = response.headers["retry-after"];
          resolve({
            sentMs,
            answeredMs: Date.now(),
            status: response.statusCode ?? 0,
            retryAfter: typeof retryAfter === "string" ? retryAfter : null,
            body: response.statusCode === 200 ? "" : Buffer.concat(chunks).toString().slice(0, 300),
          });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (error) => none(error.message));
    req.end(body);
  });
}

export interface Watcher {
  samples: Sample[];
  /** Statuses of the watcher's reads (a 500 among them is a failure like any other). */
  statuses: Record<string, number>;
  stop(): Promise<void>;
}

async function read(url: string, statuses: Record<string, number>, headers: Record<string, string> = {}): Promise<string | null> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
    const text = await response.text();
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    return response.ok ? text : null;
  } catch {
    statuses[0] = (statuses[0] ?? 0) + 1;
    return null;
  }
}

/** Samples the finalized counter, the leaderboard's `through` and the checkpoint's size every 250 ms until stop(). */
export function startWatcher(options: { url: string; token: string; contract: string; pointType: string }): Watcher {
  const samples: Sample[] = [];
  const statuses: Record<string, number> = {};
  let stopped = false;
  const board = `${options.url}/v1/contracts/${options.contract}/leaderboard?pointType=${options.pointType}&limit=1`;
  const loop = (async () => {
    while (!stopped) {
      const atMs = Date.now();
      const [metrics, leaderboard, checkpoint] = await Promise.all([
        read(`${options.url}/metrics`, statuses),
        read(board, statuses, { authorization: `Bearer ${options.token}` }),
        read(`${options.url}/v1/log/checkpoint`, statuses),
      ]);
      samples.push({
        atMs,
        finalized: metrics === null ? null : metricValue(metrics, "points_transfers_finalized_total"),
        throughMs: leaderboard === null ? null : Date.parse((JSON.parse(leaderboard) as { through: string }).through),
        checkpointSize: checkpoint === null ? null : Number(checkpoint.split("\n")[1]),
      });
      await sleep(Math.max(0, atMs + SAMPLE_INTERVAL_MS - Date.now()));
    }
  })();
  return {
    samples,
    statuses,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
