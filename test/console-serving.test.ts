/**
 * The console as the service serves it, and the two sign-in paths that need no browser: the
 * EIP-4361 challenge when PUBLIC_URL is set, and the one-time link of `points-ledger console-login`.
 * Needs the build (`npm test` builds first): dist/console and the CLI.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { parseSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsApiError, PointsClient, PublicClient, parseConsoleLogin } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(REPO_ROOT, "dist/src/cli/main.js");
const run = promisify(execFile);

let dir: string;
let server: RunningServer;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");
const PUBLIC_URL = "https://points.example.com";

beforeAll(async () => {
  if (!existsSync(join(REPO_ROOT, "dist/console/index.html"))) throw new Error("dist/console is missing: run `npm run build` first");
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-serving-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: "silent",
    PUBLIC_URL,
  });
  server = await startServer(config);
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function newContract() {
  const operatorKey = generatePrivateKey();
  const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  return { contract, operatorKey };
}

describe("GET /console", () => {
  it("redirects /console to /console/ and serves the page with a strict CSP", async () => {
    const bare = await fetch(`${server.url}/console`, { redirect: "manual" });
    expect(bare.status).toBe(301);
    expect(bare.headers.get("location")).toBe("/console/");
    const page = await fetch(`${server.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(page.headers.get("cache-control")).toBe("no-cache");
  });

  it("loads only its own assets, which are served and cacheable", async () => {
    const html = await (await fetch(`${server.url}/console/`)).text();
    const references = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(references.length).toBeGreaterThanOrEqual(2);
    for (const reference of references) {
      expect(reference).toMatch(/^\/console\/assets\//);
      const asset = await fetch(`${server.url}${reference}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toContain("immutable");
    }
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("answers any other path under /console with the page, and a missing asset with the catalogue's 404", async () => {
    const deep = await fetch(`${server.url}/console/batches/some-batch`);
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<div id="app">');
    const missing = await fetch(`${server.url}/console/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });
});

describe("sign-in with PUBLIC_URL", () => {
  it("issues an EIP-4361 message that viem parses and whose signature still solves", async () => {
    const { contract, operatorKey } = await newContract();
    const operator = privateKeyToAccount(operatorKey);
    const challenge = await new PublicClient({ baseUrl: server.url }).requestChallenge(contract, operator.address);
    const siwe = parseSiweMessage(challenge.message);
    expect(siwe.domain).toBe("points.example.com");
    expect(siwe.address).toBe(operator.address);
    expect(siwe.uri).toBe(PUBLIC_URL);
    expect(siwe.version).toBe("1");
    expect(siwe.statement).toContain(contract);
    expect(siwe.expirationTime!.getTime()).toBeGreaterThan(siwe.issuedAt!.getTime());
    // The ordinary client signs whatever message says: it keeps working.
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    await expect(client.getBalances()).resolves.toHaveProperty("PHASE2_POINTS");
  });
});

describe("points-ledger console-login", () => {
  it("prints a link that signs in once and then no more", async () => {
    const { contract, operatorKey } = await newContract();
    const env = { PATH: process.env.PATH ?? "", OPERATOR_PRIVATE_KEY: operatorKey };
    const { stdout, stderr } = await run(process.execPath, [CLI, "console-login", "--contract", contract, "--url", server.url], { env });
    const url = new URL(stdout.trim());
    expect(`${url.origin}${url.pathname}`).toBe(`${server.url}/console/`);
    expect(stderr).toMatch(/within \d+ s/);
    const login = parseConsoleLogin(url.hash)!;
    expect(login.contractAddress).toBe(contract);
    const service = new PublicClient({ baseUrl: server.url });
    const session = await service.solveChallenge(login.challengeData, login.signature);
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: session });
    await expect(client.getBalances()).resolves.toHaveProperty("PHASE2_POINTS");
    const again = await service.solveChallenge(login.challengeData, login.signature).catch((e: unknown) => e);
    expect(PointsApiError.is(again, "UNAUTHORIZED")).toBe(true);
  });

  it("refuses a damaged link before asking the service", () => {
    expect(parseConsoleLogin("#/overview")).toBeNull();
    expect(() => parseConsoleLogin("#login=abc.0x12&contract=0x1")).toThrow(/damaged/);
  });
});
