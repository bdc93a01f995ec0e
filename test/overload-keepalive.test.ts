/**
 * Overload from one address that keeps its connections (issue 30): keep-alive clients from one
 * client address, each sending its next `GET /v1/contracts/{c}/batches?limit=1000` (a full page,
 * ≈ 450 KB) the moment the last is answered, ignoring Retry-After. In the run (1,500
 * clients) /readyz on a fresh connection waited 5.4 s at worst and the load's p99 was 4.9 s: the
 * queueing-time admission (src/http/queue-admission.ts) answers refusals at the end of the loop
 * turn, which spaces out clients that reconnect, but a client on a kept connection is back in the
 * next turn, so every turn reads, parses and refuses the whole crowd.
 *
 * Measured here (2 shared cores, load average ≈ 8): before the per-address share, admitted p99
 * 505 ms, /readyz at worst 1,648 ms, the other tenant refused 6 times in 6 (one after 2,495 ms);
 * with it (src/http/queue-admission.ts), admitted p99 437-587 ms, /readyz 688-1,097 ms, the other
 * tenant served 11 in 12 and 21 in 21 (at worst 1,444 and 600 ms).
 *
 * Targets: /readyz on a fresh connection ≤ 2 s, another tenant's read 200 within 5 s or a quick
 * 503/429, admitted p99 ≤ 2 s, and nothing but 200, 429 and 503 (with Retry-After).
 *
 * The load comes from 127.0.0.2 (all of 127.0.0.0/8 is loopback on Linux) and the probes from
 * 127.0.0.1, so the server sees two client addresses, as it would a crowd behind one NAT and
 * another customer. It runs in a worker thread (its own event loop) so the probes are not delayed
 * by the load generator, though both share the machine's 2 cores.
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

/** The crowd. */
const CONNECTIONS = 1500;
const CONNECT_GROUP = 100;
const LOAD_SECONDS = 10;
/** Enough batches that every listing is a full page of 1,000. */
const BATCHES = 1000;
/** Within CLIENT_TURN_FREE_REQUESTS (src/http/queue-admission.ts): a backend's few concurrent PUTs are never refused for their share. */
const SEED_CONCURRENCY = 4;
const LOAD_ADDRESS = "127.0.0.2";
const PROBE_INTERVAL_MS = 250;
/** The targets. */
const READINESS_BOUND_MS = 2000;
const ADMITTED_P99_BOUND_MS = 2000;
const OTHER_TENANT_SERVED_BOUND_MS = 5000;
const OTHER_TENANT_REFUSED_BOUND_MS = 2000;

/**
 * The load, in a worker thread: `connections` keep-alive clients bound to `localAddress`, each
 * sending its next request as soon as the last was answered (whatever it was: Retry-After is
 * ignored), for `seconds`. Each client is a raw socket that writes the request line and reads the
 * answer by its Content-Length, as lean as autocannon, so the crowd presses as hard as the issue's
 * (Node's http client spends more time per answer than the server does per refusal and would
 * throttle the load by itself). The clients connect first (one /healthz each, in groups), then all
 * start at once (see test/overload-admission.test.ts for why). Posts the latencies of 200s and of
 * refusals (429 and 503, with whether each carried Retry-After) and counts of anything else.
 */
