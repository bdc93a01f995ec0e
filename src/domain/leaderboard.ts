import type { AddressKey } from "./address.js";
import { SEQ_PART, type CursorKind, type CursorPart } from "./cursor.js";
import { BOARD_CURSOR_MAX_LENGTH } from "./limits.js";

/**
 * Leaderboards and history (API.md "Leaderboards and history"): the rules both databases share.
 * A board ranks the addresses that one contract's FINALIZED transfers of one point type reached,
 * by the points it sent them (units of 10^-12 point), most first, address ascending within equal
 * points; ranks are competition ranks (1, 2, 2, 4). A window counts transfers finalized in
 * [fromMs, toMs): whole UTC days, `to` exclusive.
 */

/** Days of a window as asked (`YYYY-MM-DD`), and their bounds in epoch ms; null: unbounded on that side. */
export interface DayWindow {
  fromDay: string | null;
  toDay: string | null;
  fromMs: number | null;
  toMs: number | null;
}

export const ALL_TIME: DayWindow = { fromDay: null, toDay: null, fromMs: null, toMs: null };

export const DAY_MS = 86_400_000;
const DAY_PATTERN = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;

/** Epoch ms of a UTC day `YYYY-MM-DD` that exists (no 2026-02-30), else null. */
export function dayStartMs(day: string): number | null {
  const match = DAY_PATTERN.exec(day);
  if (!match) return null;
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  // Date.UTC rolls 2026-02-30 over to March: a day that does not exist does not come back the same.
  return new Date(ms).toISOString().slice(0, 10) === day ? ms : null;
}

/** Epoch ms of the start of the UTC day holding `ms` (received_daily's day). */
export function utcDayOf(ms: number): number {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}

export function isAllTime(window: DayWindow): boolean {
  return window.fromMs === null && window.toMs === null;
}

/** A window's bounds as window boards keep them and reads bind them: no `from` is Number.MIN_SAFE_INTEGER, no `to` MAX_SAFE_INTEGER. */
export interface WindowBounds {
  fromMs: number;
  toMs: number;
}

export function windowBoundsOf(window: DayWindow): WindowBounds {
  return { fromMs: window.fromMs ?? Number.MIN_SAFE_INTEGER, toMs: window.toMs ?? Number.MAX_SAFE_INTEGER };
}

/** Whether a transfer finalized at `finalizedAtMs` counts in `window`. */
export function inWindow(window: DayWindow, finalizedAtMs: number): boolean {
  return (window.fromMs === null || finalizedAtMs >= window.fromMs) && (window.toMs === null || finalizedAtMs < window.toMs);
}

/**
 * The rank band of an amount (units > 0): its number of decimal digits × 100 plus its first two
 * digits (one digit: that digit). Monotonic: more units never has a lower band. Each board keeps
 * how many entries each band holds (board_bands), kept with the entries by the projection, so
 * an address's rank is the entries of the bands above it plus a count inside its own band: a
 * few hundred band rows and one band's index range, never the whole board. The adapters compute the
 * same in SQL, each in one place (SQLite: its migrations' rankBand, of the q/w/f triple's decimal
 * text, in the bands' triggers; PostgreSQL: leaderboards.ts rankBandSql, of numeric's text), pinned
 * to this function by test/leaderboard-bands.test.ts over random amounts.
 */
export function rankBandOf(units: bigint): number {
  const digits = units.toString();
  return digits.length * 100 + Number(digits.slice(0, 2));
}

/** The smallest amount of the band above `band`'s (exclusive upper bound of `band`): used to count inside one band. */
export function bandUpperUnits(band: number): bigint {
  const digits = Math.floor(band / 100);
  const lead = band % 100;
  if (lead < 10) return BigInt(lead + 1); // one-digit amounts: band 100 + d holds exactly d
  const next = lead + 1; // 99 → 100 rolls over into one more digit, which is the same amount
  return BigInt(next) * 10n ** BigInt(digits - 2);
}

/** One place on a board as the store reads it (ranks are given by rankPage). */
export interface BoardRow {
  address: AddressKey;
  units: bigint;
}

export interface RankedEntry extends BoardRow {
  rank: number;
}

/** Where a page ended: the last entry's amount, address and rank, and how many entries came before it and it. */
export interface BoardPosition {
  units: bigint;
  address: AddressKey;
  rank: number;
  /** 1-based position of that entry on the board. */
  position: number;
}

/**
 * Competition ranks of one page, from where the previous page ended: an entry with the same points
 * as the one before it shares its rank; any other entry's rank is its position. So pages read one
 * after another number the board exactly as one long read would (while no batch finalizes).
 */
export function rankPage(
  rows: readonly BoardRow[],
  previous: BoardPosition | null,
): { entries: RankedEntry[]; last: BoardPosition | null } {
  let last = previous;
  const entries: RankedEntry[] = [];
  for (const row of rows) {
    const position = (last?.position ?? 0) + 1;
    const rank = last !== null && last.units === row.units ? last.rank : position;
    entries.push({ ...row, rank });
    last = { units: row.units, address: row.address, rank, position };
  }
  return { entries, last: rows.length === 0 ? null : last };
}

/** Up to 10^40 units: 10^28 points, far past any cumulative a board can reach (10^18 supply per type). */
const UNITS_PART: CursorPart = { integer: { min: 1n, max: 10n ** 40n } };
const ADDRESS_PART: CursorPart = { text: /^0x[0-9a-f]{40}$/ };
const WINDOW_PART: CursorPart = { text: /^(-|[0-9]{4}-[0-9]{2}-[0-9]{2})$/ };
const POINT_TYPE_PART: CursorPart = { text: /^[A-Z][A-Z0-9_]{0,31}$/ };

/** A board cursor: where the page ended, and the board it belongs to (point type, window), so it cannot page another. */
export interface BoardCursor extends BoardPosition {
  pointType: string;
  fromDay: string | null;
  toDay: string | null;
}

export const BOARD_CURSOR: CursorKind<BoardCursor> = {
  tag: "lb",
  parts: [POINT_TYPE_PART, WINDOW_PART, WINDOW_PART, UNITS_PART, ADDRESS_PART, SEQ_PART, SEQ_PART],
  toParts: (c) => [c.pointType, c.fromDay ?? "-", c.toDay ?? "-", c.units, c.address, c.rank, c.position],
  fromParts: ([pointType, fromDay, toDay, units, address, rank, position]) => ({
    pointType: pointType!,
    fromDay: fromDay === "-" ? null : fromDay!,
    toDay: toDay === "-" ? null : toDay!,
    units: BigInt(units!),
    address: address! as AddressKey,
    rank: Number(rank),
    position: Number(position),
  }),
  legacy: () => null,
  maxLength: BOARD_CURSOR_MAX_LENGTH,
};
