/**
 * The documentation is checked against the service (issue 14):
 * - every route of the generated OpenAPI document has a description and examples for its request
 *   body and every answer it lists, and is described in docs/api.md;
 * - every error code of the catalogue appears in docs/api.md;
 * - the `curl` examples of docs/api.md run, in the page's order, against a freshly started server
 *   process and get the status and code the page documents. The commands are read from the
 *   Markdown: a ```sh block followed by a line `→ <status> [CODE]` is an example to run.
 */
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES } from "../src/domain/errors.js";
import { createTestApp, type TestApp } from "./helpers/http.js";
import {
  callOk,
  creditPoints,
  newAdminToken,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  type ServerProcess,
} from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const API_DOC_PATH = join(REPO_ROOT, "docs/api.md");
const apiDoc = readFileSync(API_DOC_PATH, "utf8");

/** One example may take this long; the stream example reads for 2 s. */
const EXAMPLE_TIMEOUT_MS = 10_000;
const HTTP_METHODS = ["get", "put", "post", "patch", "delete"] as const;

// ---------------------------------------------------------------------------------------------
// Reading the page.

interface CurlExample {
  /** 1-based line of the command in docs/api.md, for failure messages. */
  line: number;
  command: string;
  status: number;
  code: string | null;
}

const STATUS_LINE = /^→ (\d{3})(?: ([A-Z_]+))?\s*$/;

/** Every ```sh block whose next non-blank line is `→ <status> [CODE]`, in the page's order. */
function curlExamples(markdown: string): CurlExample[] {
  const lines = markdown.split("\n");
  const examples: CurlExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```sh") continue;
    const end = lines.indexOf("```", i + 1);
    if (end === -1) break;
    let next = end + 1;
    while (next < lines.length && lines[next]!.trim() === "") next++;
    const marker = STATUS_LINE.exec(lines[next] ?? "");
    if (marker) {
      examples.push({ line: i + 2, command: lines.slice(i + 1, end).join("\n"), status: Number(marker[1]), code: marker[2] ?? null });
    }
    i = end;
  }
  return examples;
}

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

const curlAvailable = spawnSync("curl", ["--version"]).status === 0;

interface Answer {
  status: number;
  body: string;
  exitCode: number;
}

/**
 * Runs one example in bash with `curl` wrapped to write the body to a file and print the status,
 * so the command runs as written (its own flags win: curl takes an option's last value).
 */
function runExample(command: string, env: Record<string, string>, bodyFile: string): Promise<Answer> {
  const script = `curl() { command curl --silent --show-error --max-time 8 --output "$DOCS_BODY_FILE" --write-out '%{http_code}' "$@"; }\n${command}`;
  return new Promise((resolvePromise) => {
    execFile(
      "bash",
      ["-c", script],
      { env: { PATH: process.env.PATH ?? "", ...env, DOCS_BODY_FILE: bodyFile }, timeout: EXAMPLE_TIMEOUT_MS },
      (error, stdout) => {
        let body = "";
        try {
          body = readFileSync(bodyFile, "utf8");
        } catch {
          body = "";
        }
        rmSync(bodyFile, { force: true });
        resolvePromise({ status: Number(stdout.trim().slice(-3)), body, exitCode: error ? Number(error.code ?? 1) : 0 });
      },
    );
  });
}

function parse(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Ids and tokens a later example uses, taken from an answer. Sign-in needs the signature too. */
async function capture(body: Record<string, unknown>, env: Record<string, string>, operator: ReturnType<typeof privateKeyToAccount>) {
  if (typeof body.challengeData === "string" && typeof body.message === "string") {
    env.CHALLENGE_DATA = body.challengeData;
    env.SIGNATURE = await operator.signMessage({ message: body.message });
  }
  if (typeof body.bearerToken === "string") env.TOKEN = body.bearerToken;
  if (typeof body.cursor === "string") env.CURSOR = body.cursor;
  const endpoint = body.endpoint as { id?: unknown } | undefined;
  if (typeof endpoint?.id === "string") env.ENDPOINT_ID = endpoint.id;
  if (typeof body.deliveryId === "string") env.DELIVERY_ID = body.deliveryId;
}

describe.skipIf(!curlAvailable)(`the curl examples of docs/api.md${curlAvailable ? "" : " (skipped: curl is not installed)"}`, () => {
  const examples = curlExamples(apiDoc);
  let server: ServerProcess;
  let receiver: Server;
  let dir: string;
  const operator = privateKeyToAccount(generatePrivateKey());
  const adminToken = newAdminToken();
  const env: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "points-ledger-docs-"));
    receiver = createServer((_request, response) => response.writeHead(204).end());
    await new Promise<void>((ready) => receiver.listen(0, "127.0.0.1", ready));
    const port = (receiver.address() as { port: number }).port;
    server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken, WEBHOOK_ALLOW_PRIVATE_URLS: "true" });
    const contract = randomAddress();
    await setOperator(server.url, adminToken, contract, operator.address);
    // Points earned on ETH liquidity, so the balances example shows `byAsset` in use.
    await callOk(server.url, "PUT", `/v1/admin/contracts/${contract}/credits/docs-test-grant`, adminToken, {
      pointType: "PHASE2_POINTS",
      points: "1000",
      asset: "ETH",
      block: 12_345_000,
    });
    await creditPoints(server.url, adminToken, contract, "docs-test-gold", "PHASE2_GOLD", "10");
    Object.assign(env, {
      API: server.url,
      ADMIN_TOKEN: adminToken,
      CONTRACT: contract,
      OPERATOR: operator.address,
      TOKEN: await signIn(server.url, contract, operator),
      WEBHOOK_URL: `http://127.0.0.1:${port}/points-webhook`,
    });
  });
  afterAll(async () => {
    await server?.kill("SIGTERM");
    await new Promise((closed) => receiver?.close(closed));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("finds the examples: every route of sections 1 to 9 and 11 has at least one", () => {
    expect(examples.length).toBeGreaterThan(30);
    for (const code of ["FORBIDDEN", "UNAUTHORIZED", "BATCH_ID_EXISTS", "INSUFFICIENT_BALANCE", "CREDIT_ID_EXISTS"]) {
      expect(examples.some((example) => example.code === code)).toBe(true);
    }
  });

  it("runs each example in order and gets the documented status and code", async () => {
    const failures: string[] = [];
    const dump: string[] = [];
    for (const [index, example] of examples.entries()) {
      const answer = await runExample(example.command, env, join(dir, `answer-${index}`));
      const body = parse(answer.body);
      if (process.env.DOCS_DUMP) dump.push(`### line ${example.line} → ${answer.status}\n${answer.body}`);
      const error = body?.error as { code?: unknown } | undefined;
      const wrongCode = example.code !== null && error?.code !== example.code;
      if (answer.status !== example.status || wrongCode) {
        failures.push(
          `docs/api.md:${example.line}: expected ${example.status} ${example.code ?? ""}, got ${answer.status} ${answer.body.slice(0, 300)}`,
        );
      }
      if (body) await capture(body, env, operator);
    }
    if (process.env.DOCS_DUMP) (await import("node:fs")).writeFileSync(process.env.DOCS_DUMP, dump.join("\n\n"));
    expect(failures).toEqual([]);
  });
});
