/**
 * What the console needs from points-ledger/client, without a browser: a client that holds a
 * bearer token it did not sign for (and says so on expiry instead of renewing), the live event
 * stream, and a client that a browser bundle can carry (no node: imports anywhere it reaches).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsApiError, PointsClient, type LedgerEvent } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const STREAM_DEADLINE_MS = 10_000;

let dir: string;
let server: RunningServer;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-client-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    LOG_LEVEL: "silent",
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
  await admin.credit(contract, `credit-${contract}`, "PHASE2_POINTS", "1000");
  return { contract, keyClient: new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey }) };
}

describe("a client holding a bearer token", () => {
  it("uses the token it was given and has no operator address", async () => {
    const { contract, keyClient } = await newContract();
    const session = await keyClient.signIn();
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: session });
    expect(client.operatorAddress).toBeNull();
    expect((await client.getBalances()).PHASE2_POINTS!.available).toBe("1000");
    expect(client.signIns).toBe(0);
  });

  it("reports UNAUTHORIZED on a revoked token instead of trying to sign in", async () => {
    const { contract } = await newContract();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const client = new PointsClient({
      baseUrl: server.url,
      contractAddress: contract,
      operator: { bearerToken: `plt_${"A".repeat(43)}`, expiresAt },
    });
    const error = await client.getBalances().catch((e: unknown) => e);
    expect(PointsApiError.is(error, "UNAUTHORIZED")).toBe(true);
    expect(client.signIns).toBe(0);
  });

  it("reports UNAUTHORIZED without a request once the token has expired on the client's clock", async () => {
    const { contract } = await newContract();
    let requests = 0;
    const countingFetch: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    const expired = { bearerToken: `plt_${"B".repeat(43)}`, expiresAt: new Date(Date.now() - 1000).toISOString() };
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: expired, fetch: countingFetch });
    const error = await client.getBalances().catch((e: unknown) => e);
    expect(PointsApiError.is(error, "UNAUTHORIZED")).toBe(true);
    expect((error as Error).message).toMatch(/sign in again/);
    expect(requests).toBe(0);
  });
});

describe("liveEvents", () => {
  it("streams a batch's acceptance and cancellation as they happen", async () => {
    const { keyClient } = await newContract();
    const abort = new AbortController();
    const seen: LedgerEvent[] = [];
    let opened!: () => void;
    const open = new Promise<void>((resolveOpen) => (opened = resolveOpen));
    const reading = (async () => {
      for await (const { event, cursor } of keyClient.liveEvents({
        signal: abort.signal,
        onOpen: opened,
        types: ["batch.accepted", "batch.cancelled"],
      })) {
        expect(cursor).not.toBe("");
        seen.push(event);
        if (seen.length === 2) abort.abort();
      }
    })();
    await open;
    const recipient = getAddress(`0x${randomBytes(20).toString("hex")}`);
    await keyClient.submitBatch("live-1", {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient, points: "1.5" }],
      secondsToFinalize: 3600,
    });
    await keyClient.cancelBatch("live-1");
    await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error("no events in time")), STREAM_DEADLINE_MS))]);
    expect(seen.map((e) => e.type)).toEqual(["batch.accepted", "batch.cancelled"]);
  });

  it("throws the catalogue error when the stream is refused", async () => {
    const { contract } = await newContract();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const client = new PointsClient({
      baseUrl: server.url,
      contractAddress: contract,
      operator: { bearerToken: `plt_${"C".repeat(43)}`, expiresAt },
    });
    const error = await (async () => {
      for await (const _ of client.liveEvents()) return null;
      return null;
    })().catch((e: unknown) => e);
    expect(PointsApiError.is(error, "UNAUTHORIZED")).toBe(true);
  });
});

describe("the client in a browser bundle", () => {
  it("imports nothing from node: in the client or the domain modules it reaches", () => {
    const visited = new Set<string>();
    const offenders: string[] = [];
    const visit = (file: string) => {
      if (visited.has(file)) return;
      visited.add(file);
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/(?:import|export)[^;]*?from\s+"([^"]+)"/g)) {
        const specifier = match[1]!;
        if (specifier.startsWith("node:")) offenders.push(`${file}: ${specifier}`);
        if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
      }
    };
    visit(join(REPO_ROOT, "src/client/index.ts"));
    expect(visited.size).toBeGreaterThan(5);
    expect(offenders).toEqual([]);
  });
});
