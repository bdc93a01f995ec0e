/**
 * Window boards asked for by strangers (issue 30): with PUBLIC_READS=true, one caller asking for
 * 300 distinct leaderboard windows in 3.7 s raised another tenant's submit p50 from 15 ms to
 * 282 ms. A window not kept as a board is read from the window's batches and asks the window job to
 * build its board, the most expensive read there is; so new windows have a budget per caller and
 * per contract (token buckets: NEW_WINDOWS_*_BURST, refilled at NEW_WINDOWS_PER_MINUTE_PER_*), and
 * past either the answer is 429 RATE_LIMITED with Retry-After, while other callers and contracts
 * are served (src/http/window-budget.ts).
 *
 * A real server process on loopback: the flooder from 127.0.0.2 asks for new windows as fast as
 * it is answered, ignoring 429s, while the other tenant (its own contract, 127.0.0.1) submits
 * batches one after another. Only the 429s and the others being served are asserted; the other
 * tenant's submit p50, quiet and under the flood, is printed (a measurement, not a bound).
 */
import { rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  assertBuilt,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/** The window's batches: each read of a window not kept sums them (and the window job builds its board). */
const SEEDED_BATCHES = 4;
const TRANSFERS_PER_BATCH = 1000;
const FLOOD_SECONDS = 5;
const FLOOD_CONCURRENCY = 4;
const QUIET_SUBMITS = 40;
const FLOODER = "127.0.0.2";
/** The default refill of a caller's bucket (src/config.ts): at most this many in a minute, burst included. */
const PER_CALLER = 30;
/** Callers that may have to ask before the contract's bucket is empty (its burst is 20). */
const MAX_CALLERS = 60;
const DAY_MS = 24 * 3600 * 1000;

interface Answer {
  status: number;
  retryAfter: string | undefined;
  ms: number;
}

let dir: string;
let server: ServerProcess;
let flooded: string;
let other: string;
let otherToken: string;

/** One GET from `localAddress` on a fresh connection. */
function getFrom(path: string, localAddress: string): Promise<Answer> {
  const startedMs = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.url}${path}`, { agent: false, localAddress }, (response) => {
      response.resume();
      response.once("end", () =>
        resolve({ status: response.statusCode ?? 0, retryAfter: response.headers["retry-after"], ms: performance.now() - startedMs }),
      );
    });
    request.once("error", reject).end();
  });
}

/**
 * The flooder, in a worker thread (its own event loop, so the other tenant's timings are not
 * delayed by it): `concurrency` loops, each asking `paths[k++]` on a fresh connection from
 * `localAddress` as soon as the last was answered, for `seconds`, whatever the answer.
 */
const FLOOD_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const answers = [];
let k = 0;
const stopAt = performance.now() + workerData.seconds * 1000;
function once(path) {
  const startedMs = performance.now();
  return new Promise((resolve) => {
    const request = http.request(workerData.base + path, { agent: false, localAddress: workerData.localAddress }, (response) => {
      response.resume();
      response.once("end", () => {
        answers.push({ status: response.statusCode, retryAfter: response.headers["retry-after"], ms: performance.now() - startedMs });
        resolve();
      });
    });
    request.once("error", () => { answers.push({ status: 0, retryAfter: undefined, ms: performance.now() - startedMs }); resolve(); });
    request.end();
  });
}
async function loop() {
  while (performance.now() < stopAt) await once(workerData.paths[k++ % workerData.paths.length]);
}
Promise.all(Array.from({ length: workerData.concurrency }, loop)).then(() => parentPort.postMessage(answers));
`;

function flood(paths: string[]): Promise<Answer[]> {
  const worker = new Worker(FLOOD_SCRIPT, {
    eval: true,
    workerData: { base: server.url, paths, localAddress: FLOODER, seconds: FLOOD_SECONDS, concurrency: FLOOD_CONCURRENCY },
  });
  return new Promise((resolve, reject) => {
    worker.once("message", (answers: Answer[]) => {
      void worker.terminate();
      resolve(answers);
    });
    worker.once("error", reject);
  });
}

/** The other tenant's submits, one after another, while `during` runs. */
async function submitsDuring<T>(during: Promise<T>): Promise<{ result: T; submitMs: number[] }> {
  let running = true;
  const submitMs: number[] = [];
  const submitting = (async () => {
    while (running) submitMs.push(await submitTimed());
  })();
  const result = await during;
  running = false;
  await submitting;
  return { result, submitMs };
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The k-th distinct window holding today: from k+1 days back (cycling over 20 years), to one or more days ahead. */
function windowPath(contract: string, k: number): string {
  const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const back = (k % 7000) + 1;
  const ahead = Math.floor(k / 7000) + 1;
  return `/v1/contracts/${contract}/leaderboard?pointType=PHASE2_POINTS&from=${dayOf(todayMs - back * DAY_MS)}&to=${dayOf(todayMs + ahead * DAY_MS)}&limit=10`;
}

let nextBatch = 0;
/** One small submit of the other tenant, timed. */
async function submitTimed(): Promise<number> {
  const startedMs = performance.now();
  await callOk(server.url, "PUT", `/v1/contracts/${other}/batches/o-${nextBatch++}`, otherToken, {
    pointType: "PHASE2_POINTS",
    transfers: [{ toAddress: randomAddress(), points: "1" }],
  });
  return performance.now() - startedMs;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

beforeAll(async () => {
  assertBuilt();
  dir = tempDir("window-budget");
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    PUBLIC_READS: "true",
    // Only the window budget is measured: the per-address budget of public reads (600 a minute) would refuse the floods first.
    PUBLIC_READ_RATE_LIMIT_PER_MINUTE: "100000000",
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
  });
  const operator = privateKeyToAccount(generatePrivateKey());
  flooded = randomAddress();
  await setOperator(server.url, adminToken, flooded, operator.address);
  await creditPoints(server.url, adminToken, flooded, "seed", "PHASE2_POINTS", "100000000");
  const token = await signIn(server.url, flooded, operator);
  for (let i = 0; i < SEEDED_BATCHES; i++) {
    const transfers = Array.from({ length: TRANSFERS_PER_BATCH }, () => ({ toAddress: randomAddress(), points: "1" }));
    await callOk(server.url, "PUT", `/v1/contracts/${flooded}/batches/s-${i}`, token, {
      pointType: "PHASE2_POINTS",
      secondsToFinalize: 1,
      transfers,
    });
  }
  await pollUntil("the seeded batches on the all-time board", 60_000, async () => {
    const board = await callOk(server.url, "GET", `/v1/contracts/${flooded}/leaderboard?pointType=PHASE2_POINTS&limit=1`, null);
    return board.participants === SEEDED_BATCHES * TRANSFERS_PER_BATCH ? true : undefined;
  });
  const otherOperator = privateKeyToAccount(generatePrivateKey());
  other = randomAddress();
  await setOperator(server.url, adminToken, other, otherOperator.address);
  await creditPoints(server.url, adminToken, other, "seed", "PHASE2_POINTS", "1000000");
  otherToken = await signIn(server.url, other, otherOperator);
}, 180_000);

afterAll(async () => {
  await server?.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a budget of new leaderboard windows per caller and per contract (PUBLIC_READS=true, SQLite)", () => {
  it("a caller asking for new windows as fast as it can gets 429 + Retry-After past its budget; the other tenant's submits are served", async () => {
    const quiet: number[] = [];
    for (let i = 0; i < QUIET_SUBMITS; i++) quiet.push(await submitTimed());

    // A control: the same caller asking the all-time board (cheap, kept) as fast: what the requests alone cost the others.
    const allTime = `/v1/contracts/${flooded}/leaderboard?pointType=PHASE2_POINTS&limit=10`;
    const control = await submitsDuring(flood([allTime]));
    const windows = await submitsDuring(flood(Array.from({ length: 20_000 }, (_, k) => windowPath(flooded, k))));
    const answers = windows.result;
    const underFlood = windows.submitMs;

    const served = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    console.log(
      `new windows for ${FLOOD_SECONDS} s: ${JSON.stringify({
        asked: answers.length,
        served: served.length,
        servedP50Ms: Math.round(median(served.map((answer) => answer.ms))),
        refused: refused.length,
        refusedP50Ms: Math.round(median(refused.map((answer) => answer.ms))),
        otherSubmitP50Ms: {
          quiet: Math.round(median(quiet)),
          allTimeFlood: Math.round(median(control.submitMs)),
          windowFlood: Math.round(median(underFlood)),
          submits: underFlood.length,
        },
        allTimeAsked: control.result.length,
      })}`,
    );
    expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(PER_CALLER);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    // Another caller of the same contract, and the flooder's own reads of a window already asked, are served.
    expect((await getFrom(windowPath(flooded, 100_000), "127.0.0.1")).status).toBe(200);
    expect((await getFrom(`/v1/contracts/${flooded}/leaderboard?pointType=PHASE2_POINTS&limit=10`, FLOODER)).status).toBe(200);
  }, 120_000);

  it("many callers of one contract share its budget: past it, a new caller is refused there and served on another contract", async () => {
    // Each caller asks until refused (its own bucket, or the contract's); a caller refused at its
    // first window was refused by the contract's bucket, which the others emptied.
    let k = 200_000;
    let refusedFirst: { caller: string; answer: Answer } | null = null;
    for (let caller = 3; refusedFirst === null && caller < MAX_CALLERS; caller++) {
      const address = `127.0.0.${caller}`;
      for (let i = 0; i < PER_CALLER; i++) {
        const answer = await getFrom(windowPath(flooded, k++), address);
        if (answer.status === 200) continue;
        expect(answer.status).toBe(429);
        if (i === 0) refusedFirst = { caller: address, answer };
        break;
      }
    }
    expect(refusedFirst, "a caller with its own budget whole is refused: the contract's is spent").not.toBeNull();
    expect(Number(refusedFirst!.answer.retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await getFrom(windowPath(other, k++), refusedFirst!.caller)).status).toBe(200);
  }, 120_000);
});
