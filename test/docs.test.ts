/**
 * The documentation is checked against the service (issues 14 and 18):
 * - every route of the generated OpenAPI document has a description and examples for its request
 *   body and every answer it lists, and is described in docs/api.md;
 * - every error code of the catalogue appears in docs/api.md;
 * - every shell example of README.md and docs/*.md runs as written, as a reader pastes it.
 *
 * How the examples run (test/helpers/doc-runner.ts):
 * - Each page runs on its own, in PAGES order, from a fresh working directory and a fresh
 *   database: a reader starts each page from a fresh `npm start`, so each page sets up what it
 *   uses (key, operator, credits, token) in its own text. All ```sh blocks of a page, verbatim and
 *   in order, make ONE bash session with `set -u`: a variable is there if an earlier block set it,
 *   and a variable no block set stops the session, naming the block. There is no hidden set-up:
 *   the session gets only PATH, HOME (the working directory) and the two settings below.
 * - Which blocks run: ```sh blocks, unless the line before the fence is
 *   `<!-- not run: <why> -->` (installing, the test suite, benchmarks, several processes). Other
 *   languages never run: ```ts (TypeScript fragments), ```text and plain ``` (output, usage
 *   synopses), ```json (answers); except a ```ts block preceded by `<!-- run -->`, a whole
 *   program that runs with node at its place in the session (types stripped by TypeScript's
 *   transpiler; it sees the session's exported variables, e.g. OPERATOR_PRIVATE_KEY). A shell block typed otherwise (bash, shell, console) fails the test, so no
 *   command escapes the run by its fence.
 * - `npm start` (with the block's own variables, e.g. `ADMIN_TOKEN=… npm start`) starts the
 *   built server from dist/ in the background, on the default SQLite database ./data/points.db
 *   of the page's fresh directory (the CLI's database commands use the same one), and returns once /readyz answers: where the reader switches to another shell.
 *   The server listens where a reader's does, 127.0.0.1:8080 (the pages' text stays verbatim);
 *   if something already answers there, the page fails saying so. `npm run [-s] cli -- …` and
 *   `npm run demo` run the built CLI; `npx anvil …` starts the checkout's anvil (a devDependency)
 *   in the background and returns once it answers (docs/onchain.md's local chain); any other npm
 *   or npx command fails (mark such a block not run). The page's directory links the checkout's
 *   `contracts/`, which a reader's shell in the checkout sees.
 * - `curl` keeps each answer's status and body. The line under a block, `→ <status> [CODE]`, is
 *   checked against the block's last answer; every other answer must be 2xx or 3xx. A command that
 *   fails (non-zero exit) fails the page.
 * - The test sets MAX_EVENT_LOOP_DELAY_MS=0 (no load shedding on a shared 2-core machine, as for
 *   every test server) and LOG_LEVEL=warn: settings of the test, not steps of a page.
 * - The pages need bash, curl and jq; without curl or jq this part is skipped with a message.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES } from "../src/domain/errors.js";
import { createTestApp, type TestApp } from "./helpers/http.js";
import { docBlocks, runDoc, runnable } from "./helpers/doc-runner.js";
import { assertBuilt } from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const API_DOC_PATH = join(REPO_ROOT, "docs/api.md");
const apiDoc = readFileSync(API_DOC_PATH, "utf8");

const HTTP_METHODS = ["get", "put", "post", "patch", "delete"] as const;

/** `/v1/contracts/{contractAddress}/batches` for `### PUT /v1/…` headings. */
function documentedRoutes(markdown: string): Set<string> {
  const routes = new Set<string>();
  for (const match of markdown.matchAll(/^### (GET|PUT|POST|PATCH|DELETE) (\/\S+)(?: and (GET) (\/\S+))?/gm)) {
    routes.add(`${match[1]} ${match[2]}`);
    if (match[3]) routes.add(`${match[3]} ${match[4]}`);
  }
  return routes;
}

// ---------------------------------------------------------------------------------------------
// The OpenAPI document.

interface MediaObject {
  example?: unknown;
  examples?: Record<string, unknown>;
}
interface Operation {
  summary?: string;
  description?: string;
  requestBody?: { content: Record<string, MediaObject> };
  responses: Record<string, { description: string; content?: Record<string, MediaObject> }>;
}
type OpenApi = { info: { description: string }; paths: Record<string, Partial<Record<(typeof HTTP_METHODS)[number], Operation>>> };

const hasExample = (media: MediaObject): boolean => media.example !== undefined || Object.keys(media.examples ?? {}).length > 0;

/** What is missing from one operation's documentation; empty when nothing. */
function missingDocs(operation: Operation): string[] {
  const missing: string[] = [];
  if (!operation.summary && !operation.description) missing.push("summary/description");
  for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
    if (!hasExample(media)) missing.push(`request body example (${type})`);
  }
  if (operation.responses["200"] === undefined) missing.push("200 response");
  for (const [status, response] of Object.entries(operation.responses)) {
    if (!response.description || response.description === "Default Response") missing.push(`${status} description`);
    if (!response.content) missing.push(`${status} content`);
    for (const [type, media] of Object.entries(response.content ?? {})) {
      if (!hasExample(media)) missing.push(`${status} example (${type})`);
    }
  }
  return missing;
}

