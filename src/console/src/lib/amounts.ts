import { formatPoints, parsePoints } from "../../../domain/points.js";

/**
 * Amounts in the console are the API's decimal strings, summed and compared as the domain's
 * bigint units (src/domain/points.ts): never a JavaScript number, so 0.000000000001 × 3 is
 * exactly 0.000000000003 and 10^18-point totals keep every digit.
 */

/** Units of a decimal points string from the API; throws on a malformed one (a bug, not input). */
export function unitsOf(points: string): bigint {
  const units = parsePoints(points);
  if (units === null) throw new RangeError(`not a points string: "${points}"`);
  return units;
}

/** The exact sum of decimal points strings, as one. */
export function sumPoints(amounts: Iterable<string>): string {
  let total = 0n;
  for (const amount of amounts) total += unitsOf(amount);
  return formatPoints(total);
}

/** `a − b` of two points strings, exact; negative results are shown with a minus sign. */
export function differencePoints(a: string, b: string): string {
  const difference = unitsOf(a) - unitsOf(b);
  return difference < 0n ? `-${formatPoints(-difference)}` : formatPoints(difference);
}

/**
 * A points string for reading: thousands of the whole part grouped with commas, every fractional
 * digit kept ("1234567.000000000001" → "1,234,567.000000000001"). Works on the text, not on a number.
 */
export function displayPoints(points: string): string {
  const negative = points.startsWith("-");
  const text = negative ? points.slice(1) : points;
  const dot = text.indexOf(".");
  const whole = dot === -1 ? text : text.slice(0, dot);
  const fraction = dot === -1 ? "" : text.slice(dot);
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}${grouped}${fraction}`;
}

export function displayUnits(units: bigint): string {
  return displayPoints(units < 0n ? `-${formatPoints(-units)}` : formatPoints(units));
}

export { formatPoints };
