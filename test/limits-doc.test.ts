import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../src/domain/errors.js";

/**
 * docs/limits.md names what the code names (issue 20): every backticked UPPER_SNAKE name it cites
 * is a setting read in src/config.ts, an exported constant somewhere in src/, or an error code of
 * the catalogue. A renamed constant fails here until the page follows.
 */

const ROOT = join(import.meta.dirname, "..");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

const doc = readFileSync(join(ROOT, "docs/limits.md"), "utf8");
const config = readFileSync(join(ROOT, "src/config.ts"), "utf8");
const sources = sourceFiles(join(ROOT, "src"))
  .map((file) => readFileSync(file, "utf8"))
  .join("\n");
const cited = [...new Set([...doc.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map((match) => match[1]!))];

/** How the code names `name`, or null when it does not. */
function namedAs(name: string): string | null {
  if (config.includes(`"${name}"`)) return "setting";
  if (new RegExp(`export const ${name}\\b`).test(sources)) return "constant";
  if ((ERROR_CODES as string[]).includes(name)) return "error code";
  return null;
}

/**
 * Where the page says a constant it cites is defined: the limits file, the points' own bounds, and
 * the adapters' db.ts. A cited constant found only elsewhere is one an operator cannot find.
 */
const CONSTANT_HOMES = ["src/domain/limits.ts", "src/domain/points.ts", "src/store/sqlite/db.ts", "src/store/postgres/db.ts"];
const homes = CONSTANT_HOMES.map((file) => readFileSync(join(ROOT, file), "utf8")).join("\n");
/** Cited constants still defined beside the code that uses them: SQLite's finalize budget, in its adapter. */
const NOT_YET_IN_LIMITS = new Set(["FINALIZE_TRANSACTION_BUDGET_MS"]);
const citedConstants = cited.filter((name) => namedAs(name) === "constant" && !NOT_YET_IN_LIMITS.has(name));

describe("docs/limits.md", () => {
  it("cites names, and enough of them to be worth checking", () => {
    expect(cited.length).toBeGreaterThan(30);
  });

  it.each(cited)("names %s as the code does", (name) => {
    expect(namedAs(name), `${name} is cited in docs/limits.md but is no setting, exported constant or error code`).not.toBeNull();
  });

  it.each(citedConstants)("finds %s where the page says constants are named", (name) => {
    expect(new RegExp(`export const ${name}\\b`).test(homes), `${name} is not exported from ${CONSTANT_HOMES.join(", ")}`).toBe(true);
  });
});
