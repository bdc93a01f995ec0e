import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch, PointType } from "../src/domain/batch.js";
import { ALL_TIME, DAY_MS, utcDayOf, type DayWindow } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import type { ProjectionStep } from "../src/store/ports/leaderboards.js";
import type { LedgerStore } from "../src/store/store.js";
import {
  createTestSchema,
  DATABASE_URL_TEST,
  POSTGRES_TEST_CLUSTERS,
  randomAddress,
  SKIP_REASON,
  type TestSchema,
} from "./helpers/postgres.js";

/**
 * The projection over PostgreSQL with several instances (src/ledger/projection.ts,
 * src/store/postgres/leaderboard-projection.ts): each FINALIZED batch applied exactly once while two stores
 * finalize and apply at the same time, and the fence: a finalization in flight while a pass runs
 * never ends up finalized at or before a through that pass answers.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const POINTS: PointType = "PHASE2_POINTS";
const DELAY_SECONDS = 60;
/** A UTC midnight: the finalizations of the first test cross it. */
const MIDNIGHT_MS = utcDayOf(1_700_000_000_000) + DAY_MS;
/** Bounds on the loops below: a broken claim or cut ends the test instead of spinning. */
const MAX_LOOP_STEPS = 2_000;
const MAX_POLLS = 500;

let counter = 0;

function points(whole: number): bigint {
  return BigInt(whole) * UNITS_PER_POINT;
}

function newBatch(contract: AddressKey, transfers: { to: AddressKey; amount: bigint }[], createdAtMs: number): NewBatch {
  const list = transfers.map(({ to, amount }) => ({ toAddress: to, amount }));
  return {
    contract,
    batchId: `p-${++counter}`,
    pointType: POINTS,
    transfers: list,
    total: list.reduce((sum, transfer) => sum + transfer.amount, 0n),
    secondsToFinalize: DELAY_SECONDS,
    createdAtMs,
  };
}

async function credit(store: LedgerStore, address: AddressKey, amount: bigint): Promise<void> {
  expect(await store.credit({ address, creditId: `c-${++counter}`, pointType: POINTS, amount, createdAtMs: 0 })).toEqual({
    kind: "credited",
  });
}

/** Every page of a board, as address → units. */
async function boardOf(store: LedgerStore, contract: AddressKey, window: DayWindow, nowMs?: number): Promise<Map<string, bigint>> {
  const entries = new Map<string, bigint>();
  let after = null;
  for (let step = 0; step < MAX_LOOP_STEPS; step++) {
    const page = await store.readBoard({ contract, pointType: POINTS, window, limit: 100, after, nowMs });
    for (const row of page.rows) entries.set(row.address, row.units);
    if (!page.more) return entries;
    const last = page.rows[page.rows.length - 1]!;
    after = { units: last.units, address: last.address };
  }
  throw new Error("board pages did not end");
}

/** Polls until `check` holds (a lock wait PostgreSQL reports, not a time), boundedly. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let poll = 0; poll < MAX_POLLS; poll++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("condition not reached");
}

/** Whether a backend of this schema waits on a lock while running a statement that contains `text`. */
async function waitsOnLock(schema: TestSchema, text: string): Promise<boolean> {
  const rows = await schema.query<{ waiting: string }>(
    `SELECT count(*)::text AS waiting FROM pg_stat_activity
     WHERE application_name = $1 AND wait_event_type = 'Lock' AND position($2 in query) > 0`,
    [schema.schema, text],
  );
  return rows[0]!.waiting !== "0";
}

/** A connection of its own that holds locks in an open transaction until released. */
async function holdLock(schema: TestSchema, sql: string, values: unknown[]): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: schema.connectionString });
  await client.connect();
  await client.query("BEGIN");
  await client.query(sql, values);
  return {
    release: async () => {
      await client.query("COMMIT");
      await client.end();
    },
  };
}

