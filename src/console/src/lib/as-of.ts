/**
 * A datetime-local input's value ("2026-11-29T23:59", seconds and milliseconds optional) read as
 * UTC, as the label says: the API's times are UTC, and an operator reproducing a season's end means
 * the UTC moment, wherever the browser sits. Null when empty; an Error saying why when it cannot be asked.
 */
export function asOfIso(value: string, nowMs: number): string | null | Error {
  if (value === "") return null;
  const iso = `${value.length === 16 ? `${value}:00` : value}Z`;
  const ms = Date.parse(iso);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(iso) || Number.isNaN(ms))
    return new Error(`As of: "${value}" is not a time.`);
  if (ms > nowMs) return new Error("As of is in the future: balances are known up to now.");
  // The API's own form (milliseconds, Z), which the console prints everywhere.
  return new Date(ms).toISOString();
}