describe("the OpenAPI document and docs/api.md", () => {
  let testApp: TestApp;
  let openapi: OpenApi;
  beforeAll(async () => {
    testApp = await createTestApp();
    const response = await testApp.send({ method: "GET", url: "/openapi.json" });
    expect(response.status).toBe(200);
    openapi = response.json as OpenApi;
  });
  afterAll(async () => testApp?.close());

  const operations = () =>
    Object.entries(openapi.paths).flatMap(([path, methods]) =>
      HTTP_METHODS.filter((method) => methods[method]).map((method) => ({
        route: `${method.toUpperCase()} ${path}`,
        operation: methods[method]!,
      })),
    );

  it("gives every route a description and examples for its request body and every answer it lists", () => {
    expect(operations().length).toBeGreaterThan(20);
    const gaps = operations()
      .map(({ route, operation }) => ({ route, missing: missingDocs(operation) }))
      .filter((gap) => gap.missing.length > 0);
    expect(gaps).toEqual([]);
  });

  it("describes every route of the OpenAPI document in docs/api.md", () => {
    const documented = documentedRoutes(apiDoc);
    expect(
      operations()
        .map(({ route }) => route)
        .filter((route) => !documented.has(route)),
    ).toEqual([]);
  });

  it("links the OpenAPI description to docs/api.md and to no file outside the repository", () => {
    expect(openapi.info.description).toContain("docs/api.md");
    expect(openapi.info.description).not.toMatch(/(^|[^/])API\.md|\.\.\/shared/);
  });

  it("names every error code of the catalogue in docs/api.md", () => {
    expect(ERROR_CODES.length).toBeGreaterThan(10);
    expect(ERROR_CODES.filter((code) => !apiDoc.includes(`\`${code}\``))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Running the examples.

/** The pages in the order a reader meets them: the README, the reference, then the guides. */
const PAGES = [
  "README.md",
  "docs/api.md",
  "docs/migrating.md",
  "docs/operators.md",
  "docs/events.md",
  "docs/api-keys.md",
  "docs/payouts.md",
  "docs/onchain.md",
  "docs/leaderboards.md",
  "docs/transparency.md",
  "docs/limits.md",
  "docs/security.md",
  "docs/scaling.md",
  "docs/operations.md",
  "docs/performance.md",
];
/** A page may take this long; the README waits for a batch to finalize. */
const PAGE_TIMEOUT_MS = 120_000;
const SESSION_ENV = { MAX_EVENT_LOOP_DELAY_MS: "0", LOG_LEVEL: "warn" };

const toolMissing = ["curl", "jq", "bash"].find((tool) => spawnSync(tool, ["--version"]).status !== 0);
const runOptions = { repoRoot: REPO_ROOT, timeoutMs: PAGE_TIMEOUT_MS, env: SESSION_ENV };

async function runPage(name: string, markdown: string) {
  const run = await runDoc(name, markdown, runOptions);
  // DOCS_KEEP=1 keeps the page's directory (script.sh, answers, server.log) to look into a failure.
  if (process.env.DOCS_KEEP) console.log(`${name}: kept ${run.dir}`);
  else rmSync(run.dir, { recursive: true, force: true });
  return run;
}

describe("the pages' blocks", () => {
  it("runs every page of docs/ (a new page must be added to PAGES)", () => {
    const docs = readdirSync(join(REPO_ROOT, "docs")).filter((file) => file.endsWith(".md"));
    expect(docs.map((file) => `docs/${file}`).filter((page) => !PAGES.includes(page))).toEqual([]);
  });

  it("types every shell block sh, and gives each one that does not run its reason", () => {
    const wrong = PAGES.flatMap((page) =>
      docBlocks(readFileSync(join(REPO_ROOT, page), "utf8"))
        .filter((block) => ["bash", "shell", "console", "zsh"].includes(block.lang) || (block.notRun !== null && block.lang !== "sh"))
        .map((block) => `${page}:${block.line} (${block.lang})`),
    );
    expect(wrong).toEqual([]);
  });

  it("documents the answers of docs/api.md: every route of sections 1 to 9 and 11 has an example", () => {
    const examples = docBlocks(apiDoc).filter((block) => runnable(block) && block.expect !== null);
    expect(examples.length).toBeGreaterThan(30);
    for (const code of ["FORBIDDEN", "UNAUTHORIZED", "BATCH_ID_EXISTS", "INSUFFICIENT_BALANCE", "CREDIT_ID_EXISTS"]) {
      expect(examples.some((example) => example.expect?.code === code)).toBe(true);
    }
  });
});

describe.skipIf(toolMissing !== undefined)(
  `the examples of README.md and docs/*.md, run as written${toolMissing ? ` (skipped: ${toolMissing} is not installed; apt-get install -y ${toolMissing})` : ""}`,
  () => {
    beforeAll(() => assertBuilt());

    it("fails a page whose block uses a variable no earlier block set", async () => {
      const page = ["```sh", "API=http://127.0.0.1:1", "```", "", "```sh", 'echo "$API/v1/contracts/$CONTRACT"', "```", ""].join("\n");
      const run = await runPage("synthetic.md", page);
      expect(run.failures.join("\n")).toContain("synthetic.md:6: the session stopped in this block");
      expect(run.transcript).toContain("CONTRACT: unbound variable");
    });

    it("fails a page whose answer is not the documented one, or whose command fails, and skips marked blocks", async () => {
      const page = [
        "<!-- not run: shows a command the test must not run -->",
        "```sh",
        "exit 3",
        "```",
        "```sh",
        "curl -s http://127.0.0.1:9/nothing-listens",
        "```",
        "→ 200",
        "```sh",
        "false",
        "```",
      ].join("\n");
      const run = await runPage("synthetic.md", page);
      expect(run.failures).toHaveLength(3);
      expect(run.failures[0]).toMatch(/^synthetic\.md:6: curl exited 7 \(no answer\): curl -s http:\/\/127\.0\.0\.1:9\/nothing-listens/);
      expect(run.failures[1]).toMatch(/^synthetic\.md:10: exit status 1 from: false/);
      expect(run.failures[2]).toMatch(/^synthetic\.md:6: expected 200 , got 000/);
    });

    for (const page of PAGES) {
      it(`runs ${page} in order from a fresh npm start`, { timeout: PAGE_TIMEOUT_MS + 30_000 }, async () => {
        const run = await runPage(page, readFileSync(join(REPO_ROOT, page), "utf8"));
        if (run.failures.length > 0 && process.env.DOCS_TRANSCRIPT) writeFileSync(process.env.DOCS_TRANSCRIPT, run.transcript);
        expect(run.failures).toEqual([]);
      });
    }
  },
);
