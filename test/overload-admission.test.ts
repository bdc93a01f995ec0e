/**
 * Admission by queueing time (issue 19, item 13): 1,500 concurrent clients list batches on SQLite.
 * Before, all 33,466 requests were answered 200 but p99 was 6.2 s, /readyz on a fresh connection
 * took up to 5.7 s, and nothing was shed: the requests queue in front of the handler (socket
 * buffers drained one event-loop turn at a time), where the event-loop delay does not see them.
 * Now a request that has waited longer than MAX_QUEUE_DELAY_MS is answered 503 + Retry-After at
 * once, so the admitted ones are served quickly and health and readiness always answer.
 *
 * The load runs in a worker thread (autocannon, its own event loop) so that the probes measured
 * here, /readyz and another tenant's balance on fresh connections, are not delayed by the load
 * generator. The bounds are generous for a busy 2-core machine; the figures are printed.
 */
import { rmSync } from "node:fs";
import { get } from "node:http";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  sleep,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

const CONNECTIONS = 1500;
const CONNECT_GROUP = 100;
const LOAD_SECONDS = 10;
const BATCHES = 100;
const PROBE_INTERVAL_MS = 250;
/**
 * The targets are admitted p99 ≤ 1 s, refusals ≤ 1 s, health ≤ 2 s on a quiet machine.
 * Measured with this test alone (2 cores): before admission, admitted p99 3.0-10 s, zero 503,
 * /readyz on a fresh connection 11.5 s; with refusals answered at once, admitted p99 0.4 s but
 * /readyz 8.3-10.4 s (libuv's poll phase, see src/http/queue-admission.ts); with refusals held to
 * the turn's end, admitted p99 0.39-0.50 s, refusals p99 0.82-1.0 s, /readyz 0.73-0.91 s, /healthz
 * 1.0-1.2 s. The file runs after the other suites (vitest.config.ts), but the load generator
 * shares the 2 cores; the bounds leave room for that and still fail both earlier behaviours.
 */
const ADMITTED_P99_BOUND_MS = 2000;
const REFUSED_P99_BOUND_MS = 3000;
const READINESS_BOUND_MS = 3000;
const PROBE_BOUND_MS = 5000;

/**
 * The load, in a worker thread: CONNECTIONS keep-alive clients, each sending its next request as
 * soon as the last was answered, for `seconds`; posts the latencies of 200s and 503s and the count
 * of other answers. The clients connect first (one /healthz each, in groups), then all start at
 * once: Node's libuv accepts one connection per poll of the event loop, and a loop busy with
 * hundreds of sockets polls a few times a second, so 1,500 connections opened under load queue in
 * the listen backlog for minutes whatever the server does with its requests, and a probe's fresh
 * connection would wait behind them. Connected first, the probes measure the server's own queueing.
 */
