/**
 * The overview chart's data, without a browser: day totals summed exactly in bigint units from
 * real batches of the real service (in process, SQLite), and the bounded reading that says when
 * it stopped early.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { CHART_DAYS, chartDays, loadDailyPoints } from "../src/console/src/lib/daily.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

const DAY_MS = 86_400_000;
/** Points of the batches submitted today, newest last; the third is cancelled. */
const TODAY = ["0.000000000001", "999999999.999999999999", "5", "0.1", "0.2"];

let dir: string;
let server: RunningServer;
let client: PointsClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-daily-"));
  const adminToken = randomBytes(24).toString("base64url");
  server = await startServer(
    loadConfig({
      DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
      ...NO_LOAD_SHEDDING,
      PORT: "0",
      ADMIN_TOKEN: adminToken,
      MINIMUM_FINALIZE_SECONDS: "1",
      MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.000000000001",
      LOG_LEVEL: "silent",
    }),
  );
  const operatorKey = generatePrivateKey();
  const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);
  const admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  await admin.credit(contract, "seed", "PHASE2_POINTS", "10000000000");
  client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
  for (const [i, points] of TODAY.entries()) {
    await client.submitBatch(`day-${i}`, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: getAddress(`0x${(i + 1).toString(16).padStart(40, "0")}`), points }],
      secondsToFinalize: 3600,
    });
  }
  await client.cancelBatch("day-2");
});

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the overview chart's day totals", () => {
  it("lists the last 30 UTC days, oldest first, ending today", () => {
    const now = Date.parse("2026-03-01T10:00:00.000Z");
    const days = chartDays(now);
    expect(days).toHaveLength(CHART_DAYS);
    expect(days[0]).toBe(new Date(now - 29 * DAY_MS).toISOString().slice(0, 10));
    expect(days.at(-1)).toBe("2026-03-01");
    expect(days).toContain("2026-02-28");
  });

  it("sums today's batches exactly, leaves out the cancelled one and the other point type", async () => {
    const daily = await loadDailyPoints(client, ["PHASE2_POINTS", "PHASE2_GOLD"], Date.now());
    expect(daily.capped).toBe(false);
    expect(daily.batchCount).toBe(TODAY.length);
    const points = daily.byPointType.get("PHASE2_POINTS")!;
    expect(points).toHaveLength(CHART_DAYS);
    // Pending: 0.000000000001 + 999999999.999999999999 + 0.1 + 0.2, exact (0.1 + 0.2 is 0.3, not 0.30000000000000004).
    expect(points.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), finalized: "0", pending: "1000000000.3" });
    expect(points.slice(0, -1).every((d) => d.finalized === "0" && d.pending === "0")).toBe(true);
    expect(daily.byPointType.get("PHASE2_GOLD")!.every((d) => d.pending === "0" && d.finalized === "0")).toBe(true);
  });

  it("stops at its page cap and says from which day the totals are complete", async () => {
    const daily = await loadDailyPoints(client, ["PHASE2_POINTS"], Date.now(), { pageSize: 2, maxPages: 2 });
    expect(daily.capped).toBe(true);
    expect(daily.batchCount).toBe(4);
    // The newest 4 were read (one of them cancelled): 0.2 + 0.1 + 999999999.999999999999.
    expect(daily.byPointType.get("PHASE2_POINTS")!.at(-1)!.pending).toBe("1000000000.299999999999");
    // Today was cut in the middle: no day is complete yet, the first complete one would be tomorrow.
    expect(daily.completeFrom).toBe(new Date(Date.now() + DAY_MS).toISOString().slice(0, 10));
    const exact = await loadDailyPoints(client, ["PHASE2_POINTS"], Date.now(), { pageSize: 5, maxPages: 1 });
    expect(exact.capped).toBe(false);
  });
});
