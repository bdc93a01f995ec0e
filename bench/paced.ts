import { Agent, request as httpRequest } from "node:http";
import type { LoadResult } from "./load.js";

/**
 * An open-loop paced load: requests start on a fixed schedule (one every 1/rate s), whatever
 * the answers do, and latency is counted from the scheduled start. autocannon's `overallRate`
 * instead sends each second's quota back to back at the start of the second, so every request
 * of a "half rate" run would still meet a full-speed queue (measured: p50 ≈ the peak-load p50).
 */

export interface PacedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface PacedOptions {
  targets: string[];
  ratePerSec: number;
  durationSec: number;
  /** Bound on requests in flight; past it, starts wait for a free socket (and show as latency). */
  maxInFlight: number;
  request(n: number): PacedRequest;
}

/** Per-request bound: an answer later than this counts as an error. */
const REQUEST_TIMEOUT_MS = 30_000;

export async function pacedLoad(options: PacedOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(1, Math.ceil(options.maxInFlight / options.targets.length)) });
  const result: LoadResult = {
    ok: 0,
    non2xx: 0,
    client4xx: 0,
    server5xx: 0,
    errors: 0,
    durationSec: options.durationSec,
    latenciesMs: [],
    firstFailure: null,
  };
  const inFlight = new Set<Promise<void>>();
  const startMs = performance.now();
  const total = Math.floor(options.ratePerSec * options.durationSec);
  for (let n = 0; n < total; n++) {
    const dueMs = startMs + (n * 1000) / options.ratePerSec;
    const waitMs = dueMs - performance.now();
    if (waitMs > 1) await new Promise((resolve) => setTimeout(resolve, waitMs));
    const target = new URL(options.targets[n % options.targets.length]!);
    const sent = send(agent, target, options.request(n), dueMs, result).finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  }
  await Promise.all(inFlight);
  agent.destroy();
  return result;
}

function send(agent: Agent, target: URL, spec: PacedRequest, dueMs: number, result: LoadResult): Promise<void> {
  return new Promise((resolve) => {
    const fail = (reason: string) => {
      result.errors++;
      result.firstFailure ??= reason;
      resolve();
    };
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: spec.method,
        path: spec.path,
        headers: spec.headers,
        agent,
        timeout: REQUEST_TIMEOUT_MS,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => fail(error.message));
        response.on("end", () => {
          record(result, response.statusCode ?? 0, performance.now() - dueMs, () => Buffer.concat(chunks).toString());
          resolve();
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (error) => fail(error.message));
    req.end(spec.body);
  });
}

function record(result: LoadResult, status: number, latencyMs: number, body: () => string): void {
  if (status >= 200 && status < 300) {
    result.ok++;
    result.latenciesMs.push(latencyMs);
    return;
  }
  result.non2xx++;
  if (status >= 400 && status < 500) result.client4xx++;
  if (status >= 500) result.server5xx++;
  result.firstFailure ??= `status ${status}: ${body().slice(0, 300)}`;
}