describe.skipIf(!DATABASE_URL_TEST)(
  `the projection on PostgreSQL, several instances${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    describe.each(POSTGRES_TEST_CLUSTERS)("on %s", (_cluster, clusterUrl) => {
      const schemas: TestSchema[] = [];
      afterAll(async () => {
        await Promise.all(schemas.map((schema) => schema.drop()));
      });

      async function freshStores(): Promise<{ schema: TestSchema; first: LedgerStore; second: LedgerStore }> {
        const schema = await createTestSchema(clusterUrl);
        schemas.push(schema);
        const first = schema.openStore();
        const second = schema.openStore();
        await first.migrate();
        return { schema, first, second };
      }

      let shared: Awaited<ReturnType<typeof freshStores>>;
      beforeAll(async () => {
        shared = await freshStores();
      });

      it("applies every FINALIZED batch exactly once while two stores finalize and apply at once, across a UTC midnight", async () => {
        const { schema, first, second } = shared;
        const senders = Array.from({ length: 4 }, () => randomAddress());
        const recipients = Array.from({ length: 12 }, () => randomAddress());
        for (const sender of senders) await credit(first, sender, points(1_000_000));
        const startMs = MIDNIGHT_MS - 2_000;
        const expected = new Map<string, bigint>();
        const batches = 160;
        for (let i = 0; i < batches; i++) {
          const sender = senders[i % senders.length]!;
          // Recipients repeat across batches, as a pass coalesces them (the finalization refuses a repeat within one).
          const transfers = [0, 1, 2, 3].map((k) => ({
            to: recipients[(i + k * 3) % recipients.length]!,
            amount: points(1) + BigInt(i * 7 + k),
          }));
          for (const { to, amount } of transfers) expected.set(`${sender} ${to}`, (expected.get(`${sender} ${to}`) ?? 0n) + amount);
          // Due from startMs on, a few per virtual millisecond step.
          const batch = newBatch(sender, transfers, startMs - DELAY_SECONDS * 1000 + Math.floor(i / 4) * 100);
          expect((await first.submitBatch(batch)).kind).toBe("accepted");
        }
        // A window board over both days, asked for now, so passes add to it while the window job builds it.
        const dayMs = utcDayOf(startMs);
        const window: DayWindow = {
          fromDay: new Date(dayMs).toISOString().slice(0, 10),
          toDay: new Date(dayMs + DAY_MS).toISOString().slice(0, 10),
          fromMs: dayMs,
          toMs: dayMs + 2 * DAY_MS,
        };
        // The virtual clock every loop reads: finalizations and passes move it forward as they go.
        let clockMs = startMs;
        const now = () => (clockMs += 3);
        let finalizing = 2;
        const failures: unknown[] = [];
        const steps: ProjectionStep[] = [];
        const finalizeLoop = async (store: LedgerStore) => {
          for (let step = 0; step < MAX_LOOP_STEPS; step++) {
            const done = await store.finalizeDue(now(), 3, (failure) => failures.push(failure.error));
            if (done.length === 0 && clockMs > startMs + 4_500) break;
          }
          finalizing--;
        };
        const projectLoop = async (store: LedgerStore) => {
          for (let step = 0; step < MAX_LOOP_STEPS && finalizing > 0; step++) {
            steps.push(await store.applyProjection(8, now()));
            await store.buildWindowBoards(4);
            if (step % 10 === 0) await boardOf(store, senders[0]!, window, clockMs);
          }
        };
        await Promise.all([finalizeLoop(first), finalizeLoop(second), projectLoop(first), projectLoop(second)]);
        // Drain what is left: whatever the loops ended on, the queue empties and through passes every finalization.
        for (let step = 0; step < MAX_LOOP_STEPS && (await first.projectionState()).queued > 0; step++) {
          steps.push(await (step % 2 ? first : second).applyProjection(8, now()));
        }
        // The window board asked for (again, if no loop's read did), then built to the end.
        await boardOf(first, senders[0]!, window, clockMs);
        for (let step = 0; step < MAX_LOOP_STEPS && (await second.buildWindowBoards(4)) > 0; step++);
        const windows = await schema.query<{ state: string; batches: string }>("SELECT state, batches::text FROM window_boards");
        expect(windows).toEqual([{ state: "ready", batches: String(batches / senders.length) }]);

        const [totals] = await schema.query<{ finalized: string; last_ms: string; days: string }>(
          `SELECT count(*)::text AS finalized, max(finalized_at_ms)::text AS last_ms,
                count(DISTINCT finalized_at_ms - finalized_at_ms % ${DAY_MS})::text AS days
         FROM batches WHERE status = 'FINALIZED'`,
        );
        expect(failures).toEqual([]);
        expect(totals).toMatchObject({ finalized: String(batches), days: "2" });
        // Each batch applied once: by the steps' own count, and by the boards' count of what was applied to them.
        expect(steps.reduce((sum, step) => sum + step.applied, 0)).toBe(batches);
        const counted = await schema.query<{ counted: string }>("SELECT sum(finalized_batches)::text AS counted FROM boards");
        expect(counted).toEqual([{ counted: String(batches) }]);
        const state = await first.projectionState();
        expect(state.queued).toBe(0);
        expect(state.throughMs).toBeGreaterThanOrEqual(Number(totals!.last_ms));
        expect(await first.verify()).toEqual([]);
        for (const sender of senders) {
          const want = new Map([...expected].filter(([key]) => key.startsWith(sender)).map(([key, units]) => [key.split(" ")[1]!, units]));
          expect(await boardOf(second, sender, ALL_TIME)).toEqual(want);
          // The window (senders[0]'s read from its ready window board, the others' from their batches) says the same.
          expect(await boardOf(first, sender, window, clockMs)).toEqual(want);
        }
      });

      it("makes a pass wait for a finalization in flight, stamps one that starts during a pass after that pass's through, and builds a window board from through", async () => {
        const { schema, first, second } = await freshStores();
        const [sender, recipient] = [randomAddress(), randomAddress()];
        await credit(first, sender, points(100));
        const createdAtMs = MIDNIGHT_MS + 10 * DAY_MS;
        const dueMs = createdAtMs + DELAY_SECONDS * 1000;
        const early = newBatch(sender, [{ to: recipient, amount: points(1) }], createdAtMs);
        const late = newBatch(sender, [{ to: recipient, amount: points(2) }], createdAtMs + 1);
        const last = newBatch(sender, [{ to: recipient, amount: points(3) }], createdAtMs + 2);
        for (const batch of [early, late, last]) expect((await first.submitBatch(batch)).kind).toBe("accepted");

        // 1. A finalization holds the fence (FOR SHARE) and waits for its sender's account, held here.
        const account = await holdLock(schema, "SELECT 1 FROM accounts WHERE address = $1 FOR UPDATE", [sender]);
        const finalizing = first.finalizeDue(dueMs + 1, 1);
        await until(() => waitsOnLock(schema, "accounts"));
        // A pass at a later time waits for it (queueHead's FOR UPDATE), instead of answering a through it would miss.
        const passing = second.applyProjection(16, dueMs + 5_000);
        await until(() => waitsOnLock(schema, "projection_state WHERE id = 1 FOR UPDATE"));
        await account.release();
        const [finalized] = await finalizing;
        expect(finalized!.batchId).toBe(early.batchId);
        expect(finalized!.finalizedAtMs).toBe(dueMs + 1);
        const pass = await passing;
        expect(pass).toMatchObject({ applied: 1, throughMs: dueMs + 5_000 });
        expect(await first.verify()).toEqual([]);

        // 2. A pass has raised the fence (its first transaction) and waits for a boards row, held here;
        // a finalization that starts meanwhile, at an earlier time of its own, is stamped after the fence.
        const [queued] = await first.finalizeDue(dueMs + 6_000, 1);
        expect(queued!.batchId).toBe(late.batchId);
        const boards = await holdLock(schema, "SELECT 1 FROM boards FOR UPDATE", []);
        const blocked = second.applyProjection(16, dueMs + 20_000);
        await until(() => waitsOnLock(schema, "finalized_batches"));
        const [stamped] = await first.finalizeDue(dueMs + 10, 1);
        expect(stamped!.batchId).toBe(last.batchId);
        // The pass answers for everything finalized by dueMs + 20_000: this batch is stamped after it.
        expect(stamped!.finalizedAtMs).toBe(dueMs + 20_001);
        await boards.release();
        const step = await blocked;
        expect(step).toMatchObject({ applied: 1, throughMs: dueMs + 20_000 });
        const page = await second.readBoard({ contract: sender, pointType: POINTS, window: ALL_TIME, limit: 10, after: null });
        expect(page).toMatchObject({ throughMs: dueMs + 20_000, rows: [{ address: recipient, units: points(3) }] });
        expect(await first.verify()).toEqual([]);
        const left = await schema.query<{ finalized_at_ms: string }>("SELECT finalized_at_ms FROM projection_queue");
        expect(left.map((row) => Number(row.finalized_at_ms))).toEqual([dueMs + 20_001]);
        // The next pass applies it.
        expect(await first.applyProjection(16, dueMs + 30_000)).toMatchObject({ applied: 1, throughMs: dueMs + 30_000 });
        const after = await first.readBoard({ contract: sender, pointType: POINTS, window: ALL_TIME, limit: 10, after: null });
        expect(after).toMatchObject({ throughMs: dueMs + 30_000, rows: [{ address: recipient, units: points(6) }] });
        expect(await first.verify()).toEqual([]);

        // 3. A window board asked for now starts at through: the window job adds the batches applied
        // by then, the passes the ones after (here one pass, while the job has not started).
        const dayMs = utcDayOf(dueMs);
        const day = new Date(dayMs).toISOString().slice(0, 10);
        const window: DayWindow = { fromDay: day, toDay: day, fromMs: dayMs, toMs: dayMs + DAY_MS };
        const read = { contract: sender, pointType: POINTS, window, limit: 10, after: null, nowMs: dueMs + 30_000 };
        expect(await second.readBoard(read)).toMatchObject({ throughMs: dueMs + 30_000, rows: [{ address: recipient, units: points(6) }] });
        const extra = newBatch(sender, [{ to: recipient, amount: points(4) }], createdAtMs + 3);
        expect((await first.submitBatch(extra)).kind).toBe("accepted");
        expect(await first.finalizeDue(dueMs + 31_000, 1)).toMatchObject([{ batchId: extra.batchId, finalizedAtMs: dueMs + 31_000 }]);
        expect(await second.applyProjection(16, dueMs + 40_000)).toMatchObject({ applied: 1, throughMs: dueMs + 40_000 });
        const windowBoards = () => schema.query<{ state: string; batches: string }>("SELECT state, batches::text FROM window_boards");
        expect(await windowBoards()).toEqual([{ state: "building", batches: "1" }]);
        for (let step = 0; step < MAX_LOOP_STEPS && (await first.buildWindowBoards(2)) > 0; step++);
        expect(await windowBoards()).toEqual([{ state: "ready", batches: "4" }]);
        const windowPage = await first.readBoard({ ...read, nowMs: dueMs + 40_000 });
        expect(windowPage).toMatchObject({ throughMs: dueMs + 40_000, participants: 1, rows: [{ address: recipient, units: points(10) }] });
        expect(await first.verify()).toEqual([]);
      });
    });
  },
);