const LOAD_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const net = require("node:net");
const admitted = [];
const refused = [];
const other = {};
let refusedWithoutRetryAfter = 0;
let errors = 0;
let stopAt = Infinity;
let go;
const started = new Promise((resolve) => (go = resolve));
const HEADER_END = Buffer.from("\\r\\n\\r\\n");
function requestText(path) {
  const headers = Object.entries(workerData.headers).map(([name, value]) => name + ": " + value + "\\r\\n").join("");
  return "GET " + path + " HTTP/1.1\\r\\nhost: " + workerData.host + "\\r\\n" + headers + "\\r\\n";
}
/** One kept connection: send(path) resolves with {status, retryAfter} once the whole answer is read. */
function connection() {
  return new Promise((resolve) => {
    const socket = net.connect({ host: workerData.host, port: workerData.port, localAddress: workerData.localAddress });
    let buffered = Buffer.alloc(0);
    let head = null;
    let pending = null;
    socket.on("data", (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        if (head === null) {
          const end = buffered.indexOf(HEADER_END);
          if (end === -1) return;
          const text = buffered.subarray(0, end).toString("latin1");
          const length = /\\r\\ncontent-length: *([0-9]+)/i.exec(text);
          const retryAfter = /\\r\\nretry-after: *([^\\r]*)/i.exec(text);
          head = { status: Number(text.slice(9, 12)), length: length ? Number(length[1]) : 0, retryAfter: retryAfter ? retryAfter[1] : "" };
          buffered = buffered.subarray(end + 4);
        }
        if (buffered.length < head.length) return;
        buffered = buffered.subarray(head.length);
        const answer = head;
        head = null;
        const done = pending;
        pending = null;
        if (done) done(answer);
      }
    });
    const fail = () => { if (pending) { errors += 1; const done = pending; pending = null; done(null); } };
    socket.on("error", fail);
    socket.on("close", fail);
    socket.once("connect", () => resolve({
      send: (path) => new Promise((done) => { pending = done; socket.write(requestText(path)); }),
      close: () => socket.destroy(),
    }));
  });
}
async function connect() {
  const client = await connection();
  await client.send("/healthz");
  return { loop: started.then(async () => {
    while (performance.now() < stopAt) {
      const startedMs = performance.now();
      const answer = await client.send(workerData.path);
      if (answer === null) break;
      const ms = performance.now() - startedMs;
      if (answer.status === 200) admitted.push(ms);
      else if (answer.status === 503 || answer.status === 429) {
        refused.push(ms);
        if (!/^[1-9][0-9]*$/.test(answer.retryAfter)) refusedWithoutRetryAfter += 1;
      } else other[answer.status] = (other[answer.status] || 0) + 1;
    }
    client.close();
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
  parentPort.postMessage({ admitted, refused, refusedWithoutRetryAfter, other, errors });
})();
`;

interface LoadResult {
  admitted: number[];
  refused: number[];
  refusedWithoutRetryAfter: number;
  other: Record<string, number>;
  errors: number;
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
  dir = tempDir("overload-keepalive");
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "3600",
    RATE_LIMIT_PER_MINUTE: "100000000",
    // Production's shedding, both kinds, at their defaults (test servers run without them).
    MAX_EVENT_LOOP_DELAY_MS: "500",
    MAX_QUEUE_DELAY_MS: "300",
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
  let next = 0;
  const seeder = async () => {
    for (let i = next++; i < BATCHES; i = next++) {
      const transfers = [{ toAddress: randomAddress(), points: "1" }];
      await callOk(server!.url, "PUT", `/v1/contracts/${contract}/batches/b-${i}`, token, { pointType: "PHASE2_POINTS", transfers });
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, seeder));
  const otherOperator = privateKeyToAccount(generatePrivateKey());
  otherContract = randomAddress();
  await setOperator(server.url, adminToken, otherContract, otherOperator.address);
  await creditPoints(server.url, adminToken, otherContract, "seed", "PHASE2_POINTS", "1000");
  otherToken = await signIn(server.url, otherContract, otherOperator);
  await callOk(server.url, "PUT", `/v1/contracts/${otherContract}/batches/mine`, otherToken, {
    pointType: "PHASE2_POINTS",
    transfers: [{ toAddress: randomAddress(), points: "1" }],
  });
}, 180_000);

afterAll(async () => {
  await server?.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One GET on a fresh connection from 127.0.0.1, timed from the request to the end of the answer. */
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

function runLoad(path: string, headers: Record<string, string>): { ramped: Promise<void>; done: Promise<LoadResult> } {
  const { hostname, port } = new URL(server!.url);
  const worker = new Worker(LOAD_SCRIPT, {
    eval: true,
    workerData: {
      path,
      host: hostname,
      port: Number(port),
      connections: CONNECTIONS,
      group: CONNECT_GROUP,
      seconds: LOAD_SECONDS,
      headers,
      localAddress: LOAD_ADDRESS,
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

describe(`${CONNECTIONS} keep-alive clients from one address listing 1,000 batches, ignoring Retry-After (SQLite)`, () => {
  it("admitted p99 ≤ 2 s, /readyz on a fresh connection ≤ 2 s, another tenant served within 5 s or quickly refused, no 500", async () => {
    const load = runLoad(`/v1/contracts/${contract}/batches?limit=1000`, { authorization: `Bearer ${token}` });
    await load.ramped;
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
      probeLoop(`${server!.url}/v1/contracts/${otherContract}/batches?limit=1000`, `Bearer ${otherToken}`),
    ]);
    const result = await load.done;
    loading = false;
    const [readiness, health, otherTenant] = await probing;
    const worst = (probes: Probe[]) => Math.round(Math.max(...probes.map((p) => p.ms)));
    const summary = {
      admitted: result.admitted.length,
      admittedP50Ms: Math.round(percentile(result.admitted, 50)),
      admittedP99Ms: Math.round(percentile(result.admitted, 99)),
      refused: result.refused.length,
      refusedP50Ms: Math.round(percentile(result.refused, 50)),
      refusedP99Ms: Math.round(percentile(result.refused, 99)),
      other: result.other,
      errors: result.errors,
      readyzWorstMs: worst(readiness),
      healthzWorstMs: worst(health),
      otherTenant: `${otherTenant.filter((p) => p.status === 200).length}×200 ${otherTenant.filter((p) => p.status !== 200).length}×refused, worst ${worst(otherTenant)} ms`,
      probes: { readiness: readiness.length, health: health.length, otherTenant: otherTenant.length },
    };
    console.log(`${CONNECTIONS} keep-alive clients from one address for ${LOAD_SECONDS} s: ${JSON.stringify(summary)}`);

    expect(result.admitted.length).toBeGreaterThan(0);
    expect(result.other, "only 200, 429 and 503").toEqual({});
    expect(result.refusedWithoutRetryAfter, "every refusal says when to retry").toBe(0);
    expect(summary.admittedP99Ms).toBeLessThanOrEqual(ADMITTED_P99_BOUND_MS);
    expect(readiness.length, "readiness probes answered during the load").toBeGreaterThanOrEqual(3);
    for (const ready of readiness) expect(ready.status).toBe(200);
    for (const healthy of health) expect(healthy.status).toBe(200);
    expect(summary.readyzWorstMs).toBeLessThanOrEqual(READINESS_BOUND_MS);
    expect(summary.healthzWorstMs).toBeLessThanOrEqual(READINESS_BOUND_MS);
    expect(otherTenant.filter((p) => p.status === 200).length, "the other tenant is served").toBeGreaterThan(0);
    for (const answer of otherTenant) {
      expect([200, 429, 503]).toContain(answer.status);
      if (answer.status === 200) expect(answer.ms).toBeLessThanOrEqual(OTHER_TENANT_SERVED_BOUND_MS);
      else {
        expect(answer.ms).toBeLessThanOrEqual(OTHER_TENANT_REFUSED_BOUND_MS);
        expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      }
    }
  }, 240_000);
});
