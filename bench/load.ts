import autocannon from "autocannon";

/** autocannon drivers: full-batch PUTs with a unique batchId each, and plain GETs. */

export interface LoadResult {
  /** Responses with a 2xx status. */
  ok: number;
  non2xx: number;
  client4xx: number;
  server5xx: number;
  errors: number;
  durationSec: number;
  /** 2xx latencies in milliseconds (sub-millisecond precision, unlike autocannon's histogram). */
  latenciesMs: number[];
  /** First non-2xx answer, to explain a failed phase. */
  firstFailure: string | null;
}

export interface BatchLoadOptions {
  targets: string[];
  token: string;
  contract: string;
  bodies: Buffer[];
  /** Prefix of the generated batchIds; must be unique per phase and run. */
  batchIdPrefix: string;
  connections: number;
  durationSec: number;
}

/** Per-request timeout: a full batch under overload may queue for a while. */
const REQUEST_TIMEOUT_SEC = 30;

function runInstance(options: autocannon.Options): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const latenciesMs: number[] = [];
    let firstFailure: string | null = null;
    const instance = autocannon(options, (error, result) => {
      if (error) return reject(error);
      resolve({
        ok: result["2xx"],
        non2xx: result.non2xx,
        client4xx: result["4xx"],
        server5xx: result["5xx"],
        errors: result.errors,
        durationSec: result.duration,
        latenciesMs,
        firstFailure,
      });
    });
    instance.on("response", (client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) latenciesMs.push(responseTimeMs);
      else if (firstFailure === null) {
        firstFailure = `status ${statusCode}`;
        client.once("body", (body: Buffer) => (firstFailure = `status ${statusCode}: ${body.toString().slice(0, 300)}`));
      }
    });
  });
}

/** Runs one instance per target at once, each with its share of the connections and rate. */
async function spread(targets: string[], build: (target: string, index: number, share: (n: number) => number) => autocannon.Options) {
  const share = (total: number) => Math.max(1, Math.round(total / targets.length));
  const results = await Promise.all(targets.map((target, index) => runInstance(build(target, index, share))));
  return merge(results);
}

function merge(results: LoadResult[]): LoadResult {
  return {
    ok: results.reduce((sum, r) => sum + r.ok, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    client4xx: results.reduce((sum, r) => sum + r.client4xx, 0),
    server5xx: results.reduce((sum, r) => sum + r.server5xx, 0),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    durationSec: Math.max(...results.map((r) => r.durationSec)),
    latenciesMs: results.flatMap((r) => r.latenciesMs),
    firstFailure: results.find((r) => r.firstFailure !== null)?.firstFailure ?? null,
  };
}

export function batchLoad(options: BatchLoadOptions): Promise<LoadResult> {
  return spread(options.targets, (target, index, share) => {
    let sent = 0;
    const base = `/v1/contracts/${options.contract}/batches/${options.batchIdPrefix}-${index}-`;
    return {
      url: target,
      connections: share(options.connections),
      duration: options.durationSec,
      timeout: REQUEST_TIMEOUT_SEC,
      requests: [
        {
          method: "PUT",
          headers: { "content-type": "application/json", authorization: `Bearer ${options.token}` },
          // A unique batchId per request and the bodies in rotation, so every PUT is a new batch.
          setupRequest: (request) => {
            const n = sent++;
            request.path = base + n;
            request.body = options.bodies[n % options.bodies.length]!;
            return request;
          },
        },
      ],
    };
  });
}

export function getLoad(options: {
  targets: string[];
  path: string;
  token: string;
  connections: number;
  durationSec: number;
}): Promise<LoadResult> {
  return spread(options.targets, (target, _index, share) => ({
    url: target + options.path,
    connections: share(options.connections),
    duration: options.durationSec,
    timeout: REQUEST_TIMEOUT_SEC,
    headers: { authorization: `Bearer ${options.token}` },
  }));
}
