import Database from "better-sqlite3";
import { get } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BALANCES_CSV_HEADER } from "../src/http/routes/transfers.js";
import { buildAppOverStore, temporarySqliteStore, type StoreApp } from "./helpers/app-over-store.js";
import { listen } from "./helpers/http.js";

/**
 * GET /v1/admin/balances.csv of 1,000,000 accounts over a real socket, read by a client in this
 * process that stops reading for a while partway. Two checks that the export streams in constant
 * memory:
 * - backpressure: while the client does not read, the server stops reading pages from the store
 *   (rows read stay within a few pages plus the socket buffers of what the client received);
 *   a version that built the body in memory, or ignored backpressure, reads all 1,000,000;
 * - RSS, sampled every 20 ms, grows by less than MAX_RSS_GROWTH_MB while ≈ 122 MB of CSV goes out.
 *   The bound is the V8 heap's headroom for the export's short-lived strings (each row is
 *   formatted, then dropped), not the body: measured, RSS levels off at ≈ +190 MB within the
 *   first half (140 → 327 MB) and the second half adds 0-70 MB depending on when the collector
 *   runs, which is why the deterministic check above is the backpressure one.
 */

const ROWS = 1_000_000;
/**
 * Measured growth: 190–264 MB (more on a busy machine, where the collector runs later). A body
 * built in memory would hold the 122 MB CSV plus a million row objects (≈ 600 MB and more).
 */
const MAX_RSS_GROWTH_MB = 384;
const RSS_SAMPLE_MS = 20;
const PAUSE_AFTER_BYTES = 16 * 1048576;
const PAUSE_MS = 1500;
/** Rows the server may read beyond what the client received while it pauses: pages in flight plus socket buffers. */
const MAX_ROWS_AHEAD = 60_000;

let fixture: ReturnType<typeof temporarySqliteStore>;
let api: StoreApp;
let baseUrl: string;
let rowsRead = 0;

beforeAll(async () => {
  fixture = temporarySqliteStore();
  // The store, counting the account rows the export reads.
  const store = fixture.store;
  const counting = Object.create(store) as typeof store;
  counting.listAccountBalances = async (query) => {
    const rows = await store.listAccountBalances(query);
    rowsRead += rows.length;
    return rows;
  };
  // The export reads through the reads a replica may serve: on SQLite the store's own, here the counting one.
  Object.defineProperty(counting, "replicaReads", { value: counting });
  api = await buildAppOverStore(counting, fixture.databaseUrl);
  const db = new Database(fixture.databaseUrl.slice("sqlite:".length));
  // Straight SQL: a million credits through the API would take minutes. Amounts with 12 decimals make long rows.
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO accounts (address, point_type, earned_w, earned_f, received_w, received_f)
     SELECT printf('0x%040x', i), 'PHASE2_POINTS', 1000000000 + i, 123456789012, i, 987654321098 FROM n`,
  ).run(ROWS);
  db.close();
  baseUrl = await listen(api.app);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await fixture?.remove();
});

describe("balances.csv export", () => {
  it(`streams ${ROWS.toLocaleString("en")} rows with the process's RSS growing less than ${MAX_RSS_GROWTH_MB} MB`, async () => {
    const baselineRss = process.memoryUsage.rss();
    let peakRss = baselineRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), RSS_SAMPLE_MS);
    let bytes = 0;
    let lines = 0;
    let head = "";
    let tail = "";
    let paused: { linesAtPause: number; rowsReadAtStart: number; rowsReadAtEnd: number } | null = null;
    let firstHalfPeak = 0;
    let heapAtHalf = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        get(`${baseUrl}/v1/admin/balances.csv`, { headers: { authorization: `Bearer ${api.adminToken}` } }, (response) => {
          expect(response.statusCode).toBe(200);
          expect(response.headers["content-type"]).toMatch(/^text\/csv/);
          response.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            if (firstHalfPeak === 0 && bytes > 61 * 1048576) {
              firstHalfPeak = peakRss;
              heapAtHalf = process.memoryUsage().heapUsed;
            }
            if (paused === null && bytes > PAUSE_AFTER_BYTES) {
              response.pause();
              const pause = { linesAtPause: lines, rowsReadAtStart: rowsRead, rowsReadAtEnd: 0 };
              paused = pause;
              setTimeout(() => {
                pause.rowsReadAtEnd = rowsRead;
                response.resume();
              }, PAUSE_MS);
            }
            for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
            if (head.length < 300) head += chunk.toString("utf8", 0, 300);
            tail = (tail + chunk.toString("utf8", Math.max(0, chunk.length - 300))).slice(-300);
          });
          response.on("end", resolve);
          response.on("error", reject);
        }).on("error", reject);
      });
    } finally {
      clearInterval(sampler);
    }
    const growthMb = (peakRss - baselineRss) / 1048576;
    const pause = paused as unknown as { linesAtPause: number; rowsReadAtStart: number; rowsReadAtEnd: number };
    console.log(
      `balances.csv: ${lines} lines, ${Math.round(bytes / 1048576)} MB, RSS ${Math.round(baselineRss / 1048576)} MB → ` +
        `${Math.round(firstHalfPeak / 1048576)} MB (first half) → ${Math.round(peakRss / 1048576)} MB; ` +
        `heap ${Math.round(heapAtHalf / 1048576)} → ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB; paused at ${pause.linesAtPause} lines: rows read ${pause.rowsReadAtStart} → ${pause.rowsReadAtEnd}`,
    );
    expect(pause.rowsReadAtEnd - pause.linesAtPause).toBeLessThan(MAX_ROWS_AHEAD);
    expect(rowsRead).toBe(ROWS);
    expect(lines).toBe(ROWS + 1);
    expect(bytes).toBeGreaterThan(120 * 1048576);
    expect(head.split("\n")[0]).toBe(BALANCES_CSV_HEADER);
    // Row 1: earned 1000000001.123456789012, received 1.987654321098, nothing sent.
    expect(head.split("\n")[1]).toBe(
      "0x0000000000000000000000000000000000000001,PHASE2_POINTS,1000000003.11111111011,0,1000000001.123456789012,1.987654321098,0",
    );
    expect(tail.trimEnd().split("\n").at(-1)).toMatch(/^0x00000000000000000000000000000000000F4240,PHASE2_POINTS,/i);
    expect(growthMb).toBeLessThan(MAX_RSS_GROWTH_MB);
  }, 300_000);
});
