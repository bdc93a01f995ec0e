import { DAY_MS, dayStartMs } from "../../../domain/leaderboard.js";
import { utcDay } from "./daily.js";

/**
 * The leaderboard screen's windows (API.md "Leaderboards and history"): whole UTC days, `to`
 * exclusive. "Last N days" is today and the N − 1 days before it, so every preset ends tomorrow
 * and today's finalizations count as soon as they happen.
 */
export const WINDOW_CHOICES = [
  { value: "all", text: "All time" },
  { value: "today", text: "Today" },
  { value: "7d", text: "Last 7 days" },
  { value: "30d", text: "Last 30 days" },
  { value: "custom", text: "Custom days" },
] as const;

export type WindowChoice = (typeof WINDOW_CHOICES)[number]["value"];

/** Days of the presets that count back from today. */
const PRESET_DAYS: Record<"today" | "7d" | "30d", number> = { today: 1, "7d": 7, "30d": 30 };

/** What the API is asked: `from` and `to` as `YYYY-MM-DD`, absent for an open side. */
export interface BoardDays {
  from?: string;
  to?: string;
}

/** A custom window as a person picks it: both days included, either may be empty (open). */
export interface CustomDays {
  from: string;
  through: string;
}

export type WindowResult = { ok: true; days: BoardDays } | { ok: false; message: string };

/** The days of `choice` at `nowMs`, or why a custom pick cannot be asked. */
export function boardDays(choice: WindowChoice, nowMs: number, custom: CustomDays): WindowResult {
  if (choice === "all") return { ok: true, days: {} };
  if (choice === "custom") return customDays(custom);
  const todayMs = dayStartMs(utcDay(nowMs))!;
  return { ok: true, days: { from: utcDay(todayMs - (PRESET_DAYS[choice] - 1) * DAY_MS), to: utcDay(todayMs + DAY_MS) } };
}

/** `through` is the last day counted, so the API's exclusive `to` is the day after it. */
function customDays({ from, through }: CustomDays): WindowResult {
  const fromMs = from === "" ? null : dayStartMs(from);
  const throughMs = through === "" ? null : dayStartMs(through);
  if (fromMs === null && from !== "") return { ok: false, message: `First day: "${from}" is not a day (YYYY-MM-DD).` };
  if (throughMs === null && through !== "") return { ok: false, message: `Last day: "${through}" is not a day (YYYY-MM-DD).` };
  if (fromMs !== null && throughMs !== null && fromMs > throughMs)
    return { ok: false, message: "The first day is after the last day: no day is in that window." };
  const days: BoardDays = {};
  if (fromMs !== null) days.from = from;
  if (throughMs !== null) days.to = utcDay(throughMs + DAY_MS);
  return { ok: true, days };
}

/** The window in words, from the days the service echoed: "2026-11-19 00:00 UTC to 2026-11-26 00:00 UTC". */
export function windowText(from: string | null, to: string | null): string {
  if (from === null && to === null) return "all time";
  if (to === null) return `since ${from} 00:00 UTC`;
  if (from === null) return `before ${to} 00:00 UTC`;
  return `from ${from} 00:00 UTC to ${to} 00:00 UTC`;
}
