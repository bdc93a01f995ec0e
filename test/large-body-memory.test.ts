import { readFileSync, rmSync } from "node:fs";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * Rejected 1 MB bodies must not grow the service's memory without bound (issue 41). Concurrent
 * senders each alternate the two shapes that cost the most to parse: an unauthenticated dapp-auth
 * challenge with ~95,000 extra keys, and an authenticated batch whose `transfers` holds ~170,000
 * empty objects. Every answer is the catalogue's 400 VALIDATION_FAILED; the resident set of the
 * real server process (VmRSS of /proc/<pid>/status, sampled while the senders run) stays under
 * MAX_RSS_MB at 4 and at 16 senders.
 */

/** Issue 41's bound: a few senders of rejected bodies should not triple the process (186 MB idle). */
const MAX_RSS_MB = 512;
/** Round trips (one of each body) across all senders: enough for the heaps to reach their steady size. */
const ROUNDS = 48;
const RSS_SAMPLE_MS = 25;
/**
 * Intake worker threads, as a 4-core machine gets by default (availableParallelism − 1): each is a
 * V8 isolate with a heap of its own, the most the process can hold (issue 41 measured 551–561 MB there).
 */
const INTAKE_THREADS = 3;
const BODY_BYTES = 1_000_000;

/** `{"contractAddress":…,"operatorAddress":…,"k0":0,"k1":0,…}` up to BODY_BYTES. */
function challengeWithExtraKeys(): string {
  const head = `{"contractAddress":"${randomAddress()}","operatorAddress":"${randomAddress()}"`;
  const keys: string[] = [];
  let length = head.length + 1;
  for (let i = 0; length < BODY_BYTES - 16; i++) {
    const entry = `"k${i}":0`;
    keys.push(entry);
    length += entry.length + 1;
  }
  return `${head},${keys.join(",")}}`;
}

/** `{"pointType":"PHASE2_POINTS","transfers":[{}, {}, …]}` up to BODY_BYTES. */
function batchOfEmptyTransfers(): string {
  const head = `{"pointType":"PHASE2_POINTS","transfers":[`;
  const count = Math.floor((BODY_BYTES - head.length - 2) / 6);
  return `${head}${Array.from({ length: count }, () => "{}").join(",   ")}]}`;
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) / 1024;
}

const dir = tempDir("large-bodies");
let server: ServerProcess;
let contract: string;
let token: string;
const challengeBody = challengeWithExtraKeys();
const batchBody = batchOfEmptyTransfers();

beforeAll(async () => {
  assertBuilt();
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    BATCH_INTAKE_THREADS: String(INTAKE_THREADS),
  });
  contract = randomAddress();
  const operator = privateKeyToAccount(generatePrivateKey());
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "seed", "PHASE2_POINTS", "1000");
  token = await signIn(server.url, contract, operator);
}, 60_000);

afterAll(async () => {
  await server?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

async function send(path: string, method: string, body: string, auth: boolean): Promise<{ status: number; code: unknown }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${token}` } : {}) },
    body,
  });
  const json = (await response.json()) as { error?: { code?: unknown } };
  return { status: response.status, code: json.error?.code };
}

async function sender(index: number, rounds: number, answers: { status: number; code: unknown }[]): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    answers.push(await send("/v1/dapp-auth/challenge", "POST", challengeBody, false));
    answers.push(await send(`/v1/contracts/${contract}/batches/big-${index}-${round}`, "PUT", batchBody, true));
  }
}

describe("memory under rejected 1 MB bodies", () => {
  it("builds bodies of about 1 MB", () => {
    expect(challengeBody.length).toBeGreaterThan(0.95 * BODY_BYTES);
    expect(challengeBody.length).toBeLessThanOrEqual(BODY_BYTES);
    expect(batchBody.length).toBeGreaterThan(0.95 * BODY_BYTES);
    expect(batchBody.length).toBeLessThanOrEqual(BODY_BYTES);
  });

  for (const senders of [4, 16]) {
    it(`${senders} senders: every answer 400 VALIDATION_FAILED, the server's RSS under ${MAX_RSS_MB} MB`, async () => {
      const startRss = rssMb(server.pid);
      let peakRss = startRss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(server.pid))), RSS_SAMPLE_MS);
      const answers: { status: number; code: unknown }[] = [];
      const rounds = Math.ceil(ROUNDS / senders);
      const startedMs = performance.now();
      try {
        await Promise.all(Array.from({ length: senders }, (_, i) => sender(i + senders * 100, rounds, answers)));
      } finally {
        clearInterval(sampler);
      }
      peakRss = Math.max(peakRss, rssMb(server.pid));
      console.log(
        `${senders} senders: ${answers.length} bodies in ${Math.round(performance.now() - startedMs)} ms, ` +
          `RSS ${Math.round(startRss)} → peak ${Math.round(peakRss)} MB (end ${Math.round(rssMb(server.pid))} MB)`,
      );
      expect(answers).toHaveLength(senders * rounds * 2);
      expect(answers.filter((a) => a.status !== 400 || a.code !== "VALIDATION_FAILED")).toEqual([]);
      expect(peakRss).toBeLessThan(MAX_RSS_MB);
    }, 180_000);
  }
});
