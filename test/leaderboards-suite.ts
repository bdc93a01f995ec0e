import { randomBytes } from "node:crypto";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { BatchStatus, PointType, Transfer } from "../src/domain/batch.js";
import { ALL_TIME, DAY_MS, rankBandOf, rankPage, type BoardPosition, type DayWindow } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { PROJECTION_BACKLOG_GRACE_MS } from "../src/domain/limits.js";
import { ProjectionJob } from "../src/worker/projection.js";
import { ManualClock } from "../src/clock.js";
import { WindowBoardsJob } from "../src/worker/window-boards.js";
import type { LedgerStore } from "../src/store/store.js";
import { LeaderboardModel, type ModelStanding } from "./helpers/leaderboard-model.js";
import { mulberry32 } from "./helpers/fault-proxy.js";

/**
 * The leaderboards over a real database (test/leaderboards-sqlite.test.ts,
 * test/leaderboards-postgres.test.ts): random credits, submissions, cancellations and
 * finalizations on a manual clock spanning several UTC days, every board (all time and windows)
 * read page by page and every standing compared with an independent model
 * (test/helpers/leaderboard-model.ts) after each step, as of the `through` each answer states (the
 * projection paused, lagging or caught up at random); paging while batches finalize; and the
 * projection's rebuild of batches finalized before the leaderboards existed.
 */

/** A batch as a database from before the leaderboards holds it (written straight into its tables). */
export interface OldBatch {
  contract: AddressKey;
  batchId: string;
  pointType: PointType;
  status: BatchStatus;
  transfers: Transfer[];
  createdAtMs: number;
  finalizeAtMs: number;
  finalizedAtMs: number | null;
}

export interface LeaderboardsFixture {
  /** Why the suite is skipped (freshStore answers null then). */
  skipMessage?: string;
  /** A migrated store on a database of its own (the suite finalizes everything due in it). */
  freshStore(): Promise<LedgerStore | null>;
  /**
   * Two stores over one database at the schema before the leaderboards (SQLite 13, PostgreSQL 11)
   * holding `batches`, not yet migrated.
   */
  oldStores(batches: readonly OldBatch[]): Promise<[LedgerStore, LedgerStore] | null>;
  /**
   * Whether one batch may name an address twice (stored without the HTTP layer's check): SQLite's
   * settlement adds both; PostgreSQL's one statement cannot change an account twice.
   */
  duplicateRecipients: boolean;
  /** The window boards in a fresh store's database, oldest first, and how many entries belong to none of them. */
  windowBoards(store: LedgerStore): Promise<{ boards: WindowBoardRow[]; strayEntries: number }>;
  /** Adds (or takes) one point to every window board entry of a fresh store (a read that shows it read a window board). */
  shiftWindowEntries(store: LedgerStore, points: 1 | -1): Promise<void>;
}

/** A window_boards row as the tests look at it. */
export interface WindowBoardRow {
  fromMs: number;
  toMs: number;
  state: string;
  batches: number;
}

const T0 = Date.UTC(2026, 2, 1);
const HOUR_MS = 3_600_000;
const POINT_TYPES: PointType[] = ["PHASE2_POINTS", "PHASE2_GOLD"];
/** Few amounts, so equal points (shared ranks) are common; they span many digits (rank bands). */
const AMOUNTS = [
  1n,
  7n,
  UNITS_PER_POINT,
  2n * UNITS_PER_POINT,
  5n * UNITS_PER_POINT,
  123_456_789_012_345n,
  10n ** 15n,
  999n * UNITS_PER_POINT,
];
/** A bound on paging loops, so a cursor that never ends fails the test instead of hanging it. */
const MAX_PAGES = 1000;

export function randomAddress(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}

/** A suite's seed: LEADERBOARDS_SEED replays one, else the clock picks it. */
function runSeed(): number {
  return Number(process.env.LEADERBOARDS_SEED ?? Date.now() % 1_000_000);
}

/** A small seeded generator: a failing run can be replayed from the seed it prints. */
function generator(seed: number): (below: number) => number {
  const next = mulberry32(seed);
  return (below) => Math.floor(next() * below);
}

function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The window of whole days [T0 + from days, T0 + to days); null: unbounded. */
function days(from: number | null, to: number | null): DayWindow {
  const fromMs = from === null ? null : T0 + from * DAY_MS;
  const toMs = to === null ? null : T0 + to * DAY_MS;
  return { fromDay: fromMs === null ? null : dayOf(fromMs), toDay: toMs === null ? null : dayOf(toMs), fromMs, toMs };
}

const WINDOWS: DayWindow[] = [ALL_TIME, days(0, 1), days(1, 3), days(2, null), days(null, 2), days(30, 31)];

