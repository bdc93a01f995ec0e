/**
 * A fresh clone as a new user meets it (issue 30, "Pages that start clean"):
 * - the README opens with the install line and the test line, each its own block;
 * - `npm ci` on this Node.js prints no engine warning, and the README names the Node.js that
 *   package.json's engines ask for;
 * - every page whose examples start the service tells the reader to stop the previous one and
 *   starts from a database of its own, emptied first (so its answers are the same whatever page
 *   was read before), and the page's database commands use that database;
 * - every file the pages' examples write into the checkout is ignored by git.
 * The examples themselves run in test/docs.test.ts.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { docBlocks, runnable, type DocBlock } from "./helpers/doc-runner.js";
import { tempDir } from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const NPM_TIMEOUT_MS = 120_000;
/**
 * Pages whose walkthrough still starts on the default ./data/points.db, each with why. The test
 * expects exactly these, so a page made clean must leave the list.
 */
const NOT_YET_CLEAN: Record<string, string> = {};

const pages = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`),
];
const textOf = (page: string) => readFileSync(join(REPO_ROOT, page), "utf8");
/** A block's commands without comments and blank lines. */
const commandsOf = (block: DocBlock) =>
  block.text
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("#"));

const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe("the README's opening", () => {
  it("gives the install line and the test line each its own block, before the first section", () => {
    const readme = textOf("README.md");
    const opening = readme.slice(0, readme.indexOf("\n## "));
    const blocks = docBlocks(opening);
    expect(blocks.slice(0, 2).map((block) => ({ lang: block.lang, commands: commandsOf(block), marked: block.notRun !== null }))).toEqual([
      { lang: "sh", commands: ["npm install && npm start"], marked: true },
      { lang: "sh", commands: ["npm test"], marked: true },
    ]);
  });
});

describe(`npm ci on Node.js ${process.versions.node}`, () => {
  it("prints no engine warning (EBADENGINE) for any package of the lockfile", () => {
    const dir = tempDir("engines");
    scratch.push(dir);
    copyFileSync(join(REPO_ROOT, "package.json"), join(dir, "package.json"));
    copyFileSync(join(REPO_ROOT, "package-lock.json"), join(dir, "package-lock.json"));
    // A dry run reads the lockfile only: nothing is fetched, so it also fails if the lock is out of date.
    const args = ["ci", "--dry-run", "--ignore-scripts", "--offline", "--no-audit", "--no-fund", "--cache", join(dir, "cache")];
    const result = spawnSync("npm", args, { cwd: dir, encoding: "utf8", timeout: NPM_TIMEOUT_MS });
    const output = `${result.stdout}${result.stderr}`;
    expect(output.split("\n").filter((line) => line.includes("EBADENGINE"))).toEqual([]);
    expect(result.status, output).toBe(0);
  });

  it("runs on a Node.js the README names, the one package.json's engines ask for", () => {
    const engines = (JSON.parse(textOf("package.json")) as { engines: { node: string } }).engines.node;
    const oldest = /^\^(\d+)\.(\d+)\.0 \|\| >=(\d+)\.(\d+)\.0$/.exec(engines);
    expect(oldest, engines).not.toBeNull();
    const [, major, minor, nextMajor, nextMinor] = oldest!.map(Number);
    expect(textOf("README.md")).toContain(`Node.js ${major}.${minor} or later (or ${nextMajor}.${nextMinor} or later)`);
    const [runningMajor, runningMinor] = process.versions.node.split(".").map(Number);
    const supported =
      runningMajor === major
        ? runningMinor! >= minor!
        : runningMajor! > nextMajor! || (runningMajor === nextMajor && runningMinor! >= nextMinor!);
    expect(supported).toBe(true);
  });
});

/** How a page starts the service: its own database and the words before the start block. */
function cleanStartOf(
  page: string,
): { database: string | null; emptied: boolean; saysStop: boolean; databaseCommandsOnIt: boolean } | null {
  const text = textOf(page);
  const blocks = docBlocks(text).filter(runnable);
  const start = blocks.findIndex((block) => /(^|\s)npm start\b/m.test(block.text));
  if (start < 0) return null;
  const database = /^export DATABASE_URL=sqlite:\.\/(data\/[a-z0-9-]+)\/[a-z0-9-]+\.db\b/m.exec(blocks[start]!.text)?.[1] ?? null;
  const emptied = database !== null && new RegExp(`^rm -rf ${database}\\b`, "m").test(blocks[start]!.text);
  // The prose between the block before and the start block.
  const lines = text.split("\n");
  const previousEnd = start === 0 ? 0 : blocks[start - 1]!.line + blocks[start - 1]!.text.split("\n").length;
  const saysStop = /\bstop the service\b/i.test(lines.slice(previousEnd, blocks[start]!.line - 1).join(" "));
  // A block after the start that opens the database (CLI commands other than the HTTP ones) must
  // have DATABASE_URL exported to the page's database in it or in a block after the start.
  let exported = false;
  let databaseCommandsOnIt = true;
  for (const block of blocks.slice(start + 1)) {
    if (database !== null && block.text.includes(`export DATABASE_URL=sqlite:./${database}/`)) exported = true;
    if (/npm run -s cli -- (operator|credit|snapshot|verify|migrate|backup)\b/.test(block.text) && !exported) databaseCommandsOnIt = false;
  }
  return { database, emptied, saysStop, databaseCommandsOnIt };
}

describe("pages that start the service", () => {
  it("each tell the reader to stop the previous service and start on a database of their own, emptied first", () => {
    const starts = pages.map((page) => ({ page, start: cleanStartOf(page) })).filter(({ start }) => start !== null);
    expect(starts.length).toBeGreaterThan(5);
    const unclean = starts.filter(({ start }) => !(start!.database && start!.emptied && start!.saysStop && start!.databaseCommandsOnIt));
    expect(unclean.map(({ page, start }) => ({ page, ...start }))).toEqual(
      Object.keys(NOT_YET_CLEAN).map((page) => ({ page, ...cleanStartOf(page) })),
    );
    const databases = starts.map(({ start }) => start!.database).filter((database) => database !== null);
    expect(new Set(databases).size).toBe(databases.length);
  });
});

describe("files the pages' examples write", () => {
  it("are all ignored by git, and so are the folders they make", () => {
    const written = new Set<string>();
    for (const page of pages) {
      for (const block of docBlocks(textOf(page)).filter(runnable)) {
        // `> file`, `>> file` (not `2>&1`, `=>`, `/dev/null`), `--out file` and curl's `-o file`.
        const targets = /(?<![=\d&>-])>>?\s*([A-Za-z0-9._][\w./-]*)|--out\s+([A-Za-z0-9._][\w./-]*)|\s-o\s+([A-Za-z0-9._][\w./-]*)/g;
        for (const match of block.text.matchAll(targets)) written.add(match[1] ?? match[2] ?? match[3]!);
        // Folders made for what is written into them (`backups/` of docs/operations.md).
        for (const match of block.text.matchAll(/^mkdir -p ([A-Za-z0-9._][\w./-]*)/gm)) written.add(`${match[1]!.replace(/\/$/, "")}/`);
      }
    }
    expect([...written]).toContain("admin-token");
    const tracked = [...written].filter(
      (file) => spawnSync("git", ["check-ignore", "-q", "--no-index", file], { cwd: REPO_ROOT }).status !== 0,
    );
    expect(tracked).toEqual([]);
  });
});
