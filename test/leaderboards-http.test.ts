import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import { buildApp } from "../src/http/app.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { createMetrics } from "../src/metrics.js";
import type { LedgerStore } from "../src/store/store.js";
import { Finalizer } from "../src/worker/finalize.js";
import { ProjectionJob } from "../src/worker/projection.js";
import { WindowBoardsJob } from "../src/worker/window-boards.js";
import {
  TEST_ENV,
  addContract,
  expectError,
  expectValidationFailed,
  injectSender,
  randomAddress,
  type OperatedContract,
  type Send,
  type TestResponse,
} from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";

/**
 * Leaderboards and `asOf` balances over HTTP (issue 22; API.md "Leaderboards and history"): the
 * real app and the real Finalizer over SQLite, and over PostgreSQL when DATABASE_URL_TEST is set,
 * on a manual clock, so finalization times, windows of days and `asOf` are exact.
 */

/** 2026-01-01T10:00:00Z: windows below are whole days from here. */
const START_MS = Date.UTC(2026, 0, 1, 10);
const DAY_MS = 86_400_000;
const ENV = { ...TEST_ENV, BEARER_TOKEN_TTL_SECONDS: String(30 * 24 * 3600) };

interface Backend {
  store: LedgerStore;
  databaseUrl: string;
  /** Runs one statement on the database directly. */
  exec(sql: string): Promise<void>;
  remove(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-lb-"));
  const path = join(dir, "ledger.db");
  const store = createSqliteStore({ path, synchronous: "NORMAL" });
  return {
    store,
    databaseUrl: `sqlite:${path}`,
    exec: async (sql) => {
      const db = new Database(path);
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
    remove: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(): Promise<Backend> {
  const schema: TestSchema = await createTestSchema(DATABASE_URL_TEST!);
  return {
    store: schema.openStore(),
    databaseUrl: schema.connectionString,
    exec: async (sql) => void (await schema.query(sql)),
    remove: () => schema.drop(),
  };
}

interface Harness {
  backend: Backend;
  clock: ManualClock;
  adminToken: string;
  send: Send;
  finalizeDue(): Promise<number>;
  /** Another app over the same store, with `env` over the harness's (e.g. PUBLIC_READS). */
  appWith(env: Record<string, string>): Promise<{ send: Send; close(): Promise<void> }>;
  close(): Promise<void>;
}

async function harness(open: () => Promise<Backend>): Promise<Harness> {
  const backend = await open();
  await backend.store.migrate();
  const clock = new ManualClock(START_MS);
  const adminToken = `admin-${randomUUID()}`;
  const build = async (env: Record<string, string>) => {
    const config = loadConfig({ ...ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: backend.databaseUrl, ...env });
    return buildApp({ config, store: backend.store, clock, metrics: createMetrics(), logger: false });
  };
  const app = await build({});
  const finalizer = new Finalizer(backend.store, clock, { intervalMs: 1000, batchesPerPass: 50 }, createMetrics(), app.log);
  const projection = new ProjectionJob(backend.store, clock, {}, null, app.log);
  return {
    backend,
    clock,
    adminToken,
    send: injectSender(app),
    // The finalizer, then the projection's run as of the same clock (as the worker's jobs do, one after the other).
    finalizeDue: async () => {
      const finalized = await finalizer.runUntilIdle();
      await projection.runOnce();
      return finalized;
    },
    appWith: async (env) => {
      const other = await build(env);
      return { send: injectSender(other), close: () => other.close() };
    },
    close: async () => {
      await app.close();
      await backend.remove();
    },
  };
}

type Entry = { rank: number; address: string; points: string };
type BoardBody = {
  success: true;
  pointType: string;
  from: string | null;
  to: string | null;
  participants: number;
  entries: Entry[];
  cursor: string | null;
};

type BalancesBody = { balancesByPointType: { PHASE2_POINTS: { receivedCumulative: string } } };

/** Lowercase: the order of addresses within a rank (API.md: "ordered by address"). */
const byAddress = (a: string, b: string) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1);

const backends: [string, () => Promise<Backend>, boolean][] = [
  ["SQLite", sqliteBackend, false],
  ["PostgreSQL", postgresBackend, !DATABASE_URL_TEST],
];
if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

describe.each(backends)("leaderboards and asOf over HTTP (%s)", (_name, open, skip) => {
  let h: Harness;
  beforeAll(async () => {
    if (!skip) h = await harness(open);
  });
  afterAll(async () => {
    await h?.close();
  });

  const newContract = () => addContract(h, { PHASE2_POINTS: "1000000", PHASE2_GOLD: "1000" });

  /** Submits one batch and, unless `finalize` is false, lets it finalize 1 s later (clock and Finalizer). */
  async function pay(ledger: OperatedContract, transfers: [string, string][], options: { pointType?: string; finalize?: boolean } = {}) {
    const batchId = randomUUID();
    const response = await h.send({
      method: "PUT",
      url: `/v1/contracts/${ledger.contract}/batches/${batchId}`,
      token: ledger.token,
      body: {
        pointType: options.pointType ?? "PHASE2_POINTS",
        transfers: transfers.map(([toAddress, points]) => ({ toAddress, points })),
        secondsToFinalize: 1,
      },
    });
    expect(response.status, response.text).toBe(200);
    if (options.finalize === false) return batchId;
    h.clock.advance(1000);
    expect(await h.finalizeDue()).toBeGreaterThanOrEqual(1);
    return batchId;
  }

  const board = (contract: string, query: string, token: string | null = h.adminToken, send: Send = h.send) =>
    send({ method: "GET", url: `/v1/contracts/${contract}/leaderboard?${query}`, token });
  const standing = (contract: string, address: string, query: string, token: string | null = h.adminToken) =>
    h.send({ method: "GET", url: `/v1/contracts/${contract}/leaderboard/${address}?${query}`, token });
  const okBody = <T>(response: TestResponse): T => {
    expect(response.status, response.text).toBe(200);
    return response.json as T;
  };
  /** The through of an answer read right after the projection ran at the clock's time: that time. */
  const throughNow = () => new Date(h.clock.now()).toISOString();

  it.skipIf(skip)(
    "ranks finalized transfers by points, most first; equal points share a rank (1, 2, 2, 4) ordered by address",
    async () => {
      const ledger = await newContract();
      const [first, tieA, tieB, last, pending] = [randomAddress(), randomAddress(), randomAddress(), randomAddress(), randomAddress()];
      await pay(ledger, [
        [first, "5"],
        [tieA, "3"],
        [tieB, "3"],
        [last, "1.5"],
      ]);
      await pay(ledger, [[last.toLowerCase(), "0.250000000001"]]);
      await pay(ledger, [[first, "0.5"]], { pointType: "PHASE2_GOLD" });
      // Not finalized (nor finalizing): not on the board.
      await pay(ledger, [[pending, "100"]], { finalize: false });
      const [tie1, tie2] = [tieA, tieB].sort(byAddress);
      expect(okBody(await board(ledger.contract, "pointType=PHASE2_POINTS"))).toEqual({
        success: true,
        through: throughNow(),
        pointType: "PHASE2_POINTS",
        from: null,
        to: null,
        participants: 4,
        entries: [
          { rank: 1, address: first, points: "5" },
          { rank: 2, address: tie1, points: "3" },
          { rank: 2, address: tie2, points: "3" },
          { rank: 4, address: last, points: "1.750000000001" },
        ],
        cursor: null,
      });
      // Each point type is its own board.
      expect(okBody<BoardBody>(await board(ledger.contract, "pointType=PHASE2_GOLD")).entries).toEqual([
        { rank: 1, address: first, points: "0.5" },
      ]);
    },
  );

  it.skipIf(skip)(
    'one address\'s standing: rank, points and participants; rank null and points "0" for an address never paid',
    async () => {
      const ledger = await newContract();
      const [a, b, c] = [randomAddress(), randomAddress(), randomAddress()];
      await pay(ledger, [
        [a, "2"],
        [b, "2"],
        [c, "7.25"],
      ]);
      const [tie1] = [a, b].sort(byAddress);
      expect(okBody(await standing(ledger.contract, c, "pointType=PHASE2_POINTS"))).toEqual({
        success: true,
        through: throughNow(),
        address: c,
        rank: 1,
        points: "7.25",
        participants: 3,
      });
      expect(okBody(await standing(ledger.contract, tie1!.toLowerCase(), "pointType=PHASE2_POINTS"))).toEqual({
        success: true,
        through: throughNow(),
        address: tie1,
        rank: 2,
        points: "2",
        participants: 3,
      });
      const stranger = randomAddress();
      expect(okBody(await standing(ledger.contract, stranger, "pointType=PHASE2_POINTS"))).toEqual({
        success: true,
        through: throughNow(),
        address: stranger,
        rank: null,
        points: "0",
        participants: 3,
      });
    },
  );

  it.skipIf(skip)("pages follow the cursor to the end with the ranks of one long read, a tie split across pages included", async () => {
    const ledger = await newContract();
    const amounts = ["9", "8", "7", "7", "7", "3", "1"];
    const recipients = amounts.map(() => randomAddress());
    await pay(
      ledger,
      recipients.map((address, i) => [address, amounts[i]!]),
    );
    const whole = okBody<BoardBody>(await board(ledger.contract, "pointType=PHASE2_POINTS&limit=1000"));
    expect(whole.entries.map((entry) => entry.rank)).toEqual([1, 2, 3, 3, 3, 6, 7]);
    expect(whole.cursor).toBeNull();
    const pages: BoardBody[] = [];
    let cursor: string | null = null;
    do {
      const page: BoardBody = okBody<BoardBody>(
        await board(ledger.contract, `pointType=PHASE2_POINTS&limit=3${cursor === null ? "" : `&cursor=${cursor}`}`),
      );
      pages.push(page);
      cursor = page.cursor;
    } while (cursor !== null && pages.length < 10);
    expect(pages.map((page) => page.entries.map((entry) => entry.rank))).toEqual([[1, 2, 3], [3, 3, 6], [7]]);
    expect(pages.every((page) => page.participants === 7)).toBe(true);
    expect(pages.flatMap((page) => page.entries)).toEqual(whole.entries);
    // The default page is 100 entries.
    expect(okBody<BoardBody>(await board(ledger.contract, "pointType=PHASE2_POINTS")).entries).toHaveLength(7);
  });

  it.skipIf(skip)("from and to count whole UTC days, to exclusive; a window with no transfers is empty", async () => {
    const ledger = await newContract();
    const [early, late, both] = [randomAddress(), randomAddress(), randomAddress()];
    h.clock.advance(DAY_MS); // finalizations below happen on one day, then on the next
    const dayOne = new Date(h.clock.now()).toISOString().slice(0, 10);
    await pay(ledger, [
      [early, "4"],
      [both, "1"],
    ]);
    h.clock.advance(DAY_MS);
    const dayTwo = new Date(h.clock.now()).toISOString().slice(0, 10);
    const dayThree = new Date(h.clock.now() + DAY_MS).toISOString().slice(0, 10);
    await pay(ledger, [
      [late, "2"],
      [both, "5"],
    ]);
    const window = async (query: string) => okBody<BoardBody>(await board(ledger.contract, `pointType=PHASE2_POINTS&${query}`));
    expect(await window(`from=${dayTwo}`)).toMatchObject({
      from: dayTwo,
      to: null,
      participants: 2,
      entries: [
        { rank: 1, address: both, points: "5" },
        { rank: 2, address: late, points: "2" },
      ],
    });
    expect(await window(`to=${dayTwo}`)).toMatchObject({
      from: null,
      to: dayTwo,
      participants: 2,
      entries: [
        { rank: 1, address: early, points: "4" },
        { rank: 2, address: both, points: "1" },
      ],
    });
    expect((await window(`from=${dayOne}&to=${dayThree}`)).entries).toEqual([
      { rank: 1, address: both, points: "6" },
      { rank: 2, address: early, points: "4" },
      { rank: 3, address: late, points: "2" },
    ]);
    // A window's cursor names its board (point type and both days): longer than other listings', still accepted.
    const first = await window(`from=${dayOne}&to=${dayThree}&limit=1`);
    expect(first.cursor!.length).toBeGreaterThan(128);
    const second = await window(`from=${dayOne}&to=${dayThree}&limit=2&cursor=${first.cursor}`);
    expect(second.entries).toEqual([
      { rank: 2, address: early, points: "4" },
      { rank: 3, address: late, points: "2" },
    ]);
    expect(second.cursor).toBeNull();
    expect(await window("from=2030-01-01")).toEqual({
      success: true,
      through: throughNow(),
      pointType: "PHASE2_POINTS",
      from: "2030-01-01",
      to: null,
      participants: 0,
      entries: [],
      cursor: null,
    });
    expect(okBody(await standing(ledger.contract, early, `pointType=PHASE2_POINTS&from=${dayTwo}`))).toEqual({
      success: true,
      through: throughNow(),
      address: early,
      rank: null,
      points: "0",
      participants: 2,
    });
    expect(okBody(await standing(ledger.contract, both, `pointType=PHASE2_POINTS&to=${dayTwo}`))).toMatchObject({ rank: 2, points: "1" });
    // The routes read as of the server's clock, so each window asked for was listed for the window job; once it
    // has built them, the same reads come from the window boards with the same answers.
    const job = new WindowBoardsJob(h.backend.store, {}, pino({ enabled: false }));
    expect((await job.runOnce()).added).toBeGreaterThan(0);
    expect(await h.backend.store.buildWindowBoards(10)).toBe(0);
    expect((await window(`from=${dayOne}&to=${dayThree}&limit=2&cursor=${first.cursor}`)).entries).toEqual(second.entries);
    expect((await window(`to=${dayTwo}`)).entries.map((e) => [e.rank, e.address, e.points])).toEqual([
      [1, early, "4"],
      [2, both, "1"],
    ]);
    expect(okBody(await standing(ledger.contract, both, `pointType=PHASE2_POINTS&to=${dayTwo}`))).toMatchObject({ rank: 2, points: "1" });
  });

  it.skipIf(skip)("every malformed query is 400 VALIDATION_FAILED naming the field", async () => {
    const ledger = await newContract();
    await pay(ledger, [
      [randomAddress(), "2"],
      [randomAddress(), "1"],
    ]);
    const cases: [string, string[]][] = [
      ["", ["pointType"]],
      ["pointType=NOPE", ["pointType"]],
      ["pointType=PHASE2_POINTS&from=2026-02-30", ["from"]],
      ["pointType=PHASE2_POINTS&from=2026-1-01", ["from"]],
      ["pointType=PHASE2_POINTS&to=2026-01-01T00:00:00Z", ["to"]],
      ["pointType=PHASE2_POINTS&from=2026-03-02&to=2026-03-02", ["to"]],
      ["pointType=PHASE2_POINTS&from=2026-03-02&to=2026-03-01", ["to"]],
      ["pointType=PHASE2_POINTS&limit=0", ["limit"]],
      ["pointType=PHASE2_POINTS&limit=1001", ["limit"]],
      ["pointType=PHASE2_POINTS&limit=ten", ["limit"]],
      ["pointType=PHASE2_POINTS&cursor=bm90LWEtY3Vyc29y", ["cursor"]],
      ["pointType=PHASE2_POINTS&cursor=%00", ["cursor"]],
      ["pointType=PHASE2_POINTS&sort=ASC", ["sort"]],
    ];
    for (const [query, paths] of cases) expectValidationFailed(await board(ledger.contract, query), paths);
    // A cursor pages only the board it came from: same point type and window.
    const { cursor } = okBody<BoardBody>(await board(ledger.contract, "pointType=PHASE2_POINTS&limit=1"));
    expect(cursor).not.toBeNull();
    expect(okBody<BoardBody>(await board(ledger.contract, `pointType=PHASE2_POINTS&limit=1&cursor=${cursor}`)).entries[0]?.rank).toBe(2);
    for (const other of ["pointType=PHASE2_GOLD", "pointType=PHASE2_POINTS&from=2026-01-01", "pointType=PHASE2_POINTS&to=2030-01-01"]) {
      expectValidationFailed(await board(ledger.contract, `${other}&cursor=${cursor}`), ["cursor"]);
    }
    const address = randomAddress();
    expectValidationFailed(await standing(ledger.contract, address, ""), ["pointType"]);
    expectValidationFailed(await standing(ledger.contract, address, "pointType=PHASE2_POINTS&to=2026-13-01"), ["to"]);
    expectValidationFailed(await standing(ledger.contract, address, "pointType=PHASE2_POINTS&limit=5"), ["limit"]);
    expectValidationFailed(await standing(ledger.contract, "0x123", "pointType=PHASE2_POINTS"), ["address"]);
  });

  it.skipIf(skip)(
    "read by the operator, an API key with read, the admin token; 401 without a token, 403 for a key without read or another contract",
    async () => {
      const ledger = await newContract();
      const other = await newContract();
      await pay(ledger, [[randomAddress(), "1"]]);
      const url = "pointType=PHASE2_POINTS";
      const createKey = async (scopes: string[]) => {
        const response = await h.send({
          method: "POST",
          url: `/v1/contracts/${ledger.contract}/api-keys`,
          token: ledger.token,
          body: { name: `key ${scopes.join(",")}`, scopes },
        });
        expect(response.status, response.text).toBe(200);
        return (response.json as { secret: string }).secret;
      };
      const reader = await createKey(["read"]);
      const submitter = await createKey(["submit"]);
      for (const token of [ledger.token, reader, h.adminToken]) {
        expect((await board(ledger.contract, url, token)).status).toBe(200);
        expect((await standing(ledger.contract, randomAddress(), url, token)).status).toBe(200);
      }
      expectError(await board(ledger.contract, url, null), 401, "UNAUTHORIZED");
      expectError(await board(ledger.contract, url, "plt_not-a-token"), 401, "UNAUTHORIZED");
      expect(expectError(await board(ledger.contract, url, submitter), 403, "FORBIDDEN").details).toEqual({ requiredScope: "read" });
      expect(expectError(await standing(ledger.contract, randomAddress(), url, submitter), 403, "FORBIDDEN").details).toEqual({
        requiredScope: "read",
      });
      expectError(await board(ledger.contract, url, other.token), 403, "FORBIDDEN");
      expectError(await board(other.contract, url, reader), 403, "FORBIDDEN");
    },
  );

  it.skipIf(skip)("with PUBLIC_READS=true anyone reads leaderboards without a token; a bad token is still 401", async () => {
    const ledger = await newContract();
    const winner = randomAddress();
    await pay(ledger, [[winner, "3"]]);
    const open = await h.appWith({ PUBLIC_READS: "true" });
    try {
      expect(okBody<BoardBody>(await board(ledger.contract, "pointType=PHASE2_POINTS", null, open.send)).entries).toEqual([
        { rank: 1, address: winner, points: "3" },
      ]);
      const response = await open.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/leaderboard/${winner}?pointType=PHASE2_POINTS`,
      });
      expect(okBody(response)).toEqual({ success: true, address: winner, rank: 1, points: "3", participants: 1, through: throughNow() });
      expectError(await board(ledger.contract, "pointType=PHASE2_POINTS", "plt_not-a-token", open.send), 401, "UNAUTHORIZED");
      expect((await board(ledger.contract, "pointType=PHASE2_POINTS", ledger.token, open.send)).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it.skipIf(skip)(
    "asOf answers the balances as they stood then, after later credits, batches, cancels and finalizations; byAsset absent",
    async () => {
      const ledger = await newContract();
      const recipient = randomAddress();
      await pay(ledger, [[recipient, "10"]]);
      await pay(ledger, [[recipient, "2.5"]], { finalize: false });
      h.clock.advance(1);
      const asOf = new Date(h.clock.now()).toISOString();
      const contractThen = await h.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: ledger.token });
      const recipientThen = await h.send({ method: "GET", url: `/v1/addresses/${recipient}/point-balances`, token: h.adminToken });
      h.clock.advance(1000);
      // Later: a credit, a cancelled batch, a finalization of the pending one, another payment.
      const credit = await h.send({
        method: "PUT",
        url: `/v1/admin/contracts/${ledger.contract}/credits/${randomUUID()}`,
        token: h.adminToken,
        body: { pointType: "PHASE2_POINTS", points: "7", asset: "ETH", block: 5 },
      });
      expect(credit.status, credit.text).toBe(200);
      const cancelled = await pay(ledger, [[recipient, "1"]], { finalize: false });
      expect(
        (await h.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/${cancelled}`, token: ledger.token })).status,
      ).toBe(200);
      await pay(ledger, [[recipient, "4"]]);

      const withoutByAsset = (balances: Record<string, Record<string, unknown>>) =>
        Object.fromEntries(Object.entries(balances).map(([type, { byAsset: _byAsset, ...figures }]) => [type, figures]));
      const contractAsOf = okBody<{ balancesByPointType: Record<string, Record<string, unknown>> }>(
        await h.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances?asOf=${asOf}`, token: ledger.token }),
      );
      const then = (contractThen.json as { balancesByPointType: Record<string, Record<string, unknown>> }).balancesByPointType;
      expect(contractAsOf).toEqual({ success: true, balancesByPointType: withoutByAsset(then) });
      expect(contractAsOf.balancesByPointType.PHASE2_POINTS).toEqual({
        available: "999987.5",
        pendingSent: "2.5",
        earnedCumulative: "1000000",
        receivedCumulative: "0",
        finalizedSentCumulative: "10",
      });
      const recipientAsOf = okBody(
        await h.send({ method: "GET", url: `/v1/addresses/${recipient}/point-balances?asOf=${asOf}`, token: h.adminToken }),
      );
      const recipientThenJson = recipientThen.json as { address: string; balancesByPointType: Record<string, Record<string, unknown>> };
      expect(recipientAsOf).toEqual({
        success: true,
        address: recipient,
        balancesByPointType: withoutByAsset(recipientThenJson.balancesByPointType),
      });
      // The same moment written with an offset; and before the first entry everything is "0".
      const offset = new Date(Date.parse(asOf) + 2 * 3600_000).toISOString().replace("Z", "+02:00");
      const viaOffset = await h.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/point-balances?asOf=${encodeURIComponent(offset)}`,
        token: ledger.token,
      });
      expect(okBody(viaOffset)).toEqual(contractAsOf);
      const before = okBody<{ balancesByPointType: Record<string, Record<string, string>> }>(
        await h.send({ method: "GET", url: `/v1/addresses/${recipient}/point-balances?asOf=2020-01-01T00:00:00Z`, token: h.adminToken }),
      );
      expect(Object.values(before.balancesByPointType).flatMap((balance) => Object.values(balance))).toEqual(Array(10).fill("0"));
      // Without asOf byAsset is there as always.
      const now = okBody<{ balancesByPointType: { PHASE2_POINTS: { byAsset: Record<string, unknown> } } }>(
        await h.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: ledger.token }),
      );
      expect(now.balancesByPointType.PHASE2_POINTS.byAsset.ETH).toEqual({ earnedCumulative: "7", earnedCumulativeBlock: 5 });
    },
  );

  it.skipIf(skip)("asOf in the future, without a zone, or not a time is 400 naming asOf", async () => {
    const ledger = await newContract();
    const future = new Date(h.clock.now() + 1000).toISOString();
    const address = randomAddress();
    for (const asOf of [future, "2026-01-01T00:00:00", "2026-01-01", "2026-02-30T00:00:00Z", "2026-01-01T25:00:00Z", "yesterday"]) {
      const query = `asOf=${encodeURIComponent(asOf)}`;
      expectValidationFailed(
        await h.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances?${query}`, token: ledger.token }),
        ["asOf"],
      );
      expectValidationFailed(
        await h.send({ method: "GET", url: `/v1/addresses/${address}/point-balances?${query}`, token: h.adminToken }),
        ["asOf"],
      );
    }
    // Now itself is not in the future.
    const now = new Date(h.clock.now()).toISOString();
    expect(
      (await h.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances?asOf=${now}`, token: ledger.token })).status,
    ).toBe(200);
  });

  it.skipIf(skip)("OpenAPI shows both leaderboard routes with the read scope and asOf on both balance routes", async () => {
    const doc = okBody<{ paths: Record<string, { get?: { security?: unknown; parameters?: { name: string; in: string }[] } }> }>(
      await h.send({ method: "GET", url: "/openapi.json" }),
    );
    for (const path of ["/v1/contracts/{contractAddress}/leaderboard", "/v1/contracts/{contractAddress}/leaderboard/{address}"]) {
      const operation = doc.paths[path]?.get;
      expect(operation?.security, path).toEqual([{ bearer: ["read"] }]);
      expect(operation?.parameters?.filter((p) => p.in === "query").map((p) => p.name)).toEqual(
        expect.arrayContaining(["pointType", "from", "to"]),
      );
    }
    for (const path of ["/v1/contracts/{contractAddress}/point-balances", "/v1/addresses/{address}/point-balances"]) {
      expect(
        doc.paths[path]?.get?.parameters?.map((p) => p.name),
        path,
      ).toContain("asOf");
    }
  });
});

