/**
 * The console's leaderboard windows and As of times, without a browser: the days each window asks
 * the API for (whole UTC days, `to` exclusive) at a moment near midnight, and the custom picks and
 * datetimes refused before any request.
 */
import { describe, expect, it } from "vitest";
import { boardDays, windowText } from "../src/console/src/lib/board-window.js";
import { asOfIso } from "../src/console/src/lib/as-of.js";

const NO_CUSTOM = { from: "", through: "" };
/** 23:59:59.999 UTC on the last day of February of a leap year: "today" is still the 29th. */
const LATE_MS = Date.parse("2028-02-29T23:59:59.999Z");

describe("the leaderboard's windows", () => {
  it("asks nothing for all time, and whole UTC days ending tomorrow for the presets", () => {
    expect(boardDays("all", LATE_MS, NO_CUSTOM)).toEqual({ ok: true, days: {} });
    expect(boardDays("today", LATE_MS, NO_CUSTOM)).toEqual({ ok: true, days: { from: "2028-02-29", to: "2028-03-01" } });
    expect(boardDays("7d", LATE_MS, NO_CUSTOM)).toEqual({ ok: true, days: { from: "2028-02-23", to: "2028-03-01" } });
    expect(boardDays("30d", LATE_MS, NO_CUSTOM)).toEqual({ ok: true, days: { from: "2028-01-31", to: "2028-03-01" } });
    // One millisecond later it is another day.
    expect(boardDays("today", LATE_MS + 1, NO_CUSTOM)).toEqual({ ok: true, days: { from: "2028-03-01", to: "2028-03-02" } });
  });

  it("reads a custom pick's last day as included, and either side may stay open", () => {
    expect(boardDays("custom", LATE_MS, { from: "2026-11-16", through: "2026-11-28" })).toEqual({
      ok: true,
      days: { from: "2026-11-16", to: "2026-11-29" },
    });
    expect(boardDays("custom", LATE_MS, { from: "2026-11-16", through: "2026-11-16" })).toEqual({
      ok: true,
      days: { from: "2026-11-16", to: "2026-11-17" },
    });
    expect(boardDays("custom", LATE_MS, { from: "", through: "2026-12-31" })).toEqual({ ok: true, days: { to: "2027-01-01" } });
    expect(boardDays("custom", LATE_MS, { from: "2026-11-16", through: "" })).toEqual({ ok: true, days: { from: "2026-11-16" } });
    expect(boardDays("custom", LATE_MS, NO_CUSTOM)).toEqual({ ok: true, days: {} });
  });

  it("refuses a first day after the last, and a day that does not exist", () => {
    expect(boardDays("custom", LATE_MS, { from: "2026-11-17", through: "2026-11-16" })).toEqual({
      ok: false,
      message: "The first day is after the last day: no day is in that window.",
    });
    expect(boardDays("custom", LATE_MS, { from: "2026-02-30", through: "" })).toMatchObject({ ok: false });
    expect(boardDays("custom", LATE_MS, { from: "", through: "20261116" })).toMatchObject({ ok: false });
  });

  it("says the window the service echoed in words", () => {
    expect(windowText(null, null)).toBe("all time");
    expect(windowText("2026-11-16", "2026-11-29")).toBe("from 2026-11-16 00:00 UTC to 2026-11-29 00:00 UTC");
    expect(windowText("2026-11-16", null)).toBe("since 2026-11-16 00:00 UTC");
    expect(windowText(null, "2026-11-29")).toBe("before 2026-11-29 00:00 UTC");
  });
});

describe("the recipient lookup's As of", () => {
  const NOW_MS = Date.parse("2026-11-25T18:00:00.000Z");

  it("reads the datetime input as UTC, with or without seconds, in the API's form", () => {
    expect(asOfIso("", NOW_MS)).toBeNull();
    expect(asOfIso("2026-11-22T00:00", NOW_MS)).toBe("2026-11-22T00:00:00.000Z");
    expect(asOfIso("2026-11-25T17:59:59", NOW_MS)).toBe("2026-11-25T17:59:59.000Z");
    expect(asOfIso("2026-11-25T17:59:59.250", NOW_MS)).toBe("2026-11-25T17:59:59.250Z");
    expect(asOfIso("2026-11-25T18:00:00", NOW_MS)).toBe("2026-11-25T18:00:00.000Z");
  });

  it("refuses a time to come and a malformed one", () => {
    expect(asOfIso("2026-11-25T18:00:01", NOW_MS)).toEqual(new Error("As of is in the future: balances are known up to now."));
    expect(asOfIso("yesterday", NOW_MS)).toBeInstanceOf(Error);
    expect(asOfIso("2026-11-25T18:00:00+02:00", NOW_MS)).toBeInstanceOf(Error);
  });
});
