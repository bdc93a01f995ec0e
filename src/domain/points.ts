/**
 * Points are exact fixed-point numbers: a bigint count of units of 10^-12 point.
 * Parsing and formatting never go through JavaScript floats.
 */

/** Fractional digits of one unit: 1 point = 10^12 units. */
export const POINT_DECIMALS = 12;
export const UNITS_PER_POINT = 10n ** BigInt(POINT_DECIMALS);
/** The largest amount anything may hold or move: 10^18 points. */
export const MAX_POINTS_UNITS = 10n ** 18n * UNITS_PER_POINT;
/**
 * The most of one point type all credits together may issue. Points are only moved after that,
 * so every balance, pendingSent and batch total stays within it (only cumulative counters of
 * points passed back and forth can grow past it, and the stores size those for it).
 */
export const MAX_SUPPLY_UNITS = MAX_POINTS_UNITS;
/** Longest decimal string that can denote at most MAX_POINTS_UNITS ("1000000000000000000.000000000000"). */
export const POINTS_STRING_MAX_LENGTH = 19 + 1 + POINT_DECIMALS;

/** digits, optional dot and 1..12 fractional digits, no sign/exponent/spaces/leading zeros. */
export const POINTS_PATTERN = "^(0|[1-9][0-9]{0,18})(\\.[0-9]{1,12})?$";
const POINTS_REGEX = new RegExp(POINTS_PATTERN);

const FRACTION_PADDING = "000000000000";

/**
 * Parses a decimal points string into units, or returns null when the string is not of the
 * accepted form or exceeds MAX_POINTS_UNITS.
 */
export function parsePoints(text: string): bigint | null {
  if (typeof text !== "string" || text.length > POINTS_STRING_MAX_LENGTH || !POINTS_REGEX.test(text)) {
    return null;
  }
  const dot = text.indexOf(".");
  const wholeText = dot === -1 ? text : text.slice(0, dot);
  const fractionText = dot === -1 ? "" : text.slice(dot + 1);
  const units = BigInt(wholeText + fractionText + FRACTION_PADDING.slice(fractionText.length));
  return units > MAX_POINTS_UNITS ? null : units;
}

/** Formats units as a decimal string without trailing fractional zeros ("1.5", "2", "0.000001"). */
export function formatPoints(units: bigint): string {
  if (units < 0n) throw new RangeError(`negative points: ${units}`);
  const whole = units / UNITS_PER_POINT;
  const fraction = units % UNITS_PER_POINT;
  if (fraction === 0n) return whole.toString();
  const fractionText = fraction.toString().padStart(POINT_DECIMALS, "0").replace(/0+$/, "");
  return `${whole}.${fractionText}`;
}

export function sumUnits(amounts: Iterable<bigint>): bigint {
  let total = 0n;
  for (const amount of amounts) total += amount;
  return total;
}
