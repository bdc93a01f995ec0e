import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { isAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newAdminToken, randomAddress, runCli, sqliteUrl, startOperatedServer, type ServerProcess } from "./helpers/process.js";

/**
 * A token without writing code (issue 18): `login` and `dev-key` run as a person runs them, the
 * built CLI against a real server process; and the CLI's failures read as messages, not stacks.
 */

const STACK_FRAME = /^\s+at /m;

let dir: string;
let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;
const adminToken = newAdminToken();
const operatorKey = generatePrivateKey();
const contract = randomAddress();

beforeAll(async () => {
  ({ dir, server, stop } = await startOperatedServer("points-ledger-cli-login-", { adminToken, operatorKey, contract, points: "10" }));
});

afterAll(async () => {
  await stop?.();
});

describe("points-ledger login", () => {
  it("prints a bearer token that reads the contract's balances", async () => {
    const result = await runCli(["login", "--contract", contract, "--url", server.url], { OPERATOR_PRIVATE_KEY: operatorKey });
    expect(result.code).toBe(0);
    const token = result.stdout.trim();
    expect(token).toMatch(/^\S{20,}$/);
    expect(result.stderr).toContain("expires at");
    const balances = await call(server.url, "GET", `/v1/contracts/${contract}/point-balances`, token);
    expect(balances.status).toBe(200);
  });

  it("--export prints a shell line, and the other commands use its POINTS_LEDGER_TOKEN without a key", async () => {
    const keyFile = join(dir, "operator.key");
    writeFileSync(keyFile, `${operatorKey}\n`);
    const result = await runCli(["login", "--contract", contract, "--url", server.url, "--key-file", keyFile, "--export"], {});
    expect(result.code).toBe(0);
    const match = /^export POINTS_LEDGER_TOKEN=(\S+)\n$/.exec(result.stdout);
    expect(match).not.toBeNull();
    const balances = await runCli(["balances", "--contract", contract, "--url", server.url], { POINTS_LEDGER_TOKEN: match![1]! });
    expect(balances.stderr).toBe("");
    expect(balances.code).toBe(0);
    expect(balances.stdout).toContain("PHASE2_POINTS: available 10");
  });

  it("refuses a key that is not the contract's operator with the catalogue message, exit 1", async () => {
    const result = await runCli(["login", "--contract", contract, "--url", server.url], { OPERATOR_PRIVATE_KEY: generatePrivateKey() });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^points-ledger: (FORBIDDEN|UNAUTHORIZED) \(HTTP 40[13]\): /);
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });

  it("without a key says where to put one, exit 2", async () => {
    const result = await runCli(["login", "--contract", contract, "--url", server.url], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("OPERATOR_PRIVATE_KEY");
  });
});

describe("points-ledger dev-key", () => {
  it("prints a fresh key and its address as shell lines, marked as not for production", async () => {
    const first = await runCli(["dev-key"], {});
    const second = await runCli(["dev-key"], {});
    expect(first.code).toBe(0);
    const key = /^export OPERATOR_PRIVATE_KEY=(0x[0-9a-f]{64})$/m.exec(first.stdout)?.[1] as `0x${string}` | undefined;
    const address = /^export OPERATOR=(0x[0-9a-fA-F]{40})$/m.exec(first.stdout)?.[1];
    expect(key).toBeDefined();
    expect(isAddress(address ?? "")).toBe(true);
    expect(privateKeyToAccount(key!).address).toBe(address);
    expect(first.stdout).toMatch(/^# .*NOT for production/m);
    expect(first.stderr).toContain("NOT for production");
    expect(second.stdout).not.toContain(key!);
  });
});

describe("CLI failures read as messages", () => {
  it.each([
    ["balances", ["balances", "--contract", "0x1111111111111111111111111111111111111111", "--bogus"], "balances --contract"],
    ["credit", ["credit", "--bogus"], "credit <address>"],
    ["login", ["login", "--nope"], "login --contract"],
    ["snapshot", ["snapshot", "take", "s1", "--bogus"], "snapshot take"],
  ])("an unknown option of %s prints the command's usage and exits 2, without a stack trace", async (_name, args, usage) => {
    const result = await runCli(args, { DATABASE_URL: sqliteUrl(dir, "unused.db") });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Unknown option");
    expect(result.stderr).toContain(usage);
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });

  it("a refused request prints the catalogue message and its details in words, not raw JSON", async () => {
    const result = await runCli(
      ["webhooks", "create", "--contract", contract, "--service-url", server.url, "--url", "ftp://example.com/x", "--types", "no.such"],
      { OPERATOR_PRIVATE_KEY: operatorKey },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^points-ledger: VALIDATION_FAILED \(HTTP 400\): .+\n {2}\S+: .+/);
    expect(result.stderr).not.toContain('{"');
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });

  it("INSUFFICIENT_BALANCE names what is available and what was requested", async () => {
    const file = join(dir, "too-much.csv");
    writeFileSync(file, "0x2222222222222222222222222222222222222222,11\n");
    const result = await runCli(["submit", "--contract", contract, "--url", server.url, "--file", file], {
      OPERATOR_PRIVATE_KEY: operatorKey,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "INSUFFICIENT_BALANCE (HTTP 422): the batch total exceeds the available balance (available 10, requested 11)",
    );
  });
});