/** Every entry of a board, read `limit` at a time, ranked as the HTTP layer ranks pages (rankPage). */
async function readWholeBoard(
  store: LedgerStore,
  contract: AddressKey,
  pointType: PointType,
  window: DayWindow,
  limit: number,
  nowMs?: number,
): Promise<{ participants: number[]; entries: ModelStanding[]; throughMs: number }> {
  const participants: number[] = [];
  const entries: ModelStanding[] = [];
  const throughs = new Set<number>();
  let previous: BoardPosition | null = null;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await store.readBoard({ contract, pointType, window, limit, after: previous, nowMs });
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    participants.push(page.participants);
    throughs.add(page.throughMs);
    const ranked = rankPage(page.rows, previous);
    entries.push(...ranked.entries.map(({ address, units, rank }) => ({ address, points: units, rank })));
    // No pass ran between the pages: they all stand at one through.
    expect(throughs.size).toBe(1);
    if (!page.more) return { participants, entries, throughMs: page.throughMs };
    expect(page.rows.length).toBe(limit);
    previous = ranked.last;
  }
  throw new Error(`the board did not end within ${MAX_PAGES} pages`);
}

async function expectStanding(
  store: LedgerStore,
  model: LeaderboardModel,
  board: { contract: AddressKey; pointType: PointType; window: DayWindow },
  address: AddressKey,
  nowMs?: number,
): Promise<void> {
  const { contract, pointType, window } = board;
  const standing = await store.readStanding(contract, pointType, window, address, nowMs);
  const expected = model.standing(contract, pointType, window, address, standing.throughMs);
  const rank = standing.units > 0n ? standing.ahead + 1 : null;
  expect({ address, window: [window.fromDay, window.toDay], rank, points: standing.units }).toEqual({
    address,
    window: [window.fromDay, window.toDay],
    rank: expected.rank,
    points: expected.points,
  });
  expect(standing.participants).toBe(model.board(contract, pointType, window, standing.throughMs).length);
}

async function expectBoard(
  store: LedgerStore,
  model: LeaderboardModel,
  board: { contract: AddressKey; pointType: PointType; window: DayWindow },
  limit: number,
  nowMs?: number,
): Promise<void> {
  const { contract, pointType, window } = board;
  const read = await readWholeBoard(store, contract, pointType, window, limit, nowMs);
  const expected = model.board(contract, pointType, window, read.throughMs);
  expect({ window: [window.fromDay, window.toDay], entries: read.entries }).toEqual({
    window: [window.fromDay, window.toDay],
    entries: expected,
  });
  expect(new Set(read.participants)).toEqual(new Set([expected.length]));
}

/**
 * The projection's passes of at most `limit` batches each as of nowMs, until it has applied every
 * queued batch; then it stands at nowMs or later, past every finalization. How many it applied.
 */
export async function drainProjection(store: LedgerStore, nowMs: number, limit = 7): Promise<number> {
  let applied = 0;
  for (let steps = 0; steps < MAX_PAGES; steps++) {
    const step = await store.applyProjection(limit, nowMs);
    applied += step.applied;
    if (step.applied === 0 && (await store.projectionState()).queued === 0) return applied;
  }
  throw new Error(`the projection did not catch up within ${MAX_PAGES} steps`);
}

/** The window job's steps until it has nothing left to build or drop; how many steps did work. */
async function buildWindowBoards(store: LedgerStore, stepSize: number): Promise<number> {
  for (let steps = 0; steps < MAX_PAGES; steps++) {
    if ((await store.buildWindowBoards(stepSize)) === 0) return steps;
  }
  throw new Error(`the window job did not end within ${MAX_PAGES} steps`);
}

interface PendingBatch {
  contract: AddressKey;
  pointType: PointType;
  transfers: Transfer[];
}

/** The ledger side of the random runs: the store, the model, and the batches still pending. */
class Run {
  readonly model = new LeaderboardModel();
  readonly pending = new Map<string, PendingBatch>();
  private batches = 0;

  constructor(
    readonly store: LedgerStore,
    readonly random: (below: number) => number,
  ) {}

  async fund(contracts: readonly AddressKey[]): Promise<void> {
    for (const contract of contracts) {
      for (const pointType of POINT_TYPES) {
        const credit = {
          address: contract,
          creditId: `fund-${pointType}`,
          pointType,
          amount: 10n ** 9n * UNITS_PER_POINT,
          createdAtMs: T0,
        };
        await this.store.credit(credit);
      }
    }
  }

  async submit(contract: AddressKey, pointType: PointType, transfers: Transfer[], nowMs: number, secondsToFinalize: number): Promise<void> {
    const batchId = `b${this.batches++}`;
    const total = transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
    const result = await this.store.submitBatch({ contract, batchId, pointType, transfers, total, secondsToFinalize, createdAtMs: nowMs });
    expect(result.kind).toBe("accepted");
    this.pending.set(`${contract} ${batchId}`, { contract, pointType, transfers });
  }

