/**
 * The console's pure parts, without a browser: exact amount formatting and summing, and the
 * upload validation that must match what the service and the CLI accept.
 */
import { describe, expect, it } from "vitest";
import type { Parameters } from "../src/client/index.js";
import { differencePoints, displayPoints, displayUnits, sumPoints } from "../src/console/src/lib/amounts.js";
import { newRunId, previewDistribution } from "../src/console/src/lib/upload.js";

const parameters: Parameters = {
  MINIMUM_FINALIZE_SECONDS: 1,
  DEFAULT_FINALIZE_SECONDS: 86400,
  MAX_TRANSFERS_PER_BATCH: 2000,
  MAX_TRANSFER_DECIMALS: 12,
  POINT_TYPES: ["PHASE2_POINTS", "PHASE2_GOLD"],
  MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.01",
  MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: "0.000001",
  BATCH_ID_MAX_LENGTH: 64,
  BEARER_TOKEN_TTL_SECONDS: 3600,
  CHALLENGE_TTL_SECONDS: 300,
};
const CONTRACT = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/** Distinct valid recipients: 0x + 40 lowercase hex (no checksum needed). */
function recipient(i: number): string {
  return `0x${(i + 1).toString(16).padStart(40, "0")}`;
}

function preview(text: string, available = "1000000000", pointType = "PHASE2_POINTS") {
  return previewDistribution({ text, parameters, pointType, contractAddress: CONTRACT, availablePoints: available, runId: "run-1" });
}

describe("amounts", () => {
  it("sums 0.000000000001 three times to exactly 0.000000000003", () => {
    expect(sumPoints(["0.000000000001", "0.000000000001", "0.000000000001"])).toBe("0.000000000003");
    // Where floats go wrong, the units do not.
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(sumPoints(["0.1", "0.2"])).toBe("0.3");
  });

  it("keeps every digit of 10^18-scale totals", () => {
    expect(sumPoints(["999999999999999999.999999999999", "0.000000000001"])).toBe("1000000000000000000");
    expect(sumPoints(["500000000000000000.5", "499999999999999999.499999999999"])).toBe("999999999999999999.999999999999");
    expect(displayPoints("999999999999999999.999999999999")).toBe("999,999,999,999,999,999.999999999999");
  });

  it("groups the whole part only and never rounds the fraction", () => {
    expect(displayPoints("1234567.000000000001")).toBe("1,234,567.000000000001");
    expect(displayPoints("999")).toBe("999");
    expect(displayPoints("1000")).toBe("1,000");
    expect(displayPoints("0.1234")).toBe("0.1234");
    expect(displayUnits(1_500_000_000_000n)).toBe("1.5");
    expect(differencePoints("1", "1.000000000001")).toBe("-0.000000000001");
  });

  it("refuses a malformed amount instead of guessing", () => {
    expect(() => sumPoints(["1e3"])).toThrow(/not a points string/);
    expect(() => sumPoints(["-1"])).toThrow();
  });
});

describe("upload validation", () => {
  it("lists exactly the bad lines of a 5,000-line CSV with their file line numbers and reasons", () => {
    const lines = ["address,points"];
    for (let i = 0; i < 5000; i++) lines.push(`${recipient(i)},1.5`);
    lines[101] = `0x123,1`; // line 102: bad address
    lines[2001] = `${recipient(9001)},1.0000000000001`; // line 2002: 13 decimals
    lines[4500] = `${recipient(9002)},0.001`; // line 4501: under the 0.01 minimum
    const result = preview(lines.join("\n"));
    expect(result.badLines.map((b) => b.line)).toEqual([102, 2002, 4501]);
    expect(result.badLines[0]!.reason).toMatch(/not a valid address/);
    expect(result.badLines[1]!.reason).toMatch(/decimal points string/);
    expect(result.badLines[2]!.reason).toMatch(/below the minimum transfer size 0\.01/);
    expect(result.batches).toEqual([]);
  });

  it("merges repeated recipients, totals exactly and splits into full batches with deterministic ids", () => {
    const lines = [];
    for (let i = 0; i < 4500; i++) lines.push(`${recipient(i)},0.000000000001`);
    lines.push(`${recipient(0).toUpperCase().replace("0X", "0x")},1`); // same as line 1, other spelling
    // Under PHASE2_POINTS' 0.01 minimum every recipient but the first (1.000000000001 merged) is a bad line.
    expect(preview(lines.join("\n")).badLines.length).toBe(4499);
    const ok = previewDistribution({
      text: lines.join("\n"),
      parameters: { ...parameters, MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: "0.000000000001" },
      pointType: "PHASE2_GOLD",
      contractAddress: CONTRACT,
      availablePoints: "2",
      runId: "run-1",
    });
    expect(ok.badLines).toEqual([]);
    expect(ok.recipients).toBe(4500);
    expect(ok.mergedDuplicates).toBe(1);
    expect(ok.totalPoints).toBe("1.0000000045");
    expect(ok.overAvailable).toBe(false);
    expect(ok.batches.map((b) => [b.batchId, b.transfers.length])).toEqual([
      ["run-1-0", 2000],
      ["run-1-1", 2000],
      ["run-1-2", 500],
    ]);
  });

  it("flags a total over the available balance", () => {
    const result = preview(`${recipient(1)},10\n${recipient(2)},10.000000000001`, "20");
    expect(result.badLines).toEqual([]);
    expect(result.totalPoints).toBe("20.000000000001");
    expect(result.overAvailable).toBe(true);
  });

  it("reads JSON lines with the same rules, and refuses numbers for points", () => {
    const text = [
      `{"toAddress":"${recipient(1)}","points":"2"}`,
      `{"toAddress":"${recipient(2)}","points":2}`,
      `{"toAddress":"${CONTRACT}","points":"1"}`,
    ].join("\n");
    const result = preview(text);
    expect(result.format).toBe("jsonl");
    expect(result.badLines.map((b) => [b.line, b.reason.slice(0, 30)])).toEqual([
      [2, "points must be a decimal strin"],
      [3, "toAddress must not be the cont"],
    ]);
  });

  it("makes run ids that are valid batch id prefixes and differ", () => {
    const a = newRunId(new Date("2026-11-21T10:00:00.000Z"));
    expect(a).toMatch(/^console-20261121-100000-[0-9a-f]{8}$/);
    expect(newRunId()).not.toBe(newRunId());
  });
});
