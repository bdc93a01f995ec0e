import type { Batch, PointsClient } from "../../../client/index.js";
import { formatPoints } from "../../../domain/points.js";
import { unitsOf } from "./amounts.js";

/** Days the overview's chart covers, today included (UTC days, like every time the API gives). */
export const CHART_DAYS = 30;
/** Batches read per page for the chart, the API's largest page. */
const CHART_PAGE_SIZE = 1000;
/** Pages read for the chart at most: a contract with more batches in 30 days gets a chart of the newest ones, and says so. */
export const MAX_CHART_PAGES = 10;
const DAY_MS = 86_400_000;

/** One UTC day's exact totals, as points strings (never floats). */
export interface DayTotal {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  /** Points of the batches submitted that day that are finalized (distributed). */
  finalized: string;
  /** Points of the batches submitted that day that still wait to finalize. */
  pending: string;
}

export interface DailyPoints {
  /** Per point type: CHART_DAYS days, oldest first. */
  byPointType: Map<string, DayTotal[]>;
  /** Batches read. */
  batchCount: number;
  /** The page cap was reached: days before `completeFrom` miss batches. */
  capped: boolean;
  /** The oldest day whose totals are complete (the first day when not capped). */
  completeFrom: string;
}

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The chart's days, oldest first, ending with today's. */
export function chartDays(nowMs: number): string[] {
  const today = Date.parse(`${utcDay(nowMs)}T00:00:00.000Z`);
  return Array.from({ length: CHART_DAYS }, (_, i) => utcDay(today - (CHART_DAYS - 1 - i) * DAY_MS));
}

/** Sums batches into day totals per point type, in bigint units; cancelled batches distribute nothing. */
export function dayTotals(batches: Batch[], days: string[], pointTypes: readonly string[]): Map<string, DayTotal[]> {
  const index = new Map(days.map((day, i) => [day, i]));
  const result = new Map<string, DayTotal[]>();
  for (const pointType of pointTypes) {
    const finalized = days.map(() => 0n);
    const pending = days.map(() => 0n);
    for (const batch of batches) {
      const i = index.get(batch.createdAt.slice(0, 10));
      if (batch.pointType !== pointType || i === undefined || batch.status === "CANCELLED") continue;
      const sums = batch.status === "FINALIZED" ? finalized : pending;
      sums[i] = sums[i]! + unitsOf(batch.points);
    }
    result.set(
      pointType,
      days.map((day, i) => ({ day, finalized: formatPoints(finalized[i]!), pending: formatPoints(pending[i]!) })),
    );
  }
  return result;
}

/** How much the chart reads; the defaults are the console's, smaller ones let a test reach the cap. */
export interface ChartBounds {
  pageSize: number;
  maxPages: number;
}

/** Reads the last CHART_DAYS days of batches, newest first, at most `bounds.maxPages` pages. */
export async function loadDailyPoints(
  client: PointsClient,
  pointTypes: readonly string[],
  nowMs: number,
  bounds: ChartBounds = { pageSize: CHART_PAGE_SIZE, maxPages: MAX_CHART_PAGES },
): Promise<DailyPoints> {
  const days = chartDays(nowMs);
  const batches: Batch[] = [];
  let cursor: string | undefined;
  let capped = false;
  for (let page = 0; ; page++) {
    if (page === bounds.maxPages) {
      capped = true;
      break;
    }
    // createdAfter is exclusive: one millisecond before the first day's start.
    const createdAfter = new Date(Date.parse(`${days[0]}T00:00:00.000Z`) - 1).toISOString();
    const result = await client.listBatches({ createdAfter, sort: "DESC", limit: bounds.pageSize, cursor });
    batches.push(...result.batches);
    if (result.cursor === null) break;
    cursor = result.cursor;
  }
  // Capped: the oldest day read may be partial, so only the days after it are complete.
  const oldestRead = batches.length === 0 ? days[0]! : batches[batches.length - 1]!.createdAt.slice(0, 10);
  const completeFrom = capped ? utcDay(Date.parse(`${oldestRead}T00:00:00.000Z`) + DAY_MS) : days[0]!;
  return { byPointType: dayTotals(batches, days, pointTypes), batchCount: batches.length, capped, completeFrom };
}