  async finalize(nowMs: number, limit: number): Promise<number> {
    const finalized = await this.store.finalizeDue(nowMs, limit);
    for (const batch of finalized) {
      const key = `${batch.contract} ${batch.batchId}`;
      const pending = this.pending.get(key);
      expect(pending, `finalized ${key}, which the run did not leave pending`).toBeDefined();
      this.model.finalized(batch.contract, pending!.pointType, pending!.transfers, batch.finalizedAtMs);
      this.pending.delete(key);
    }
    return finalized.length;
  }

  async cancelOne(nowMs: number): Promise<void> {
    const keys = [...this.pending.keys()];
    if (keys.length === 0) return;
    const key = keys[this.random(keys.length)]!;
    const [contract, batchId] = key.split(" ") as [AddressKey, string];
    const result = await this.store.cancelBatch(contract, batchId, nowMs);
    if (result.kind === "cancelled") this.pending.delete(key);
    else expect(result.kind).toBe("not_cancellable");
  }

  randomTransfers(recipients: readonly AddressKey[], duplicates: boolean): Transfer[] {
    const count = 1 + this.random(4);
    const chosen = [...recipients].sort(() => this.random(3) - 1).slice(0, count);
    if (duplicates && this.random(4) === 0) chosen.push(chosen[0]!);
    return chosen.map((toAddress) => ({ toAddress, amount: AMOUNTS[this.random(AMOUNTS.length)]! }));
  }
}