const LOAD_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const admitted = [];
const refused = [];
const other = {};
let errors = 0;
let stopAt = Infinity;
let go;
const started = new Promise((resolve) => (go = resolve));
function once(agent, url, record) {
  const startedMs = performance.now();
  return new Promise((resolve) => {
    const request = http.get(url, { agent, headers: workerData.headers }, (response) => {
      response.resume();
      response.once("end", () => {
        const ms = performance.now() - startedMs;
        if (!record) {}
        else if (response.statusCode === 200) admitted.push(ms);
        else if (response.statusCode === 503 || response.statusCode === 429) refused.push(ms);
        else other[response.statusCode] = (other[response.statusCode] || 0) + 1;
        resolve();
      });
    });
    request.once("error", () => { errors += 1; resolve(); });
  });
}
// Connected (one cheap request answered), then every client starts at once.
async function connect() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  await once(agent, workerData.healthUrl, false);
  return { loop: started.then(async () => {
    while (performance.now() < stopAt) await once(agent, workerData.url, true);
    agent.destroy();
  }) };
}
(async () => {
  const clients = [];
  for (let opened = 0; opened < workerData.connections; opened += workerData.group) {
    const group = Array.from({ length: Math.min(workerData.group, workerData.connections - opened) }, connect);
    clients.push(...(await Promise.all(group)));
  }
  stopAt = performance.now() + workerData.seconds * 1000;
  go();
  parentPort.postMessage({ ramped: true });
  await Promise.all(clients.map((client) => client.loop));
  parentPort.postMessage({ error: null, admitted, refused, other, errors, timeouts: 0 });
})();
`;

interface LoadResult {
  error: string | null;
  admitted: number[];
  refused: number[];
  other: Record<string, number>;
  errors: number;
  timeouts: number;
}

interface Probe {
  status: number;
  ms: number;
  retryAfter: string | undefined;
}

let dir: string;
let server: ServerProcess | undefined;
let token: string;
let contract: string;
let otherToken: string;
let otherContract: string;

beforeAll(async () => {
  assertBuilt();
  dir = tempDir("overload-admission");
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "3600",
    RATE_LIMIT_PER_MINUTE: "100000000",
    // Production's shedding, both kinds, on (test servers run without them: NO_LOAD_SHEDDING).
    MAX_EVENT_LOOP_DELAY_MS: "500",
    MAX_QUEUE_DELAY_MS: "250",
    // The crowd and the probes share 127.0.0.1: the per-address share refuses some of either with 429.
    CLIENT_TURN_BUDGET_MS: "100",
  });
  const operator = privateKeyToAccount(generatePrivateKey());
  contract = randomAddress();
  // Start-up (compiling schemas) stalls the loop for a moment, and the event-loop shedding sees it.
  await pollUntil("the start-up stall to pass", 20_000, async () =>
    (await call(server!.url, "GET", `/v1/admin/contracts/${contract}/operator`, adminToken)).status === 503 ? undefined : true,
  );
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "seed", "PHASE2_POINTS", "1000000");
  token = await signIn(server.url, contract, operator);
  for (let i = 0; i < BATCHES; i++) {
    const transfers = [{ toAddress: randomAddress(), points: "1" }];
    await callOk(server.url, "PUT", `/v1/contracts/${contract}/batches/b-${i}`, token, { pointType: "PHASE2_POINTS", transfers });
  }
  const otherOperator = privateKeyToAccount(generatePrivateKey());
  otherContract = randomAddress();
  await setOperator(server.url, adminToken, otherContract, otherOperator.address);
  otherToken = await signIn(server.url, otherContract, otherOperator);
}, 120_000);

afterAll(async () => {
  await server?.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One GET on a fresh connection (no keep-alive agent), timed from the request to the end of the answer. */
function probe(url: string, authorization?: string): Promise<Probe> {
  const startedMs = performance.now();
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, headers: authorization ? { authorization } : {} }, (response) => {
      response.resume();
      response.once("end", () =>
        resolve({ status: response.statusCode ?? 0, ms: performance.now() - startedMs, retryAfter: response.headers["retry-after"] }),
      );
    });
    request.once("error", reject);
  });
}

/** Starts the load; `ramped` resolves once every client is connected and the timed run begins. */
function runLoad(url: string, headers: Record<string, string>): { ramped: Promise<void>; done: Promise<LoadResult> } {
  const worker = new Worker(LOAD_SCRIPT, {
    eval: true,
    workerData: {
      url,
      healthUrl: `${server!.url}/healthz`,
      connections: CONNECTIONS,
      group: CONNECT_GROUP,
      seconds: LOAD_SECONDS,
      headers,
    },
  });
  let onRamped: () => void = () => undefined;
  const ramped = new Promise<void>((resolve) => (onRamped = resolve));
  const done = new Promise<LoadResult>((resolve, reject) => {
    worker.on("message", (message: LoadResult | { ramped: true }) => {
      if ("ramped" in message) return onRamped();
      void worker.terminate();
      resolve(message);
    });
    worker.once("error", reject);
  });
  return { ramped, done };
}

describe("admission by queueing time under 1,500 concurrent clients (SQLite)", () => {
  it("admitted requests are served quickly, the rest get 503 or 429 + Retry-After quickly, /readyz and /healthz always answer", async () => {
    const listing = `${server!.url}/v1/contracts/${contract}/batches?limit=100`;
    const load = runLoad(listing, { authorization: `Bearer ${token}` });
    await load.ramped;
    // Each probe in its own loop, so one slow answer does not hold back the others.
    let loading = true;
    const probeLoop = async (url: string, authorization?: string): Promise<Probe[]> => {
      const answers: Probe[] = [];
      while (loading) {
        answers.push(await probe(url, authorization));
        await sleep(PROBE_INTERVAL_MS);
      }
      return answers;
    };
    const probing = Promise.all([
      probeLoop(`${server!.url}/readyz`),
      probeLoop(`${server!.url}/healthz`),
      probeLoop(`${server!.url}/v1/contracts/${otherContract}/point-balances`, `Bearer ${otherToken}`),
      probeLoop(listing, `Bearer ${token}`),
    ]);
    const result = await load.done;
    loading = false;
    const [readiness, health, otherTenant, listingProbes] = await probing;
    expect(result.error).toBeNull();
    const summary = {
      admitted: result.admitted.length,
      admittedP50Ms: Math.round(percentile(result.admitted, 50)),
      admittedP99Ms: Math.round(percentile(result.admitted, 99)),
      admittedOver5s: result.admitted.filter((ms) => ms >= 5000).length,
      refused: result.refused.length,
      refusedP99Ms: Math.round(percentile(result.refused, 99)),
      other: result.other,
      errors: result.errors,
      timeouts: result.timeouts,
      readyzWorstMs: Math.round(Math.max(...readiness.map((p) => p.ms))),
      healthzWorstMs: Math.round(Math.max(...health.map((p) => p.ms))),
      otherTenant: `${otherTenant.filter((p) => p.status === 200).length}×200 ${otherTenant.filter((p) => p.status !== 200).length}×refused, worst ${Math.round(Math.max(...otherTenant.map((p) => p.ms)))} ms`,
      probes: { readiness: readiness.length, health: health.length },
    };
    console.log(`1,500 clients listing batches for ${LOAD_SECONDS} s: ${JSON.stringify(summary)}`);

    expect(result.admitted.length).toBeGreaterThan(0);
    expect(result.refused.length, "requests past the queueing target or the address's share are refused").toBeGreaterThan(0);
    expect(Object.keys(result.other), "only 200, 429 and 503").toEqual([]);
    expect(summary.admittedP99Ms).toBeLessThanOrEqual(ADMITTED_P99_BOUND_MS);
    expect(summary.admittedOver5s).toBe(0);
    expect(summary.refusedP99Ms).toBeLessThanOrEqual(REFUSED_P99_BOUND_MS);
    expect(readiness.length, "readiness probes answered during the load").toBeGreaterThanOrEqual(3);
    expect(health.length, "health probes answered during the load").toBeGreaterThanOrEqual(3);
    for (const ready of readiness) expect(ready.status).toBe(200);
    for (const healthy of health) expect(healthy.status).toBe(200);
    expect(summary.readyzWorstMs).toBeLessThanOrEqual(READINESS_BOUND_MS);
    expect(summary.healthzWorstMs).toBeLessThanOrEqual(READINESS_BOUND_MS);
    // Another tenant is served or refused, never left waiting; a refusal says when to retry.
    for (const answer of [...otherTenant, ...listingProbes]) {
      expect([200, 429, 503]).toContain(answer.status);
      expect(answer.ms).toBeLessThanOrEqual(PROBE_BOUND_MS);
      if (answer.status !== 200) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  }, 120_000);
});
