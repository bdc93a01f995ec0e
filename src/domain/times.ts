/**
 * Times a client sends with a zone (API.md Conventions: ISO 8601, milliseconds optional, `Z` or an
 * offset such as `+02:00`; a time without a zone is refused). Only the `asOf` of balances reads
 * them so far; the older fields (createdBefore, since) keep their `Z`-only form.
 */

/** The form the schema checks; zoneTimeMs then checks that each part names a real moment. */
export const ZONED_TIME_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,3})?(Z|[+-][0-9]{2}:[0-9]{2})$";

const ZONED_TIME =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,3}))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))$/;

/** Offsets in use on Earth run from -12:00 to +14:00. */
const MAX_OFFSET_MINUTES = 14 * 60;

/**
 * Epoch ms of a zoned ISO time, or null when it is not one (no zone, 2026-02-30, 25:00, an offset
 * past ±14:00). Parsed by hand rather than by Date.parse, which accepts other forms and rolls
 * 2026-02-30 over to March.
 */
export function zonedTimeMs(text: string): number | null {
  const match = ZONED_TIME.exec(text);
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const millis = Number((match[7] ?? "0").padEnd(3, "0"));
  const offsetMinutes = match[8] === undefined ? 0 : (match[8] === "-" ? -1 : 1) * (Number(match[9]) * 60 + Number(match[10]));
  if (hour > 23 || minute > 59 || second > 59 || Math.abs(offsetMinutes) > MAX_OFFSET_MINUTES || Number(match[10] ?? 0) > 59) return null;
  const localMs = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  // Date.UTC rolls a day that does not exist over into the next month: it would not come back the same.
  const local = new Date(localMs);
  if (local.getUTCFullYear() !== year || local.getUTCMonth() !== month - 1 || local.getUTCDate() !== day) return null;
  return localMs - offsetMinutes * 60_000;
}