export function leaderboardsSuite(name: string, fixture: LeaderboardsFixture): void {
  // One seed for the suite's random runs, in its name: a failure names the seed that replays it.
  const seed = runSeed();
  const title = `${name} (seed ${seed}: LEADERBOARDS_SEED=${seed} replays it)${fixture.skipMessage ? ` (${fixture.skipMessage})` : ""}`;
  describe.skipIf(fixture.skipMessage !== undefined)(title, () => {
    it("ranks every board and window as the model does after each random credit, submission, cancellation and finalization", async () => {
      const store = (await fixture.freshStore())!;
      const run = new Run(store, generator(seed));
      const random = run.random;
      const contracts = [randomAddress(), randomAddress()];
      const recipients = [...Array.from({ length: 9 }, randomAddress), contracts[1]!];
      const neverPaid = randomAddress();
      await run.fund(contracts);
      let nowMs = T0 + HOUR_MS;
      let lastThroughMs = 0;
      for (let step = 0; step < 45; step++) {
        const action = random(10);
        const contract = contracts[random(contracts.length)]!;
        const pointType = POINT_TYPES[random(POINT_TYPES.length)]!;
        if (action < 5) {
          const transfers = run.randomTransfers(
            recipients.filter((r) => r !== contract),
            fixture.duplicateRecipients,
          );
          await run.submit(contract, pointType, transfers, nowMs, 1 + random(10 * 3600));
        } else if (action < 6) {
          await run.cancelOne(nowMs);
        } else if (action < 9) {
          await run.finalize(nowMs, 1 + random(4));
        } else {
          const credit = { address: contract, creditId: `top-up-${step}`, pointType, amount: UNITS_PER_POINT, createdAtMs: nowMs };
          await store.credit(credit);
        }
        nowMs += random(6 * HOUR_MS);
        // The projection paused, a step of a few batches, or caught up; the window job now and then.
        const projection = random(3);
        if (projection === 1) await store.applyProjection(1 + random(3), nowMs);
        if (projection === 2) await drainProjection(store, nowMs, 1 + random(5));
        if (random(2) === 0) await buildWindowBoards(store, 1 + random(3));
        const { throughMs } = await store.projectionState();
        expect(throughMs, `seed ${seed}: through never goes back`).toBeGreaterThanOrEqual(lastThroughMs);
        lastThroughMs = throughMs;
        for (const board of contracts.flatMap((c) =>
          POINT_TYPES.flatMap((p) => WINDOWS.map((w) => ({ contract: c, pointType: p, window: w }))),
        )) {
          await expectBoard(store, run.model, board, 1 + random(4), nowMs);
          for (const address of [recipients[random(recipients.length)]!, neverPaid]) {
            await expectStanding(store, run.model, board, address, nowMs);
          }
        }
      }
      // Everything left finalizes and is applied: the last boards, every address's standing in every window.
      nowMs += 2 * DAY_MS;
      while ((await run.finalize(nowMs, 100)) > 0);
      expect(run.pending.size, `seed ${seed}`).toBe(0);
      expect(nowMs - T0).toBeGreaterThan(3 * DAY_MS);
      await drainProjection(store, nowMs);
      expect((await store.projectionState()).throughMs).toBeGreaterThanOrEqual(run.model.lastFinalizedAtMs);
      const everyBoard = contracts.flatMap((c) =>
        POINT_TYPES.flatMap((p) => WINDOWS.map((w) => ({ contract: c, pointType: p, window: w }))),
      );
      // A board whose first batch finalized in this drain has no window boards yet: a read asks for them, the job builds them.
      for (const board of everyBoard) await expectBoard(store, run.model, board, 100, nowMs);
      await buildWindowBoards(store, 2);
      for (const board of everyBoard) {
        for (const readAtMs of [undefined, nowMs]) {
          await expectBoard(store, run.model, board, 3, readAtMs);
          for (const address of [...recipients, neverPaid]) await expectStanding(store, run.model, board, address, readAtMs);
        }
      }
      // Every window of every board that has entries was asked for and built (5 windows; all time is no window board).
      const { boards, strayEntries } = await fixture.windowBoards(store);
      expect(strayEntries).toBe(0);
      expect(boards.length).toBeGreaterThanOrEqual(5);
      expect(
        boards.filter((b) => b.state !== "ready"),
        `seed ${seed}`,
      ).toEqual([]);
      expect(everyBoard.filter((b) => run.model.board(b.contract, b.pointType, b.window).length > 0).length).toBeGreaterThan(0);
      expect(await store.verify()).toEqual([]);
    });

    it("reads a window from its window board once built, kept current by the projection's passes, and from its batches by through until then", async () => {
      const store = (await fixture.freshStore())!;
      const run = new Run(store, generator(seed));
      const contract = randomAddress();
      await run.fund([contract]);
      const recipients = Array.from({ length: 12 }, randomAddress);
      const window = days(0, 2);
      const board = { contract, pointType: "PHASE2_POINTS" as PointType, window };
      for (let hour = 1; hour < 60; hour += 7) {
        await run.submit(contract, "PHASE2_POINTS", run.randomTransfers(recipients, false), T0 + hour * HOUR_MS, 1);
        expect(await run.finalize(T0 + hour * HOUR_MS + 1000, 10)).toBe(1);
      }
      const afterMs = T0 + 3 * DAY_MS;
      // Paused, the projection counts nothing yet: every answer says so with its through.
      expect((await readWholeBoard(store, contract, "PHASE2_POINTS", window, 4)).entries).toEqual([]);
      await drainProjection(store, afterMs);
      expect((await store.projectionState()).throughMs).toBe(afterMs);
      // Asked once: read from the batches, and one window board listed to build (none for a reader without a time).
      await expectBoard(store, run.model, board, 4);
      expect((await fixture.windowBoards(store)).boards).toEqual([]);
      await expectBoard(store, run.model, board, 4, afterMs);
      expect((await fixture.windowBoards(store)).boards).toEqual([
        { fromMs: window.fromMs, toMs: window.toMs, state: "building", batches: 0 },
      ]);
      // The window job's run builds it in bounded steps (each of at most 2 batches here).
      const job = new WindowBoardsJob(store, { maxStepSize: 2 }, pino({ enabled: false }));
      expect((await job.runOnce()).more).toBe(false);
      const built = run.model.board(contract, "PHASE2_POINTS", window);
      expect((await fixture.windowBoards(store)).boards).toEqual([
        { fromMs: window.fromMs, toMs: window.toMs, state: "ready", batches: 7 },
      ]);
      await expectBoard(store, run.model, board, 5, afterMs);
      for (const address of recipients) await expectStanding(store, run.model, board, address, afterMs);
      // Read from the window board: a point added to each of its entries shows (a reader without a time reads the batches).
      expect(await store.verify()).toEqual([]);
      await fixture.shiftWindowEntries(store, 1);
      const raised = await readWholeBoard(store, contract, "PHASE2_POINTS", window, 100, afterMs);
      expect(raised.entries.map((e) => [e.address, e.points])).toEqual(built.map((e) => [e.address, e.points + UNITS_PER_POINT]));
      await expectBoard(store, run.model, board, 5);
      // verify (invariant 5) reports each raised entry of the window board.
      const violations = await store.verify();
      expect(violations.filter((v) => v.invariant === 5 && v.message.includes("window board entry")).length).toBe(built.length);
      await fixture.shiftWindowEntries(store, -1);
      expect(await store.verify()).toEqual([]);
      // The clock set back into the ended window: the batch is stamped after the projection's fence, so the
      // window (and every answer already given) stays exact; it lands after afterMs, in the open window.
      await run.submit(contract, "PHASE2_POINTS", run.randomTransfers(recipients, false), T0 + DAY_MS, 1);
      expect(await run.finalize(T0 + DAY_MS + 1000, 10)).toBe(1);
      expect(run.model.lastFinalizedAtMs).toBe(afterMs + 1);
      await expectBoard(store, run.model, board, 5, afterMs);
      // A window still open: built from its batches by the through it was asked at, then each pass adds its own.
      const open = { ...board, window: days(2, null) };
      await expectBoard(store, run.model, open, 3, afterMs);
      await buildWindowBoards(store, 3);
      await drainProjection(store, afterMs + 2);
      await expectBoard(store, run.model, open, 3, afterMs + 2);
      const finalizedAtMs = afterMs + HOUR_MS;
      await run.submit(contract, "PHASE2_POINTS", run.randomTransfers(recipients, false), finalizedAtMs - 1000, 1);
      expect(await run.finalize(finalizedAtMs, 10)).toBe(1);
      const lagging = await readWholeBoard(store, contract, "PHASE2_POINTS", open.window, 3, finalizedAtMs + 999);
      expect(lagging.throughMs).toBeLessThan(finalizedAtMs);
      expect(lagging.entries).toEqual(run.model.board(contract, "PHASE2_POINTS", open.window, finalizedAtMs - 1));
      await drainProjection(store, finalizedAtMs);
      await expectBoard(store, run.model, open, 3, finalizedAtMs);
      for (const address of recipients) await expectStanding(store, run.model, open, address, finalizedAtMs);
      expect((await fixture.windowBoards(store)).boards.map((b) => [b.state, b.batches])).toEqual([
        ["ready", 7],
        ["ready", 4],
      ]);
      // A board keeps the last WINDOW_BOARDS_PER_BOARD (8) window boards listed; older ones are dropped, entries and all:
      // (0, 2) and (2, null) were listed first, (0, 1) and (0, 3) … (0, 9) after them.
      const laterMs = afterMs + 7 * DAY_MS;
      for (let to = 1; to <= 9; to++) await readWholeBoard(store, contract, "PHASE2_POINTS", days(0, to), 100, laterMs);
      await buildWindowBoards(store, 3);
      const kept = await fixture.windowBoards(store);
      expect(kept.strayEntries).toBe(0);
      expect(kept.boards.map((b) => [b.state, (b.toMs - T0) / DAY_MS])).toEqual([1, 3, 4, 5, 6, 7, 8, 9].map((to) => ["ready", to]));
      for (let to = 1; to <= 9; to++) await expectBoard(store, run.model, { ...board, window: days(0, to) }, 4, laterMs);
      expect(await store.verify()).toEqual([]);
    });

    it("shares a rank between equal points (1, 2, 2, 4), orders a tie by address and pages through it", async () => {
      const store = (await fixture.freshStore())!;
      const run = new Run(store, generator(1));
      const contract = randomAddress();
      await run.fund([contract]);
      const [a, b, c, d, e] = Array.from({ length: 5 }, randomAddress).sort();
      const points = (n: bigint) => n * UNITS_PER_POINT;
      await run.submit(
        contract,
        "PHASE2_POINTS",
        [
          { toAddress: e!, amount: points(9n) },
          { toAddress: c!, amount: points(5n) },
          { toAddress: a!, amount: points(5n) },
          { toAddress: d!, amount: points(5n) },
          { toAddress: b!, amount: points(1n) },
        ],
        T0,
        1,
      );
      await run.finalize(T0 + 1000, 10);
      await drainProjection(store, T0 + 1000);
      for (const limit of [1, 2, 3, 10]) {
        const read = await readWholeBoard(store, contract, "PHASE2_POINTS", ALL_TIME, limit);
        expect(read.entries.map((entry) => [entry.rank, entry.address])).toEqual([
          [1, e],
          [2, a],
          [2, c],
          [2, d],
          [5, b],
        ]);
      }
      const window = days(0, 1);
      for (const [address, rank] of [
        [e, 1],
        [a, 2],
        [c, 2],
        [d, 2],
        [b, 5],
      ] as const) {
        for (const w of [ALL_TIME, window]) {
          const standing = await store.readStanding(contract, "PHASE2_POINTS", w, address!);
          expect([standing.ahead + 1, standing.participants]).toEqual([rank, 5]);
        }
      }
      const other = await store.readStanding(contract, "PHASE2_GOLD", ALL_TIME, a!);
      expect(other).toEqual({ throughMs: T0 + 1000, units: 0n, ahead: 0, participants: 0 });
      expect(await store.readBoard({ contract, pointType: "PHASE2_GOLD", window: ALL_TIME, limit: 5, after: null })).toEqual({
        throughMs: T0 + 1000,
        participants: 0,
        rows: [],
        more: false,
      });
    });

    it("pages with a cursor while batches finalize: every entry at most once, an unchanged one exactly once", async () => {
      const store = (await fixture.freshStore())!;
      const run = new Run(store, generator(seed));
      const contract = randomAddress();
      await run.fund([contract]);
      const recipients = Array.from({ length: 30 }, randomAddress);
      let nowMs = T0 + HOUR_MS;
      for (let i = 0; i < recipients.length; i += 5) {
        const transfers = recipients.slice(i, i + 5).map((toAddress) => ({ toAddress, amount: AMOUNTS[run.random(AMOUNTS.length)]! }));
        await run.submit(contract, "PHASE2_POINTS", transfers, nowMs, 1);
      }
      nowMs += 2000;
      while ((await run.finalize(nowMs, 100)) > 0);
      await drainProjection(store, nowMs);
      for (const window of [ALL_TIME, days(0, null)]) {
        const changed = new Set<AddressKey>();
        const seen = new Set<AddressKey>();
        let previous: BoardPosition | null = null;
        for (let pages = 0; pages < MAX_PAGES; pages++) {
          const page = await store.readBoard({ contract, pointType: "PHASE2_POINTS", window, limit: 4, after: previous });
          for (const row of page.rows) {
            expect(seen.has(row.address), `${row.address} seen twice`).toBe(false);
            seen.add(row.address);
          }
          if (!page.more) break;
          previous = rankPage(page.rows, previous).last;
          // Between two pages a batch raises addresses both before and after the cursor.
          const transfers = run.randomTransfers(recipients, false);
          for (const transfer of transfers) changed.add(transfer.toAddress);
          await run.submit(contract, "PHASE2_POINTS", transfers, nowMs, 1);
          nowMs += 2000;
          expect(await run.finalize(nowMs, 10)).toBe(1);
          await drainProjection(store, nowMs);
        }
        for (const address of recipients) {
          if (!changed.has(address)) expect(seen.has(address), `${address} was never changed, so it must be read`).toBe(true);
        }
        await expectBoard(store, run.model, { contract, pointType: "PHASE2_POINTS", window }, 7);
      }
    });

    it("rebuilds from batches finalized before the leaderboards existed, each once, in order, beside live finalizations and two stores applying at once", async () => {
      const random = generator(seed);
      const contracts = [randomAddress(), randomAddress()];
      const recipients = Array.from({ length: 8 }, randomAddress);
      const old: OldBatch[] = [];
      for (let i = 0; i < 23; i++) {
        const status: BatchStatus = i % 7 === 3 ? "CANCELLED" : i % 11 === 5 ? "PENDING" : "FINALIZED";
        const createdAtMs = T0 + i * 5 * HOUR_MS;
        const transfers = recipients
          .filter(() => random(2) === 0)
          .slice(0, 4)
          .map((toAddress) => ({ toAddress, amount: AMOUNTS[random(AMOUNTS.length)]! }));
        if (transfers.length === 0) transfers.push({ toAddress: recipients[0]!, amount: UNITS_PER_POINT });
        const contract = contracts[i % 2]!;
        const pointType = POINT_TYPES[i % 3 === 0 ? 1 : 0]!;
        // Two batches of one contract finalized in the same millisecond (a pass never ends inside the tie).
        const finalizedAtMs = status === "FINALIZED" ? (i === 4 ? T0 + 2 * 5 * HOUR_MS + HOUR_MS : createdAtMs + HOUR_MS) : null;
        // A batch left PENDING is not due before the test ends (it is no one's to finalize here).
        const finalizeAtMs = status === "PENDING" ? T0 + 365 * DAY_MS : createdAtMs + HOUR_MS;
        old.push({ contract, batchId: `old-${i}`, pointType, status, transfers, createdAtMs, finalizeAtMs, finalizedAtMs });
      }
      const stores = await fixture.oldStores(old);
      if (!stores) return;
      const [store, other] = stores;
      await store.migrate();
      const finalizedOld = old.filter((batch) => batch.status === "FINALIZED");
      expect(await store.projectionState()).toMatchObject({ throughMs: 0, queued: finalizedOld.length });

      const run = new Run(store, random);
      for (const batch of finalizedOld) run.model.finalized(batch.contract, batch.pointType, batch.transfers, batch.finalizedAtMs!);
      await run.fund(contracts);
      // A first step of at most 5 (fewer when it would end inside a tie of finalization times: verify checks that
      // every batch still queued finalized after its through), then a batch finalized live, then steps from two stores at once.
      const liveAtMs = T0 + 6 * DAY_MS;
      const first = await store.applyProjection(5, liveAtMs);
      expect(first.applied).toBeGreaterThan(0);
      expect(first.applied).toBeLessThanOrEqual(5);
      expect(first.throughMs).toBeGreaterThanOrEqual(Math.max(...first.finalizedAtMs));
      // The old batches were written without their accounts: only the projection's invariant is asked.
      expect((await store.verify()).filter((v) => v.invariant === 5)).toEqual([]);
      for (const contract of contracts) await expectBoard(store, run.model, { contract, pointType: "PHASE2_POINTS", window: ALL_TIME }, 3);
      await run.submit(contracts[0]!, "PHASE2_POINTS", run.randomTransfers(recipients, false), liveAtMs, 1);
      expect(await run.finalize(liveAtMs + 1000, 10)).toBe(1);
      // The projection job's run on one store, bare steps on the other, at once: each batch is applied by one of them.
      const job = new ProjectionJob(store, new ManualClock(liveAtMs + 1000), { maxStepSize: 4 }, null, pino({ enabled: false }));
      const [jobRun] = await Promise.all([job.runOnce(), drainProjection(other, liveAtMs + 1000, 3)]);
      expect(jobRun).toBe(false);
      expect(await store.projectionState()).toEqual({ throughMs: liveAtMs + 1000, queued: 0, oldestQueuedMs: null });
      expect((await store.applyProjection(5, liveAtMs + 1000)).applied).toBe(0);
      for (const contract of contracts) {
        for (const pointType of POINT_TYPES) {
          for (const window of WINDOWS) {
            await expectBoard(store, run.model, { contract, pointType, window }, 3);
            for (const address of recipients) await expectStanding(store, run.model, { contract, pointType, window }, address);
          }
        }
      }
      // The old batches were written without their accounts: only the projection's invariant is asked.
      expect((await store.verify()).filter((v) => v.invariant === 5)).toEqual([]);
    });

    it("beside a finalizer draining a backlog, the job steps aside for the grace, then takes a step and waits out its share of the time, then catches up once the drain ends (all at once where its passes run aside)", async () => {
      const store = (await fixture.freshStore())!;
      const run = new Run(store, generator(seed));
      const [contract] = [randomAddress()];
      const recipients = Array.from({ length: 5 }, randomAddress);
      await run.fund([contract!]);
      // Six batches finalized at six different times: steps of one batch each.
      for (let i = 0; i < 6; i++) await run.submit(contract!, "PHASE2_POINTS", run.randomTransfers(recipients, false), T0 + i * 1000, 1);
      for (let i = 0; i < 6; i++) expect(await run.finalize(T0 + i * 1000 + 1000, 1)).toBe(1);
      const clock = new ManualClock(T0 + 10_000);
      let draining = true;
      const job = new ProjectionJob(store, clock, { maxStepSize: 1, finalizerDraining: () => draining }, null, pino({ enabled: false }));
      const queued = async () => (await store.projectionState()).queued;
      expect(await queued()).toBe(6);
      if (store.projectionAside) {
        // Its passes run on another thread (SQLite's worker): they take none of the finalizer's time, so the job does not step aside.
        await job.runOnce();
        expect(await queued(), "all of it beside the drain").toBe(0);
        await expectBoard(store, run.model, { contract: contract!, pointType: "PHASE2_POINTS", window: ALL_TIME }, 3);
        return;
      }
      await job.runOnce();
      expect(await queued(), "no step in the drain's first seconds").toBe(6);
      clock.advance(PROJECTION_BACKLOG_GRACE_MS - 1);
      await job.runOnce();
      expect(await queued(), "none until the grace is over").toBe(6);
      clock.advance(1);
      await job.runOnce();
      expect(await queued(), "one step beside the drain").toBe(5);
      await job.runOnce();
      expect(await queued(), "then it waits: its share of the time is spent").toBe(5);
      clock.advance(60_000);
      await job.runOnce();
      expect(await queued(), "one more step once the wait is over, not more").toBe(4);
      draining = false;
      await job.runOnce();
      expect(await queued(), "the drain over, it catches up").toBe(0);
      await expectBoard(store, run.model, { contract: contract!, pointType: "PHASE2_POINTS", window: ALL_TIME }, 3);
    });
  });
}