describe.each(backends)("while the projection is behind (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "leaderboards answer exactly as of their through, asOf balances count the batches not applied yet, and a snapshot past through is 503 until it catches up",
    async () => {
      const h = await harness(open);
      try {
        const ledger = await addContract(h, { PHASE2_POINTS: "10" });
        const winner = randomAddress();
        const put = await h.send({
          method: "PUT",
          url: `/v1/contracts/${ledger.contract}/batches/behind-1`,
          token: ledger.token,
          body: { pointType: "PHASE2_POINTS", transfers: [{ toAddress: winner, points: "3" }], secondsToFinalize: 1 },
        });
        expect(put.status, put.text).toBe(200);
        h.clock.advance(1000);
        const finalizedAt = new Date(h.clock.now()).toISOString();
        // Finalized, not projected: the finalizer alone.
        expect(
          await new Finalizer(
            h.backend.store,
            h.clock,
            { intervalMs: 1000, batchesPerPass: 50 },
            null,
            pino({ enabled: false }),
          ).runUntilIdle(),
        ).toBe(1);
        h.clock.advance(120_000);
        const read = async (url: string, token = ledger.token) => {
          const response = await h.send({ method: "GET", url, token });
          expect(response.status, response.text).toBe(200);
          return response.json as { through: string; entries?: Entry[]; rank?: number | null; points?: string };
        };
        const boardUrl = `/v1/contracts/${ledger.contract}/leaderboard?pointType=PHASE2_POINTS`;
        const standingUrl = `/v1/contracts/${ledger.contract}/leaderboard/${winner}?pointType=PHASE2_POINTS`;
        const behind = await read(boardUrl);
        expect(Date.parse(behind.through)).toBeLessThan(Date.parse(finalizedAt));
        expect(behind.entries).toEqual([]);
        expect(await read(standingUrl)).toMatchObject({ through: behind.through, rank: null, points: "0" });
        // asOf is exact at every time: the queued batch counts from its finalizedAt on.
        const asOf = (at: string) =>
          h.send({ method: "GET", url: `/v1/addresses/${winner}/point-balances?asOf=${at}`, token: h.adminToken });
        expect(((await asOf(finalizedAt)).json as BalancesBody).balancesByPointType.PHASE2_POINTS.receivedCumulative).toBe("3");
        const before = new Date(Date.parse(finalizedAt) - 1).toISOString();
        expect(((await asOf(before)).json as BalancesBody).balancesByPointType.PHASE2_POINTS.receivedCumulative).toBe("0");
        // A snapshot as of a time after through would miss the batch's receipt page by page: 503 with Retry-After.
        const snapshotAsOf = new Date(h.clock.now() - 60_000).toISOString();
        const snapshot = () =>
          h.send({
            method: "PUT",
            url: "/v1/admin/snapshots/while-behind",
            token: h.adminToken,
            body: { pointType: "PHASE2_POINTS", asOf: snapshotAsOf },
          });
        const refused = await snapshot();
        expect(expectError(refused, 503, "UNAVAILABLE").message).toMatch(/still to apply/);
        expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
        // Caught up: the board shows it, through past its finalizedAt, and the snapshot is taken.
        await new ProjectionJob(h.backend.store, h.clock, {}, null, pino({ enabled: false })).runOnce();
        const caughtUp = await read(boardUrl);
        expect(Date.parse(caughtUp.through)).toBeGreaterThanOrEqual(Date.parse(finalizedAt));
        expect(caughtUp.entries).toEqual([{ rank: 1, address: winner, points: "3" }]);
        expect(await read(standingUrl)).toMatchObject({ through: caughtUp.through, rank: 1, points: "3" });
        const taken = await snapshot();
        expect(taken.status, taken.text).toBeLessThan(300);
        expect(await h.backend.store.verify()).toEqual([]);
      } finally {
        await h.close();
      }
    },
  );
});
