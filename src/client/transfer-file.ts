/**
 * Reads a transfers file: CSV `address,points` (optional header line) or JSON lines
 * `{"toAddress": "0x…", "points": "12.5"}`. Blank lines and lines starting with `#` are
 * skipped. Only the shape is checked here; values are checked by mergeTransfers, so one pass
 * over both reports every bad line.
 */

export interface TransferLine {
  /** 1-based line number in the file. */
  line: number;
  toAddress: string;
  points: string;
}

export interface LineError {
  line: number;
  message: string;
}

export interface TransferFile {
  format: "csv" | "jsonl";
  transfers: TransferLine[];
  errors: LineError[];
}

const ADDRESS_HEADERS = ["address", "toaddress", "to_address"];
const POINTS_HEADERS = ["points"];

export function parseTransferFile(text: string): TransferFile {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const firstContent = lines.find((line) => isContent(line));
  const format = firstContent?.trim().startsWith("{") ? "jsonl" : "csv";
  const transfers: TransferLine[] = [];
  const errors: LineError[] = [];
  let sawContent = false;
  lines.forEach((raw, i) => {
    if (!isContent(raw)) return;
    const line = i + 1;
    const isFirst = !sawContent;
    sawContent = true;
    const parsed = format === "jsonl" ? parseJsonLine(raw) : parseCsvLine(raw, isFirst);
    if (parsed === "header") return;
    if (typeof parsed === "string") errors.push({ line, message: parsed });
    else transfers.push({ line, ...parsed });
  });
  if (!sawContent) errors.push({ line: 1, message: "the file has no transfers" });
  return { format, transfers, errors };
}

function isContent(line: string): boolean {
  const trimmed = line.trim();
  return trimmed !== "" && !trimmed.startsWith("#");
}

type Parsed = { toAddress: string; points: string } | "header" | string;

function parseCsvLine(raw: string, isFirst: boolean): Parsed {
  const fields = raw.split(",").map((field) => unquote(field.trim()));
  if (
    isFirst &&
    fields.length === 2 &&
    ADDRESS_HEADERS.includes(fields[0]!.toLowerCase()) &&
    POINTS_HEADERS.includes(fields[1]!.toLowerCase())
  ) {
    return "header";
  }
  if (fields.length !== 2) return `expected 2 fields "address,points", found ${fields.length}`;
  return { toAddress: fields[0]!, points: fields[1]! };
}

function unquote(field: string): string {
  return field.length >= 2 && field.startsWith('"') && field.endsWith('"') ? field.slice(1, -1).trim() : field;
}

function parseJsonLine(raw: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return 'not valid JSON (expected {"toAddress": "0x…", "points": "…"})';
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "expected a JSON object";
  const record = value as Record<string, unknown>;
  const extra = Object.keys(record).filter((key) => key !== "toAddress" && key !== "points");
  if (extra.length > 0) return `unexpected field(s) ${extra.join(", ")}; only toAddress and points are allowed`;
  if (typeof record.toAddress !== "string") return "toAddress must be a string";
  if (typeof record.points !== "string") return 'points must be a decimal string like "12.5" (a JSON number could lose precision)';
  return { toAddress: record.toAddress, points: record.points };
}
