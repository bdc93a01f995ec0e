/**
 * How the CLI tells a person what went wrong: a refused request as its catalogue code and
 * message with the details spelled out (never raw JSON), and a usage error with the usage of the
 * command it concerns.
 */

/** `details` of a catalogue error in readable form: one `path: message` line per field error, or `key value, …`. */
export function readableDetails(details: unknown): string {
  if (details === undefined || details === null) return "";
  if (Array.isArray(details)) {
    return details
      .map((item: unknown) => {
        const field = item as { path?: unknown; message?: unknown };
        return typeof field.message === "string"
          ? `\n  ${typeof field.path === "string" && field.path !== "" ? `${field.path}: ` : ""}${field.message}`
          : "";
      })
      .join("");
  }
  if (typeof details === "object") {
    const pairs = Object.entries(details).map(([key, value]) => `${key} ${typeof value === "string" ? value : JSON.stringify(value)}`);
    return pairs.length === 0 ? "" : ` (${pairs.join(", ")})`;
  }
  return ` (${String(details)})`;
}

/** One refused request, e.g. `INSUFFICIENT_BALANCE (HTTP 422): the batch total exceeds … (available 10, requested 12)`. */
export function refusal(code: string, status: number, message: string, details: unknown): string {
  return `${code} (HTTP ${status}): ${message}${readableDetails(details)}`;
}

/**
 * The lines of the whole usage text that describe one command: its entries (a line indented by
 * two spaces that starts with the command's name) and their more indented continuation lines.
 */
export function usageOf(usage: string, command: string): string {
  const lines = usage.split("\n");
  const picked: string[] = [];
  let inEntry = false;
  for (const line of lines) {
    const entry = /^ {2}([a-z][a-z-]*)\b/.exec(line);
    if (entry) inEntry = entry[1] === command;
    else if (!/^ {3,}\S/.test(line)) inEntry = false;
    if (inEntry) picked.push(line);
  }
  return picked.length === 0 ? usage : `usage:\n${picked.join("\n")}`;
}