/** A row of the compact history tables that compactHistorySuite changes under the store, by one unit or time step. */
export type HistoryTamper = "entry" | "band" | "dayAmount" | "dayLast";

export interface CompactHistoryFixture {
  /** Why the suite is skipped. */
  skipMessage?: string;
  /** The migration that brought boards, board_entries, board_bands and received_daily (SQLite 15, PostgreSQL 13). */
  version: number;
  /**
   * A store over a database at the schema just before `version`, its own history job done
   * (history_backfill empty), holding `batches` and one board entry of the old tables; not yet
   * migrated. `oldTables` lists the old history tables still in the database.
   */
  oldDatabase(
    batches: readonly OldBatch[],
    entry: { contract: AddressKey; address: AddressKey; units: bigint },
  ): Promise<{ store: LedgerStore; oldTables(): Promise<string[]> }>;
  /**
   * A migrated store; `dayTimes` reads an address's one received_daily row as [day, first, last]
   * (ms), and `tamper` adds `delta` to one of its rows (a band: the band numbered `band`).
   */
  freshDatabase(): Promise<{
    store: LedgerStore;
    dayTimes(address: AddressKey): Promise<[number, number, number]>;
    tamper(kind: HistoryTamper, address: AddressKey, band: number, delta: 1 | -1): Promise<void>;
  }>;
}

