/**
 * The one writer of CSV cells, used by every export (transfers.csv, balances.csv).
 *
 * Formula injection (OWASP, "CSV Injection"): a spreadsheet runs a cell that starts with `=`, `+`,
 * `-` or `@` (and tab or carriage return, which some strip first) as a formula. Batch ids may
 * start with `-` (ID_PATTERN), so such a cell is neutralised the way OWASP describes: a leading
 * `'` inside a quoted cell, which spreadsheets show as text. Any cell holding a comma, quote or line
 * break is quoted with its quotes doubled (RFC 4180).
 */

/** First characters a spreadsheet may read as the start of a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** Characters that need the cell quoted. */
const NEEDS_QUOTES = /[",\r\n]/;

export function csvCell(value: string): string {
  if (FORMULA_START.test(value)) return `"'${value.replaceAll('"', '""')}"`;
  if (NEEDS_QUOTES.test(value)) return `"${value.replaceAll('"', '""')}"`;
  return value;
}

/** One CSV line, its cells written by csvCell, ended by a newline. */
export function csvRow(cells: readonly string[]): string {
  return `${cells.map(csvCell).join(",")}\n`;
}
