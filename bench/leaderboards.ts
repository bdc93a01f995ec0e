import { mkdtempSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.js";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch, PointType, Transfer } from "../src/domain/batch.js";
import { ALL_TIME, DAY_MS, type DayWindow } from "../src/domain/leaderboard.js";
import type { SnapshotRequest } from "../src/domain/snapshot.js";
import { openStore } from "../src/ledger/open.js";
import { takeSnapshot } from "../src/snapshots/snapshots.js";
import type { HistoryStore, LeaderboardsStore } from "../src/store/ports/leaderboards.js";
import type { LedgerStore } from "../src/store/store.js";
import { HISTORY_BACKFILL_MAX_STEP, PROJECTION_MAX_STEP } from "../src/domain/limits.js";
import { runBoundedSteps } from "../src/worker/bounded-steps.js";
import type { LeaderboardsOptions } from "./options.js";
import { createBenchSchema, type BenchSchema } from "./postgres-schema.js";
import { quantile, round } from "./stats.js";
import { generator } from "./payload.js";

/**
 * `npm run bench -- --leaderboards`: the leaderboards and history targets (docs/performance.md,
 * "Leaderboards and history"). Seeds one contract's board through the store itself (credit,
 * submitBatch of 2000-transfer batches, finalizeDue on a manual clock walking over 60 UTC days),
 * keeping its own tally of every recipient's points, then times random reads against it and checks
 * each answer against that tally: top-100 pages, pages after a random cursor and one address's rank,
 * all time and over a 30-day window; balances asOf a random time; one walk over the whole board by
 * cursor; a snapshot asOf the end of the seeding. Process RSS is sampled while the reads run.
 */

const TRANSFERS_PER_BATCH = 2000;
const SPAN_DAYS = 60;
/** The window measured: the last 30 whole UTC days of the span. */
const WINDOW_FROM_DAY = 30;
const WINDOW_TO_DAY = 60;
/** Batches submitted before each finalize loop: the clock then jumps past their finalizeAt. */
const BATCHES_PER_ROUND = 25;
const SECONDS_TO_FINALIZE = 60;
const PAGE_LIMIT = 100;
const WALK_PAGE_LIMIT = 1000;
/** Untimed calls before each measure: the first statements of a kind are prepared and cold. */
const WARMUP_CALLS = 5;
const RSS_SAMPLE_MS = 20;
const RNG_SEED = 20261125;
const UNITS_PER_POINT = 10n ** 12n;
const DEFAULTS = loadConfig({});
const POINT_TYPE: PointType = DEFAULTS.pointTypes[0]!;

const TARGETS = {
  allTimeP99Ms: 20,
  windowP99Ms: 200,
  balanceAsOfP99Ms: 50,
  snapshotAsOfSeconds: 60,
  finalizeSlowdownMax: 0.1,
};

const log = (message: string) => process.stderr.write(`bench leaderboards: ${message}\n`);
const mb = (bytes: number) => Math.round(bytes / 1048576);

type Store = LedgerStore & Partial<LeaderboardsStore & HistoryStore>;

/** Recipient i's address: a scrambled 8-digit prefix (so board order is not index order), then i + 1. */
const prefixOf = (i: number) => Math.imul(i + 1, 2654435761) >>> 0;
const addressOf = (i: number) => `0x${prefixOf(i).toString(16).padStart(8, "0")}${(i + 1).toString(16).padStart(32, "0")}` as AddressKey;

function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function windowOf(startMs: number): DayWindow {
  const fromMs = startMs + WINDOW_FROM_DAY * DAY_MS;
  const toMs = startMs + WINDOW_TO_DAY * DAY_MS;
  return { fromDay: dayText(fromMs), toDay: dayText(toMs), fromMs, toMs };
}

/** A window from the same first day, without an end. */
function openWindowOf(window: DayWindow): DayWindow {
  return { ...window, toDay: null, toMs: null };
}

/** What the seeding wrote, as the bench counted it: each recipient's points all time and in the window. */
interface Tally {
  allTime: BigInt64Array;
  window: BigInt64Array;
  startMs: number;
  endMs: number;
  windowSpec: DayWindow;
  /** Transfers finalized inside windowSpec. */
  windowTransfers: number;
}

interface SeedFigures {
  batches: number;
  transfers: number;
  seconds: number;
  submitTransfersPerSec: number;
  finalizeTransfersPerSec: number;
  finalizeSeconds: number;
  /** The projection after each round of finalizations (the boards, windows and receipts its batches add). */
  projectTransfersPerSec: number;
  projectSeconds: number;
}

/** Recipients of batch k: every one of N is reached by the coverage batches spread over the span; the rest favour low indices. */
function planner(options: LeaderboardsOptions, batches: number) {
  const n = options.recipients;
  const coverBatches = Math.ceil(n / TRANSFERS_PER_BATCH);
  const stride = Math.max(1, Math.floor(batches / coverBatches));
  let covered = 0;
  const random = generator(RNG_SEED);
  return (k: number, count: number): { start: number; units: bigint[] } => {
    let start: number;
    if (k % stride === 0 && covered < coverBatches) start = TRANSFERS_PER_BATCH * covered++;
    else start = Math.floor(n * random() ** 2);
    const units: bigint[] = [];
    for (let j = 0; j < count; j++) {
      const points = 1 + Math.floor(999 * random() ** 3);
      units.push(BigInt(points) * UNITS_PER_POINT + BigInt(Math.floor(random() * 1000)) * 10n ** 9n);
    }
    return { start, units };
  };
}

async function seed(store: Store, options: LeaderboardsOptions, contract: AddressKey): Promise<{ tally: Tally; figures: SeedFigures }> {
  const n = options.recipients;
  const batches = Math.ceil(options.transfers / TRANSFERS_PER_BATCH);
  const startMs = Math.floor(Date.now() / DAY_MS) * DAY_MS - 90 * DAY_MS;
  const windowSpec = windowOf(startMs);
  const createdAt = (k: number) => startMs + Math.floor((k * SPAN_DAYS * DAY_MS) / batches);
  const tally: Tally = {
    allTime: new BigInt64Array(n),
    window: new BigInt64Array(n),
    startMs,
    endMs: startMs,
    windowSpec,
    windowTransfers: 0,
  };
  const credited = await store.credit({
    address: contract,
    creditId: "seed",
    pointType: POINT_TYPE,
    amount: 10n ** 27n,
    createdAtMs: startMs - DAY_MS,
  });
  if (credited.kind !== "credited") throw new Error(`seed credit: ${credited.kind}`);
  const plan = planner(options, batches);
  let submitMs = 0;
  let finalizeMs = 0;
  let projectMs = 0;
  const began = performance.now();
  let nextReport = 0;
  for (let k0 = 0; k0 < batches; k0 += BATCHES_PER_ROUND) {
    const k1 = Math.min(batches, k0 + BATCHES_PER_ROUND);
    const clockMs = createdAt(k1 - 1) + SECONDS_TO_FINALIZE * 1000;
    const inWindow = clockMs >= windowSpec.fromMs! && clockMs < windowSpec.toMs!;
    for (let k = k0; k < k1; k++) {
      const count = Math.min(TRANSFERS_PER_BATCH, options.transfers - k * TRANSFERS_PER_BATCH);
      const { start, units } = plan(k, count);
      const transfers: Transfer[] = [];
      let total = 0n;
      for (let j = 0; j < count; j++) {
        const i = (start + j) % n;
        transfers.push({ toAddress: addressOf(i), amount: units[j]! });
        total += units[j]!;
        tally.allTime[i]! += units[j]!;
        if (inWindow) {
          tally.window[i]! += units[j]!;
          tally.windowTransfers++;
        }
      }
      const batch: NewBatch = {
        contract,
        batchId: `s${k}`,
        pointType: POINT_TYPE,
        transfers,
        total,
        secondsToFinalize: SECONDS_TO_FINALIZE,
        createdAtMs: createdAt(k),
      };
      const submitStarted = performance.now();
      const result = await store.submitBatch(batch);
      submitMs += performance.now() - submitStarted;
      if (result.kind !== "accepted") throw new Error(`seed batch ${k}: ${result.kind}`);
    }
    const finalizeStarted = performance.now();
    let finalized = 0;
    for (;;) {
      const done = await store.finalizeDue(clockMs, DEFAULTS.finalizerBatchesPerPass);
      if (done.length === 0) break;
      finalized += done.length;
    }
    finalizeMs += performance.now() - finalizeStarted;
    if (finalized !== k1 - k0) throw new Error(`round at batch ${k0}: finalized ${finalized} of ${k1 - k0}`);
    // The read models after the finalization (src/ledger/projection.ts), in passes as large as the job's largest.
    const projectStarted = performance.now();
    let projected = 0;
    for (let more = true; more;) {
      const step = await store.applyProjection(PROJECTION_MAX_STEP, clockMs);
      projected += step.applied;
      more = step.more;
    }
    projectMs += performance.now() - projectStarted;
    if (projected !== k1 - k0) throw new Error(`round at batch ${k0}: projected ${projected} of ${k1 - k0}`);
    tally.endMs = clockMs;
    if (k1 >= nextReport || k1 === batches) {
      nextReport += Math.ceil(batches / 20);
      const done = Math.min(options.transfers, k1 * TRANSFERS_PER_BATCH);
      log(
        `seeded ${k1}/${batches} batches (${dayText(clockMs)}): submit ${round(done / (submitMs / 1000))}/s, finalize ${round(done / (finalizeMs / 1000))}/s, project ${round(done / (projectMs / 1000))}/s, ${round((performance.now() - began) / 1000)} s`,
      );
    }
  }
  return {
    tally,
    figures: {
      batches,
      transfers: options.transfers,
      seconds: round((performance.now() - began) / 1000, 1),
      submitTransfersPerSec: round(options.transfers / (submitMs / 1000)),
      finalizeTransfersPerSec: round(options.transfers / (finalizeMs / 1000)),
      finalizeSeconds: round(finalizeMs / 1000, 1),
      projectTransfersPerSec: round(options.transfers / (projectMs / 1000)),
      projectSeconds: round(projectMs / 1000, 1),
    },
  };
}

/** The board as the bench expects it: entries in board order, and each recipient's competition rank (0: not on it). */
interface ExpectedBoard {
  totals: BigInt64Array;
  order: Uint32Array;
  rank: Uint32Array;
}

function expectedBoard(totals: BigInt64Array): ExpectedBoard {
  const indexes: number[] = [];
  for (let i = 0; i < totals.length; i++) if (totals[i]! > 0n) indexes.push(i);
  // Points descending, then address ascending: the prefix, then i (fixed-width hex, so numeric order is text order).
  indexes.sort((a, b) => {
    const ua = totals[a]!;
    const ub = totals[b]!;
    if (ua !== ub) return ua > ub ? -1 : 1;
    return prefixOf(a) - prefixOf(b) || a - b;
  });
  const order = Uint32Array.from(indexes);
  const rank = new Uint32Array(totals.length);
  for (let p = 0; p < order.length; p++) {
    const i = order[p]!;
    rank[i] = p > 0 && totals[i] === totals[order[p - 1]!] ? rank[order[p - 1]!]! : p + 1;
  }
  return { totals, order, rank };
}

interface Measure {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers that differ from the bench's own tally (0 expected); the first one described. */
  mismatches: number;
  firstMismatch?: string;
  targetP99Ms?: number;
  pass?: boolean;
}

/** Times `read` (which returns a mismatch description or null) up to `max` times or until the budget is spent. */
async function sample(
  name: string,
  max: number,
  budgetSec: number,
  read: (k: number) => Promise<string | null>,
  targetP99Ms?: number,
): Promise<Measure> {
  // A slow measure (seconds a read) spends at most a tenth of its budget warming up.
  const warmupEnd = performance.now() + (budgetSec * 1000) / 10;
  for (let k = 0; k < WARMUP_CALLS && performance.now() < warmupEnd; k++) await read(-1 - k);
  const latencies: number[] = [];
  let mismatches = 0;
  let firstMismatch: string | undefined;
  const deadline = performance.now() + budgetSec * 1000;
  while (latencies.length < max && performance.now() < deadline) {
    const started = performance.now();
    const wrong = await read(latencies.length);
    latencies.push(performance.now() - started);
    if (wrong !== null) {
      mismatches++;
      firstMismatch ??= wrong;
    }
  }
  const p99Ms = round(quantile(latencies, 0.99), 2);
  const measure: Measure = {
    samples: latencies.length,
    p50Ms: round(quantile(latencies, 0.5), 2),
    p99Ms,
    maxMs: round(Math.max(...latencies), 2),
    mismatches,
    ...(firstMismatch === undefined ? {} : { firstMismatch }),
    ...(targetP99Ms === undefined ? {} : { targetP99Ms, pass: p99Ms <= targetP99Ms && mismatches === 0 }),
  };
  log(`${name}: ${JSON.stringify(measure)}`);
  return measure;
}

interface ReadContext {
  store: Store & LeaderboardsStore;
  contract: AddressKey;
  options: LeaderboardsOptions;
  random: () => number;
  /** PostgreSQL: VACUUM ANALYZE, as after the seeding (measure()), once a window board is built. */
  settle: () => Promise<void>;
}

/** Top-100 pages, pages after a random entry, and random addresses' ranks, on one board. */
async function boardMeasures(ctx: ReadContext, window: DayWindow, expected: ExpectedBoard, targetP99Ms?: number, nowMs?: number) {
  const { store, contract, options, random } = ctx;
  const participants = expected.order.length;
  const query = { contract, pointType: POINT_TYPE, window, limit: PAGE_LIMIT, nowMs };
  const top = await sample(
    `top ${PAGE_LIMIT} (${window.fromDay ?? "all time"})`,
    options.samples,
    options.budgetSec,
    async () => {
      const page = await store.readBoard({ ...query, after: null });
      if (page.participants !== participants) return `participants ${page.participants}, expected ${participants}`;
      return page.rows[0]?.address === addressOf(expected.order[0]!) ? null : `first entry ${page.rows[0]?.address}`;
    },
    targetP99Ms,
  );
  const deep = await sample(
    `page after a random entry (${window.fromDay ?? "all time"})`,
    options.samples,
    options.budgetSec,
    async () => {
      const p = Math.floor(random() * (participants - 1));
      const i = expected.order[p]!;
      const page = await store.readBoard({ ...query, after: { units: expected.totals[i]!, address: addressOf(i) } });
      const want = addressOf(expected.order[p + 1]!);
      return page.rows[0]?.address === want ? null : `after position ${p + 1}: ${page.rows[0]?.address}, expected ${want}`;
    },
    targetP99Ms,
  );
  const rank = await sample(
    `rank of a random address (${window.fromDay ?? "all time"})`,
    options.samples,
    options.budgetSec,
    async () => {
      const i = Math.floor(random() * options.recipients);
      const standing = await store.readStanding(contract, POINT_TYPE, window, addressOf(i), nowMs);
      const wantAhead = expected.rank[i] === 0 ? null : expected.rank[i]! - 1;
      if (standing.units !== expected.totals[i]) return `${addressOf(i)}: units ${standing.units}, expected ${expected.totals[i]}`;
      if (wantAhead !== null && standing.ahead !== wantAhead) return `${addressOf(i)}: ahead ${standing.ahead}, expected ${wantAhead}`;
      return standing.participants === participants ? null : `participants ${standing.participants}, expected ${participants}`;
    },
    targetP99Ms,
  );
  return { participants, topPage: top, pageByCursor: deep, rank };
}

/**
 * The window job's build of the window's board, asked for by a read as of now: its whole time in
 * bounded steps (src/worker/window-boards.ts runs the same steps), and the longest step (how long
 * it holds the database's writer on SQLite).
 */
async function windowBoardBuild(ctx: ReadContext, window: DayWindow, transfers: number) {
  const { store, contract } = ctx;
  if (typeof store.buildWindowBoards !== "function") return { skipped: "the store has no window boards in this build" };
  await store.readBoard({ contract, pointType: POINT_TYPE, window, limit: 1, after: null, nowMs: Date.now() });
  let longestStepMs = 0;
  let steps = 0;
  const started = performance.now();
  const built = await withMemory(async () =>
    runBoundedSteps(
      async (size) => {
        const stepStarted = performance.now();
        const count = await store.buildWindowBoards(size);
        longestStepMs = Math.max(longestStepMs, performance.now() - stepStarted);
        steps++;
        return count;
      },
      HISTORY_BACKFILL_MAX_STEP,
      1_000_000,
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const figures = {
    seconds: round(seconds, 1),
    transfers,
    // What keeping a window board of an open window current costs the window job per transfer finalized in it.
    microsPerTransfer: round((seconds * 1e6) / Math.max(1, transfers), 1),
    steps,
    longestStepMs: round(longestStepMs, 1),
    peakRssMb: built.memory.rssPeakMb,
  };
  log(`window board built: ${JSON.stringify(figures)}`);
  await ctx.settle();
  return figures;
}

/** Every page of the all-time board one after another, checked entry by entry: what an export does. */
async function walkBoard(ctx: ReadContext, expected: ExpectedBoard) {
  const { store, contract, options } = ctx;
  const latencies: number[] = [];
  let position = 0;
  let mismatches = 0;
  let after: { units: bigint; address: AddressKey } | null = null;
  const started = performance.now();
  const deadline = started + options.budgetSec * 1000;
  for (;;) {
    const pageStarted = performance.now();
    const page = await store.readBoard({ contract, pointType: POINT_TYPE, window: ALL_TIME, limit: WALK_PAGE_LIMIT, after });
    latencies.push(performance.now() - pageStarted);
    for (const row of page.rows) if (row.address !== addressOf(expected.order[position++]!)) mismatches++;
    const last = page.rows.at(-1);
    if (!page.more || last === undefined || performance.now() > deadline) break;
    after = { units: last.units, address: last.address };
  }
  const walk = {
    pages: latencies.length,
    entries: position,
    complete: position === expected.order.length,
    seconds: round((performance.now() - started) / 1000, 1),
    pageP50Ms: round(quantile(latencies, 0.5), 2),
    pageP99Ms: round(quantile(latencies, 0.99), 2),
    mismatches,
  };
  log(`walk of the board by cursor, ${WALK_PAGE_LIMIT} a page: ${JSON.stringify(walk)}`);
  return walk;
}

/** Balances of random recipients at random times of the span; every fourth at the end, checked against the tally. */
async function balanceAsOfMeasure(store: Store & HistoryStore, options: LeaderboardsOptions, tally: Tally, random: () => number) {
  return sample(
    "balance asOf a random time",
    options.samples,
    options.budgetSec,
    async (k) => {
      const i = Math.floor(random() * options.recipients);
      const atEnd = k % 4 === 0;
      const asOfMs = atEnd ? tally.endMs : tally.startMs + Math.floor(random() * (tally.endMs - tally.startMs));
      const balances = await store.getBalancesAsOf(addressOf(i), [POINT_TYPE], asOfMs);
      const received = balances[POINT_TYPE]!.receivedCumulative;
      if (atEnd && received !== tally.allTime[i]) return `${addressOf(i)} at the end: received ${received}, expected ${tally.allTime[i]}`;
      return received > tally.allTime[i]! ? `${addressOf(i)}: received ${received} > ${tally.allTime[i]} (all time)` : null;
    },
    TARGETS.balanceAsOfP99Ms,
  );
}

/** Peak RSS over `work`, sampled every RSS_SAMPLE_MS, with RSS and heap before and after. */
async function withMemory<T>(work: () => Promise<T>): Promise<{ value: T; memory: Record<string, number> }> {
  const before = process.memoryUsage();
  let peak = before.rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  try {
    const value = await work();
    const after = process.memoryUsage();
    return {
      value,
      memory: {
        rssBeforeMb: mb(before.rss),
        rssPeakMb: mb(Math.max(peak, after.rss)),
        rssAfterMb: mb(after.rss),
        heapUsedBeforeMb: mb(before.heapUsed),
        heapUsedAfterMb: mb(after.heapUsed),
      },
    };
  } finally {
    clearInterval(sampler);
  }
}

/** A snapshot of every address's available balance; `asOfMs` null: as of now (the existing path, for comparison). */
async function snapshotMeasure(store: Store, id: string, asOfMs: number | null, expectedLeaves: number) {
  // asOfMs is the history build's field of SnapshotRequest; a build without it ignores it.
  const request = { id, pointType: POINT_TYPE, measure: "available", decimals: 18, asOfMs } as SnapshotRequest;
  const timed = await withMemory(async () => {
    const started = performance.now();
    const result = await takeSnapshot(store, request, () => Math.max(Date.now(), (asOfMs ?? 0) + 120_000), ADMIN_ACTOR);
    return { result, seconds: round((performance.now() - started) / 1000, 1) };
  });
  const { result, seconds } = timed.value;
  if (result.kind !== "created") throw new Error(`snapshot ${id}: ${result.kind}`);
  const leavesRight = result.snapshot.leafCount === expectedLeaves;
  const figures = {
    seconds,
    leafCount: result.snapshot.leafCount,
    expectedLeafCount: expectedLeaves,
    root: result.snapshot.root,
    peakRssMb: timed.memory.rssPeakMb,
    ...(asOfMs === null ? {} : { targetSeconds: TARGETS.snapshotAsOfSeconds, pass: seconds <= TARGETS.snapshotAsOfSeconds && leavesRight }),
  };
  log(`snapshot ${asOfMs === null ? "now" : "asOf"}: ${JSON.stringify(figures)}`);
  return figures;
}

async function readMeasures(store: Store, contract: AddressKey, options: LeaderboardsOptions, tally: Tally, schema: BenchSchema | null) {
  if (typeof store.readBoard !== "function" || typeof store.getBalancesAsOf !== "function") {
    log("this build's store has no readBoard/getBalancesAsOf: reads skipped");
    return { skipped: "the store has no leaderboards or history reads in this build" };
  }
  const ctx: ReadContext = {
    store: store as Store & LeaderboardsStore,
    contract,
    options,
    random: generator(RNG_SEED + 1),
    settle: async () => {
      if (schema) await vacuumAnalyze(schema, "after the window board's build");
    },
  };
  log("expected boards from the tally");
  const allTime = expectedBoard(tally.allTime);
  const window = expectedBoard(tally.window);
  const reads = await withMemory(async () => ({
    allTime: await boardMeasures(ctx, ALL_TIME, allTime, TARGETS.allTimeP99Ms),
    // Read without a time: from the window's batches, as an open window (or one whose window board is not built yet) is.
    windowFromBatches: {
      from: tally.windowSpec.fromDay,
      to: tally.windowSpec.toDay,
      ...(await boardMeasures(ctx, tally.windowSpec, window)),
    },
    windowBoardBuild: await windowBoardBuild(ctx, tally.windowSpec, tally.windowTransfers),
    // The window ended 30 days ago: read as of now, from its window board.
    window: {
      from: tally.windowSpec.fromDay,
      to: tally.windowSpec.toDay,
      ...(await boardMeasures(ctx, tally.windowSpec, window, TARGETS.windowP99Ms, Date.now())),
    },
    // The same days without \`to\`: a window still open (no transfer finalized after them), kept by the window job too.
    openWindowBoardBuild: await windowBoardBuild(ctx, openWindowOf(tally.windowSpec), tally.windowTransfers),
    openWindow: {
      from: tally.windowSpec.fromDay,
      to: null,
      ...(await boardMeasures(ctx, openWindowOf(tally.windowSpec), window, TARGETS.windowP99Ms, Date.now())),
    },
    balanceAsOf: await balanceAsOfMeasure(store as Store & HistoryStore, options, tally, ctx.random),
    walkAllTime: await walkBoard(ctx, allTime),
  }));
  return { ...reads.value, memoryDuringReads: reads.memory };
}

/**
 * What autovacuum does on a deployment (it is off on the bench machine): without it no page is
 * marked all-visible, and a rank's count (an index-only scan) visits the table row by row.
 */
async function vacuumAnalyze(schema: BenchSchema, when: string): Promise<void> {
  const started = performance.now();
  await schema.vacuumAnalyze();
  log(`VACUUM ANALYZE ${when}: ${round((performance.now() - started) / 1000, 1)} s`);
}

async function measure(store: Store, options: LeaderboardsOptions, schema: BenchSchema | null): Promise<Record<string, unknown>> {
  await store.migrate();
  const contract = `0x${"c0ffee".padEnd(40, "0")}` as AddressKey;
  log(`seeding ${options.recipients} recipients, ${options.transfers} transfers (${options.db})`);
  const { tally, figures } = await seed(store, options, contract);
  if (schema) await vacuumAnalyze(schema, "after seeding");
  const config = {
    db: options.db,
    recipients: options.recipients,
    transfers: options.transfers,
    loadAverage: os.loadavg().map((l) => round(l, 1)),
  };
  if (options.seedOnly) return { config, seeding: figures };
  const reads = await readMeasures(store, contract, options, tally, schema);
  // The contract still holds most of its credit: one leaf more than the recipients.
  const snapshotAsOf = await snapshotMeasure(store, "lb-asof", tally.endMs + 60_000, options.recipients + 1);
  const snapshotNow = await snapshotMeasure(store, "lb-now", null, options.recipients + 1);
  // Nothing changed after the end of the seeding: asOf then and now must commit to the same leaves.
  const history = typeof store.getBalancesAsOf === "function";
  return {
    config,
    seeding: figures,
    ...reads,
    snapshotAsOf: { ...snapshotAsOf, sameRootAsNow: snapshotAsOf.root === snapshotNow.root, historyBuild: history },
    snapshotNow,
    targets: TARGETS,
  };
}

export async function runLeaderboardsBench(options: LeaderboardsOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-bench-leaderboards-"));
  const baseUrl = process.env.BENCH_DATABASE_URL;
  if (options.db === "postgres" && !baseUrl) {
    log("--db postgres needs BENCH_DATABASE_URL; skipped");
    process.stdout.write(JSON.stringify({ skipped: true, reason: "--db postgres needs BENCH_DATABASE_URL" }) + "\n");
    return 0;
  }
  const schema = options.db === "postgres" ? await createBenchSchema(baseUrl!, options.keep) : null;
  const url = schema?.url ?? `sqlite:${options.keep ?? join(dir, "leaderboards.db")}`;
  if (options.keep !== null) log(`keeping the database: ${schema?.url ?? url}`);
  const store: Store = await openStore({ ...DEFAULTS, databaseUrl: url, pgPoolSize: 4, pgStatementTimeoutMs: 600_000 });
  try {
    const figures = await measure(store, options, schema);
    process.stdout.write(JSON.stringify(figures, null, 2) + "\n");
    return 0;
  } finally {
    await store.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