/** The migration to compact boards and daily receipts, and verify's invariant 5 over those tables. */
export function compactHistorySuite(name: string, fixture: CompactHistoryFixture): void {
  describe.skipIf(fixture.skipMessage !== undefined)(`${name}${fixture.skipMessage ? ` (${fixture.skipMessage})` : ""}`, () => {
    it(`queues every FINALIZED batch for the projection when migrating past version ${fixture.version}, which rebuilds boards and receipts from them`, async () => {
      const contract = randomAddress();
      const recipients = [randomAddress(), randomAddress()].sort();
      const old = (i: number, status: BatchStatus): OldBatch => ({
        contract,
        batchId: `old-${i}`,
        pointType: "PHASE2_POINTS",
        status,
        transfers: recipients.map((toAddress) => ({ toAddress, amount: 2n * UNITS_PER_POINT })),
        createdAtMs: T0 + i * HOUR_MS,
        finalizeAtMs: T0 + i * HOUR_MS + 1000,
        finalizedAtMs: status === "FINALIZED" ? T0 + i * HOUR_MS + 1000 : null,
      });
      const { store, oldTables } = await fixture.oldDatabase([old(0, "FINALIZED"), old(1, "CANCELLED"), old(2, "FINALIZED")], {
        contract,
        address: recipients[0]!,
        units: 4n * UNITS_PER_POINT,
      });
      await store.migrate();
      expect(await oldTables()).toEqual([]);
      expect(await store.projectionState()).toMatchObject({ throughMs: 0, queued: 2 });
      const board = { contract, pointType: "PHASE2_POINTS" as const, window: ALL_TIME, limit: 10, after: null };
      expect(await store.readBoard(board)).toEqual({ throughMs: 0, participants: 0, rows: [], more: false });
      expect((await store.applyProjection(10, T0 + DAY_MS)).applied).toBe(2);
      expect(await store.readBoard(board)).toEqual({
        throughMs: T0 + DAY_MS,
        participants: 2,
        rows: recipients.map((address) => ({ address, units: 4n * UNITS_PER_POINT })),
        more: false,
      });
      // One day's row for each recipient, received at +1 s and at +2 h 1 s: between them, the first batch only.
      for (const [asOfMs, received] of [
        [T0 + 999, 0n],
        [T0 + 1000, 2n],
        [T0 + 7_201_000 - 1, 2n],
        [T0 + 7_201_000, 4n],
      ] as const) {
        const balances = await store.getBalancesAsOf(recipients[1]!, ["PHASE2_POINTS"], asOfMs);
        expect([asOfMs - T0, balances.PHASE2_POINTS.receivedCumulative]).toEqual([asOfMs - T0, received * UNITS_PER_POINT]);
      }
    });

    it("verify (invariant 5) reports a board entry, a band, a day's received amount or its first and last times that the finalized batches contradict", async () => {
      const { store, dayTimes, tamper } = await fixture.freshDatabase();
      const [contract, first, second] = [randomAddress(), randomAddress(), randomAddress()];
      await store.credit({
        address: contract,
        creditId: "fund",
        pointType: "PHASE2_POINTS",
        amount: 100n * UNITS_PER_POINT,
        createdAtMs: T0,
      });
      // Two batches finalized an hour apart on one UTC day: `first` receives in both (one received_daily row, first < last).
      for (const [i, recipients] of [[first, second], [first]].entries()) {
        const createdAtMs = T0 + i * HOUR_MS;
        const transfers = recipients.map((toAddress) => ({ toAddress, amount: 3n * UNITS_PER_POINT }));
        const total = transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
        const batch = { contract, batchId: `b${i}`, pointType: "PHASE2_POINTS", transfers, total, secondsToFinalize: 1, createdAtMs };
        expect((await store.submitBatch(batch)).kind).toBe("accepted");
        expect(await store.finalizeDue(createdAtMs + 1000, 10)).toHaveLength(1);
      }
      await drainProjection(store, T0 + 2 * HOUR_MS);
      expect(await store.verify()).toEqual([]);
      const [firstAtMs, lastAtMs] = [T0 + 1000, T0 + HOUR_MS + 1000];
      expect(T0 % DAY_MS).toBe(0);
      expect(await dayTimes(first)).toEqual([T0, firstAtMs, lastAtMs]);
      const six = 6n * UNITS_PER_POINT;
      // Each change is made with delta 1, verified, then undone with delta -1.
      const tampered = async (kind: HistoryTamper): Promise<string[]> => {
        await tamper(kind, first, rankBandOf(six), 1);
        const violations = await store.verify();
        await tamper(kind, first, rankBandOf(six), -1);
        expect(violations.every((violation) => violation.invariant === 5)).toBe(true);
        return violations.map((violation) => violation.message);
      };
      expect(await tampered("entry")).toEqual([
        `${contract} PHASE2_POINTS ${first}: leaderboard entry (units) is ${six + 1n} but the ledger says ${six}`,
      ]);
      expect(await tampered("band")).toEqual([
        `${contract} PHASE2_POINTS band ${rankBandOf(six)}: leaderboard band entries is 2 but the ledger says 1`,
      ]);
      expect(await tampered("dayAmount")).toEqual([
        `${first} PHASE2_POINTS: received history (units) is ${six + 1n} but the ledger says ${six}`,
        `${first} PHASE2_POINTS ${T0} ${contract}: received on a day (units) is ${six + 1n} but the ledger says ${six}`,
      ]);
      expect(await tampered("dayLast")).toEqual([
        `${first} PHASE2_POINTS ${T0} ${contract}: received on a day (first and last times) is ${firstAtMs} ${lastAtMs + 1} but the ledger says ${firstAtMs} ${lastAtMs}`,
      ]);
      expect(await store.verify()).toEqual([]);
    });
  });
}
