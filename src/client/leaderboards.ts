import { PointsCursorError } from "./errors.js";
import type { Address, Balance, PointType, Points } from "./types.js";

/**
 * Leaderboards and history (docs/api.md "Leaderboards and history"): the shapes the client sends
 * and receives. A board ranks the addresses that a contract's finalized transfers of one point type
 * reached, by the points it sent them; `from` and `to` narrow it to whole UTC days (`to` exclusive).
 */

/** A day of a board's window: `YYYY-MM-DD`, or a Date (its UTC day). */
export type BoardDay = string | Date;

export interface LeaderboardQuery {
  pointType: PointType;
  /** The first day counted (inclusive); absent: from the start. */
  from?: BoardDay;
  /** The day after the last one counted (exclusive); absent: up to now. */
  to?: BoardDay;
  /** Entries per page, 1–1000; the service's default is 100. */
  limit?: number;
}

export interface LeaderboardPageQuery extends LeaderboardQuery {
  /** The `cursor` of the previous page (of the same query). */
  cursor?: string;
}

export interface LeaderboardEntry {
  /** Competition rank: equal points share a rank (1, 2, 2, 4), ordered by address within it. */
  rank: number;
  address: Address;
  points: Points;
}

export interface LeaderboardPage {
  pointType: PointType;
  /** The days asked, or null when absent. */
  from: string | null;
  to: string | null;
  /** How many addresses are ranked on the board (or in the window). */
  participants: number;
  /**
   * ISO time: every batch finalized at or before it is counted, each whole, and none after it
   * (boards are kept after the finalization, within 1 s of it under normal load).
   */
  through: string;
  entries: LeaderboardEntry[];
  /** null: no more pages. */
  cursor: string | null;
}

export type StandingQuery = Omit<LeaderboardQuery, "limit">;

/** One address's place on a board. */
export interface LeaderboardStanding {
  address: Address;
  /** null when the contract sent it nothing (in the window). */
  rank: number | null;
  /** "0" when it has nothing on the board. */
  points: Points;
  participants: number;
  /** As LeaderboardPage's. */
  through: string;
}

/** A balance as it stood at `asOf`: the same figures, without byAsset. */
export type BalanceAsOf = Omit<Balance, "byAsset">;
/** One key per configured point type. */
export type BalancesAsOf = Record<PointType, BalanceAsOf>;

export interface BalancesOptions {
  /** The balances as they stood at this time (not in the future): an ISO 8601 time with a zone, or a Date. */
  asOf?: string | Date;
}

/** The query string of GET …/leaderboard (and, without limit and cursor, of …/leaderboard/{address}). */
export function leaderboardQueryOf(query: LeaderboardPageQuery): Record<string, string | undefined> {
  return {
    pointType: query.pointType,
    from: dayOf(query.from),
    to: dayOf(query.to),
    limit: query.limit === undefined ? undefined : String(query.limit),
    cursor: query.cursor,
  };
}

/** The query string of a balances read: `asOf` when given. */
export function balancesQueryOf(options: BalancesOptions): Record<string, string | undefined> {
  return { asOf: options.asOf instanceof Date ? options.asOf.toISOString() : options.asOf };
}

function dayOf(day: BoardDay | undefined): string | undefined {
  return day instanceof Date ? day.toISOString().slice(0, 10) : day;
}

/** The fields of a board page, whatever else an answer carries. */
export function boardPageOf(body: LeaderboardPage): LeaderboardPage {
  return {
    pointType: body.pointType,
    from: body.from,
    to: body.to,
    participants: body.participants,
    through: body.through,
    entries: body.entries,
    cursor: body.cursor,
  };
}

export function standingOf(body: LeaderboardStanding): LeaderboardStanding {
  return { address: body.address, rank: body.rank, points: body.points, participants: body.participants, through: body.through };
}

/**
 * A board answer's `through` for people: "as of 12:00:03 UTC" on the day of `nowMs` (UTC), else
 * "as of 2026-11-27 23:59:59 UTC". The CLI and the console print it beside every board and rank.
 */
export function throughText(through: string, nowMs: number = Date.now()): string {
  const iso = new Date(through).toISOString();
  const today = new Date(nowMs).toISOString().slice(0, 10);
  const time = iso.slice(11, 19);
  return iso.slice(0, 10) === today ? `as of ${time} UTC` : `as of ${iso.slice(0, 10)} ${time} UTC`;
}

/** Every entry of a board, reading page after page from `readPage` until the cursor is null (at most `maxPages`). */
export async function* boardEntries(
  readPage: (cursor: string | undefined) => Promise<LeaderboardPage>,
  maxPages: number,
): AsyncGenerator<LeaderboardEntry, void, undefined> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const result = await readPage(cursor);
    yield* result.entries;
    if (result.cursor === null) return;
    // A cursor seen before would replay pages forever.
    if (seen.has(result.cursor)) throw new PointsCursorError(result.cursor);
    seen.add(result.cursor);
    cursor = result.cursor;
  }
  throw new Error(`leaderboard did not end after ${maxPages} pages`);
}
