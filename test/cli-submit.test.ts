import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient, type Batch } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { parseAddress, type AddressKey } from "../src/domain/address.js";
import { formatPoints, parsePoints } from "../src/domain/points.js";
import { startServer, type RunningServer } from "../src/server.js";
import { mulberry32, startFaultProxy, type FaultProxy } from "./helpers/fault-proxy.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

/**
 * The `points-ledger submit` command as an operator runs it: the built CLI in a child process
 * against a real server, killed with SIGKILL halfway and run again.
 */

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), "../dist/src/cli/main.js");
const MAX_TRANSFERS_PER_BATCH = 500;
const DEADLINE_MS = 60_000;

let dir: string;
let server: RunningServer;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
  dir = mkdtempSync(join(tmpdir(), "points-ledger-cli-submit-"));
  server = await startServer(
    loadConfig({
      DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
      ...NO_LOAD_SHEDDING,
      PORT: "0",
      ADMIN_TOKEN: adminToken,
      MINIMUM_FINALIZE_SECONDS: "1",
      MAX_TRANSFERS_PER_BATCH: String(MAX_TRANSFERS_PER_BATCH),
      AUTH_RATE_LIMIT_PER_MINUTE: "100000",
      RATE_LIMIT_PER_MINUTE: "100000000",
      FINALIZER_INTERVAL_MS: "20",
      LOG_LEVEL: "silent",
    }),
  );
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
});

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function randomAddress(): `0x${string}` {
  return getAddress(`0x${randomBytes(20).toString("hex")}`);
}

async function newContract(credit: string) {
  const operatorKey = generatePrivateKey();
  const contract = randomAddress();
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  await admin.credit(contract, `credit-${contract}`, "PHASE2_POINTS", credit);
  return { contract, operatorKey, client: new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey }) };
}

interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function runCli(args: string[], operatorKey: string): CliRun {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? "", OPERATOR_PRIVATE_KEY: operatorKey },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.on("exit", (code, signal) => resolveExit({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

async function pollUntil<T>(what: string, check: () => Promise<T | undefined> | T | undefined, describe = () => ""): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} ${describe()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function allBatches(client: PointsClient, filter: { status?: Batch["status"] } = {}): Promise<Batch[]> {
  const batches: Batch[] = [];
  for await (const batch of client.batches(filter)) batches.push(batch);
  return batches;
}

/** Per-recipient totals over every stored transfer of the contract. */
async function sentPerRecipient(client: PointsClient): Promise<Map<string, bigint>> {
  const sent = new Map<string, bigint>();
  for (const batch of await allBatches(client)) {
    for (const t of (await client.getBatch(batch.id)).transfers) {
      const key = t.toAddress.toLowerCase();
      sent.set(key, (sent.get(key) ?? 0n) + parsePoints(t.points)!);
    }
  }
  return sent;
}

describe("points-ledger submit", () => {
  it("a 10,000-line CSV killed with SIGKILL halfway and rerun delivers every recipient exactly once", async () => {
    const { contract, operatorKey, client } = await newContract("1000000000");
    const random = mulberry32(7);
    const expected = new Map<string, bigint>();
    const lines = ["address,points"];
    for (let i = 0; i < 10_000; i++) {
      const address = randomAddress();
      const units = 10n ** 10n + BigInt(Math.floor(random() * 1e12)) * 997n;
      expected.set(address.toLowerCase(), units);
      lines.push(`${i % 2 === 0 ? address : address.toLowerCase()},${formatPoints(units)}`);
    }
    const totalUnits = [...expected.values()].reduce((a, b) => a + b, 0n);
    const file = join(dir, "airdrop.csv");
    writeFileSync(file, `${lines.join("\r\n")}\r\n`);
    const batchCount = 10_000 / MAX_TRANSFERS_PER_BATCH;
    // A slow link, so the kill lands while batches are still in flight.
    const slow = await startFaultProxy({ target: server.url, latencyMs: 120 });
    proxies.push(slow);
    const args = ["submit", "--contract", contract, "--file", file, "--seconds-to-finalize", "1"];

    const first = runCli([...args, "--url", slow.url], operatorKey);
    await pollUntil("5 batches of progress", () => (/progress: 5\/20 batches/.test(first.stderr()) ? true : undefined), first.stderr);
    first.child.kill("SIGKILL");
    expect((await first.exit).signal).toBe("SIGKILL");
    const storedAfterKill = (await allBatches(client)).length;
    expect(storedAfterKill).toBeGreaterThanOrEqual(5);
    expect(storedAfterKill).toBeLessThan(batchCount);

    const second = runCli([...args, "--url", server.url], operatorKey);
    const secondExit = await second.exit;
    expect(secondExit.code, second.stderr()).toBe(0);
    const resumed = /batches: 20 \((\d+) sent now, (\d+) already stored/.exec(second.stdout());
    expect(resumed, second.stdout()).not.toBeNull();
    expect(Number(resumed![2])).toBeGreaterThanOrEqual(storedAfterKill);
    expect(Number(resumed![1]) + Number(resumed![2])).toBe(batchCount);
    expect(second.stdout()).toContain(`${formatPoints(totalUnits)} PHASE2_POINTS to 10000 recipients`);

    const stored = await allBatches(client);
    expect(stored).toHaveLength(batchCount);
    expect(await sentPerRecipient(client)).toEqual(expected);
    const balance = (await client.getBalances()).PHASE2_POINTS!;
    expect(parsePoints(balance.pendingSent)! + parsePoints(balance.finalizedSentCumulative)!).toBe(totalUnits);

    await pollUntil("every batch to finalize", async () =>
      (await allBatches(client, { status: "FINALIZED" })).length === batchCount ? true : undefined,
    );
    for (const [address, units] of expected) {
      expect((await server.store.getBalances(parseAddress(address) as AddressKey)).PHASE2_POINTS.receivedCumulative).toBe(units);
    }
    expect(await server.store.verify()).toEqual([]);
  });

  it("rejects a file with bad lines, listing every one with its line number, and sends nothing", async () => {
    const { contract, operatorKey, client } = await newContract("1000");
    const good = randomAddress();
    const mixed = randomAddress();
    const badChecksum =
      mixed.replace(/[a-f]/, (c) => c.toUpperCase()) === mixed
        ? mixed.replace(/[A-F]/, (c) => c.toLowerCase())
        : mixed.replace(/[a-f]/, (c) => c.toUpperCase());
    const content = [
      "address,points", // 1: header
      `${good},10`, // 2
      "0x1234,1", // 3: short address
      `${badChecksum},1`, // 4: wrong EIP-55 checksum
      `${randomAddress()},1e3`, // 5: exponent
      `${randomAddress()},-1`, // 6: sign
      `${randomAddress()},0`, // 7: zero
      `${randomAddress()}`, // 8: one field
      `${randomAddress()},1,2`, // 9: three fields
      "0x0000000000000000000000000000000000000000,1", // 10: zero address
      `${contract},1`, // 11: the contract itself
      "", // 12: blank, skipped
      `${randomAddress()},0.001`, // 13: below the minimum
      `${good},5`, // 14: repeat, merged
      `${randomAddress()},1.0000000000001`, // 15: 13 decimals
    ].join("\n");
    const file = join(dir, "bad.csv");
    writeFileSync(file, content);
    const requests: string[] = [];
    const proxy = await startFaultProxy({ target: server.url, decide: (r) => (requests.push(`${r.method} ${r.url}`), "pass") });
    proxies.push(proxy);

    const run = runCli(["submit", "--contract", contract, "--file", file, "--url", proxy.url], operatorKey);
    const exit = await run.exit;
    expect(exit.code).toBe(1);
    const reported = [...run.stderr().matchAll(/^ {2}line (\d+): /gm)].map((m) => Number(m[1]));
    expect(reported, run.stderr()).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15]);
    expect(run.stderr()).toContain("11 bad line(s); nothing was sent");
    expect(requests).toEqual(["GET /v1/parameters"]);
    expect(await allBatches(client)).toEqual([]);
    expect((await client.getBalances()).PHASE2_POINTS).toMatchObject({ available: "1000", pendingSent: "0" });
  });

  it("dry-runs and submits JSON lines, merging repeated recipients; batches and balances commands read the result", async () => {
    const { contract, operatorKey, client } = await newContract("100");
    const [a, b] = [randomAddress(), randomAddress()];
    const file = join(dir, "transfers.jsonl");
    writeFileSync(
      file,
      [
        `{"toAddress":"${a}","points":"1.25"}`,
        `{"toAddress":"${b}","points":"2"}`,
        `{"toAddress":"${a.toLowerCase()}","points":"0.75"}`,
      ].join("\n"),
    );
    const dryRun = runCli(
      ["submit", "--contract", contract, "--file", file, "--run-id", "jsonl-run", "--url", server.url, "--dry-run"],
      "",
    );
    expect((await dryRun.exit).code, dryRun.stderr()).toBe(0);
    expect(dryRun.stdout()).toContain("dry run: 4 points to 2 recipients in 1 batch(es); nothing was sent\n  jsonl-run-0  2 transfers  4");
    expect(await allBatches(client)).toEqual([]);
    const submit = runCli(["submit", "--contract", contract, "--file", file, "--run-id", "jsonl-run", "--url", server.url], operatorKey);
    expect((await submit.exit).code, submit.stderr()).toBe(0);
    expect(submit.stdout()).toContain("4 PHASE2_POINTS to 2 recipients (3 lines, 1 repeated recipients merged)");
    expect((await client.getBatch("jsonl-run-0")).transfers).toEqual([
      { toAddress: a, points: "2" },
      { toAddress: b, points: "2" },
    ]);

    const list = runCli(["batches", "list", "--contract", contract, "--url", server.url], operatorKey);
    expect((await list.exit).code).toBe(0);
    expect(list.stdout()).toMatch(/^jsonl-run-0 {2}PENDING {2}PHASE2_POINTS {2}4 {2}2 transfers/m);
    const show = runCli(["batches", "show", "jsonl-run-0", "--contract", contract, "--url", server.url], operatorKey);
    expect((await show.exit).code).toBe(0);
    expect(JSON.parse(show.stdout())).toMatchObject({ id: "jsonl-run-0", points: "4", transferCount: 2 });
    const cancel = runCli(["batches", "cancel", "jsonl-run-0", "--contract", contract, "--url", server.url], operatorKey);
    expect((await cancel.exit).code).toBe(0);
    expect(cancel.stdout()).toContain("batch jsonl-run-0 is CANCELLED");
    const balances = runCli(["balances", "--contract", contract, "--url", server.url, "--json"], operatorKey);
    expect((await balances.exit).code).toBe(0);
    expect(JSON.parse(balances.stdout()).PHASE2_POINTS).toMatchObject({ available: "100", pendingSent: "0" });
    const missing = runCli(["batches", "show", "nope", "--contract", contract, "--url", server.url], operatorKey);
    expect((await missing.exit).code).toBe(1);
    expect(missing.stderr()).toContain("NOT_FOUND (HTTP 404)");
  });
});
