/**
 * Public reads under load (issue 19, item 6): with PUBLIC_READS=true each client address gets a
 * budget on the public routes (PUBLIC_READ_RATE_LIMIT_PER_MINUTE), and large streamed reads (tree
 * dumps, CSV exports) are served MAX_CONCURRENT_STREAMED_READS at a time, the next 503 + Retry-After.
 */
import Database from "better-sqlite3";
import { get, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_CONCURRENT_STREAMED_READS, STREAMED_READ_RETRY_AFTER_SECONDS } from "../src/domain/limits.js";
import { createTestApp, expectError, listen, type TestApp, type TestResponse } from "./helpers/http.js";

/** Accounts in the snapshot: a tree dump of ≈ 11 MB, far more than the socket buffers hold while a client does not read. */
const HOLDERS = 80_000;
const LOOKUPS = 3000;
const CONCURRENT_DUMPS = 17;

let api: TestApp;
let baseUrl: string;

beforeAll(async () => {
  api = await createTestApp({ env: { PUBLIC_READS: "true" } });
  // Straight SQL: 80,000 credits through the API would take minutes.
  const db = new Database(api.config.databaseUrl.slice("sqlite:".length));
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO accounts (address, point_type, earned_w, earned_f, received_w, received_f)
     SELECT printf('0x%040x', i), 'PHASE2_POINTS', i, 0, 0, 0 FROM n`,
  ).run(HOLDERS);
  db.close();
  const taken = await api.send({
    method: "PUT",
    url: "/v1/admin/snapshots/season-1",
    token: api.adminToken,
    body: { pointType: "PHASE2_POINTS" },
  });
  expect(taken.status, taken.text).toBe(200);
  baseUrl = await listen(api.app);
}, 120_000);

afterAll(async () => {
  await api?.close();
});

function holder(i: number): string {
  return `0x${i.toString(16).padStart(40, "0")}`;
}

describe("per-client limit on public reads", () => {
  it(`${LOOKUPS} quick proof lookups from one client: the budget is served, the rest is 429 with Retry-After; other clients and the admin are not affected`, async () => {
    const limit = api.config.publicReadRateLimitPerMinute;
    const statuses = new Map<number, number>();
    let limited: TestResponse | undefined;
    const startedMs = performance.now();
    for (let i = 0; i < LOOKUPS; i++) {
      const response = await api.send({ method: "GET", url: `/v1/snapshots/season-1/proofs/${holder((i % HOLDERS) + 1)}` });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 429) limited ??= response;
    }
    console.log(
      `${LOOKUPS} proof lookups from one client in ${Math.round(performance.now() - startedMs)} ms: ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(statuses.get(200)).toBe(limit);
    expect(statuses.get(429)).toBe(LOOKUPS - limit);
    expectError(limited!, 429, "RATE_LIMITED");
    expect(Number(limited!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    // The tree dump and the balances of an address are public reads too: same budget.
    expect((await api.send({ method: "GET", url: `/v1/addresses/${holder(1)}/point-balances` })).status).toBe(429);
    // Another client address has its own budget; the admin token has none.
    const other = await api.app.inject({ method: "GET", url: `/v1/snapshots/season-1/proofs/${holder(2)}`, remoteAddress: "10.1.2.3" });
    expect(other.statusCode, other.body).toBe(200);
    const admin = await api.send({ method: "GET", url: `/v1/snapshots/season-1/proofs/${holder(3)}`, token: api.adminToken });
    expect(admin.status, admin.text).toBe(200);
  });
});

describe("concurrency cap on large streamed reads", () => {
  it(`${CONCURRENT_DUMPS} concurrent tree dumps: ${MAX_CONCURRENT_STREAMED_READS} stream, the rest get 503 + Retry-After at once; a slot frees when a dump ends`, async () => {
    // Each dump is read by a client that stops reading after the headers, so a served one stays open.
    // With the admin token: the cap holds whoever asks (and this client's public budget is spent above).
    const responses = await Promise.all(Array.from({ length: CONCURRENT_DUMPS }, () => openDump()));
    const served = responses.filter((response) => response.statusCode === 200);
    const refused = responses.filter((response) => response.statusCode === 503);
    console.log(`${CONCURRENT_DUMPS} concurrent tree dumps: ${served.length} served, ${refused.length} refused with 503`);
    expect(served).toHaveLength(MAX_CONCURRENT_STREAMED_READS);
    expect(refused).toHaveLength(CONCURRENT_DUMPS - MAX_CONCURRENT_STREAMED_READS);
    for (const response of refused) {
      expect(response.headers["retry-after"]).toBe(String(STREAMED_READ_RETRY_AFTER_SECONDS));
      const body = JSON.parse(await readAll(response)) as { error: { code: string } };
      expect(body.error.code).toBe("UNAVAILABLE");
    }
    // While they stream, ordinary reads are still served.
    const snapshot = await fetch(`${baseUrl}/v1/snapshots/season-1`, { headers: { authorization: `Bearer ${api.adminToken}` } });
    expect(snapshot.status).toBe(200);
    // Reading one served dump to its end frees its slot for the next.
    const text = await readAll(served[0]!);
    expect(JSON.parse(text)).toHaveProperty("tree");
    const next = await openDump();
    expect(next.statusCode).toBe(200);
    await Promise.all([next, ...served.slice(1)].map(readAll));
  }, 60_000);
});

/** GET the tree dump and resolve with the paused response once its head has arrived. */
function openDump(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${api.adminToken}` };
    const request = get(`${baseUrl}/v1/snapshots/season-1/tree`, { headers, agent: false }, (response) => {
      response.pause();
      resolve(response);
    });
    request.once("error", reject);
  });
}

function readAll(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    response.once("error", reject);
    response.resume();
  });
}
