import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { DAY_MS, type DayWindow } from "../src/domain/leaderboard.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

/**
 * A window board's request after a read (src/ledger/leaderboards.ts readThenRequest) behaves on
 * PostgreSQL as on SQLite (test/leaderboards-sqlite.test.ts "Window boards on SQLite"): when the
 * database cannot take it now, the read still answers and the next read of the window asks again.
 * Here the request cannot take its board's row lock (another session holds it) before the
 * statement timeout.
 */
describe.skipIf(!DATABASE_URL_TEST)("Window boards on PostgreSQL", () => {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema(DATABASE_URL_TEST!);
  });
  afterAll(async () => {
    await schema?.drop();
  });

  it("answers a read of an ended window while its request cannot lock the board, and asks for its window board at the next read", async () => {
    const store = schema.openStore();
    await store.migrate();
    // The reads below wait half a second at most for a lock (the setup keeps the default bound).
    const reader = schema.openStore({ statementTimeoutMs: 500 });
    const t0 = Date.UTC(2026, 2, 1);
    const contract = `0x${"ab".repeat(20)}` as AddressKey;
    const recipient = `0x${"cd".repeat(20)}` as AddressKey;
    await store.credit({ address: contract, creditId: "fund", pointType: "PHASE2_POINTS", amount: 10n * UNITS_PER_POINT, createdAtMs: t0 });
    const submitted = await store.submitBatch({
      contract,
      batchId: "b1",
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient, amount: 3n * UNITS_PER_POINT }],
      total: 3n * UNITS_PER_POINT,
      secondsToFinalize: 1,
      createdAtMs: t0 + 1000,
    });
    expect(submitted.kind).toBe("accepted");
    expect(await store.finalizeDue(t0 + 5000, 10)).toHaveLength(1);
    expect((await store.applyProjection(10, t0 + 5000)).applied).toBe(1);
    const window: DayWindow = { fromDay: "2026-03-01", toDay: "2026-03-02", fromMs: t0, toMs: t0 + DAY_MS };
    const query = { contract, pointType: "PHASE2_POINTS", window, limit: 10, after: null, nowMs: t0 + 2 * DAY_MS };
    const expected = { throughMs: t0 + 5000, participants: 1, rows: [{ address: recipient, units: 3n * UNITS_PER_POINT }], more: false };
    const windowBoards = () => schema.query<{ state: string }>("SELECT state FROM window_boards ORDER BY window_id");

    const other = new pg.Client({ connectionString: schema.connectionString });
    await other.connect();
    try {
      // Another session holds the board's row past the statement timeout: the read answers, and asks for nothing.
      await other.query("BEGIN");
      await other.query("SELECT 1 FROM boards FOR UPDATE");
      expect(await reader.readBoard(query)).toEqual(expected);
      expect(await reader.readStanding(contract, "PHASE2_POINTS", window, recipient, query.nowMs)).toEqual({
        throughMs: t0 + 5000,
        units: 3n * UNITS_PER_POINT,
        ahead: 0,
        participants: 1,
      });
      await other.query("ROLLBACK");
    } finally {
      await other.end();
    }
    expect(await windowBoards()).toEqual([]);
    expect(await reader.readBoard(query)).toEqual(expected);
    expect(await windowBoards()).toEqual([{ state: "building" }]);
  }, 30_000);
});
