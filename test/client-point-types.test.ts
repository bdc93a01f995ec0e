/**
 * The client and the operator CLI learn point types and minimum sizes from GET /v1/parameters,
 * never from a list of their own; the admin client's credits name an asset and a block.
 * In-process server on SQLite with first-generation point types configured.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient, PointsInputError, minimumUnitsOf } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { parsePoints } from "../src/domain/points.js";
import { startServer, type RunningServer } from "../src/server.js";
import { runCli } from "./helpers/process.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

let dir: string;
let server: RunningServer;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "points-ledger-client-types-"));
  server = await startServer(
    loadConfig({
      DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
      ...NO_LOAD_SHEDDING,
      PORT: "0",
      ADMIN_TOKEN: adminToken,
      POINT_TYPES: "LIQUIDITY,DEVELOPER,PHASE2_POINTS",
      MINIMUM_LIQUIDITY_TRANSFER_SIZE: "0.5",
      BALANCE_ASSETS: "ETH,USDB",
      MINIMUM_FINALIZE_SECONDS: "1",
      LOG_LEVEL: "silent",
    }),
  );
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function randomAddress(): `0x${string}` {
  return getAddress(`0x${randomBytes(20).toString("hex")}`);
}

async function newContract() {
  const operatorKey = generatePrivateKey();
  const contract = randomAddress();
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  return { contract, operatorKey, client: new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey }) };
}

describe("point types come from the service", () => {
  it("minimumUnitsOf reads MINIMUM_<TYPE>_TRANSFER_SIZE of any configured type and refuses an unknown one", async () => {
    const parameters = await admin.getParameters();
    expect(parameters.POINT_TYPES).toEqual(["LIQUIDITY", "DEVELOPER", "PHASE2_POINTS"]);
    expect(minimumUnitsOf(parameters, "LIQUIDITY")).toBe(parsePoints("0.5"));
    expect(minimumUnitsOf(parameters, "DEVELOPER")).toBe(parsePoints("0.01"));
    expect(() => minimumUnitsOf(parameters, "PHASE2_GOLD")).toThrow(PointsInputError);
  });

  it("submitAll checks a LIQUIDITY file against the service's LIQUIDITY minimum before sending anything", async () => {
    const { contract, client } = await newContract();
    await admin.credit(contract, "liq", "LIQUIDITY", "10", { asset: "ETH", block: 77 });
    const recipient = randomAddress();
    const refused = await client
      .submitAll([{ toAddress: recipient, points: "0.4" }], { runId: "r1", pointType: "LIQUIDITY" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PointsInputError);
    const unknown = await client
      .submitAll([{ toAddress: recipient, points: "1" }], { runId: "r2", pointType: "XP" })
      .catch((e: unknown) => e);
    expect((unknown as PointsInputError).details).toEqual([
      { path: "pointType", message: expect.stringContaining("LIQUIDITY, DEVELOPER, PHASE2_POINTS") },
    ]);
    expect(await client.submitAll([{ toAddress: recipient, points: "0.5" }], { runId: "r3", pointType: "LIQUIDITY" })).toMatchObject({
      batchesCreated: 1,
    });
    const balances = await client.getBalances();
    expect(Object.keys(balances)).toEqual(["LIQUIDITY", "DEVELOPER", "PHASE2_POINTS"]);
    expect(balances.LIQUIDITY).toMatchObject({ available: "9.5", pendingSent: "0.5" });
    expect(balances.LIQUIDITY!.byAsset).toEqual({
      ETH: { earnedCumulative: "10", earnedCumulativeBlock: 77 },
      USDB: { earnedCumulative: "0", earnedCumulativeBlock: 0 },
    });
    // The admin client sends asset and block, so a retry with other ones is a conflict.
    await expect(admin.credit(contract, "liq", "LIQUIDITY", "10", { asset: "USDB", block: 77 })).rejects.toMatchObject({
      code: "CREDIT_ID_EXISTS",
    });
    expect(await admin.credit(contract, "liq", "LIQUIDITY", "10", { asset: "ETH", block: 77 })).toEqual({
      creditId: "liq",
      created: false,
    });
  });

  it("the CLI checks --point-type against the service's POINT_TYPES and defaults to the first of them", async () => {
    const { contract, operatorKey } = await newContract();
    const file = join(dir, "transfers.csv");
    writeFileSync(file, `toAddress,points\n${randomAddress()},0.4\n`);
    const env = { POINTS_LEDGER_URL: server.url, OPERATOR_PRIVATE_KEY: operatorKey };
    const unknown = await runCli(["submit", "--contract", contract, "--file", file, "--point-type", "PHASE2_GOLD", "--dry-run"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("LIQUIDITY, DEVELOPER, PHASE2_POINTS");
    // No --point-type: LIQUIDITY, whose 0.5 minimum refuses the 0.4 line.
    const defaulted = await runCli(["submit", "--contract", contract, "--file", file, "--dry-run"], env);
    expect(defaulted.code).toBe(1);
    expect(defaulted.stderr).toContain("below the minimum transfer size 0.5");
    const developer = await runCli(["submit", "--contract", contract, "--file", file, "--point-type", "DEVELOPER", "--dry-run"], env);
    expect(developer.code, developer.stderr).toBe(0);
    const list = await runCli(["batches", "list", "--contract", contract, "--point-type", "XP"], env);
    expect(list.code).toBe(2);
    expect(list.stderr).toContain("LIQUIDITY, DEVELOPER, PHASE2_POINTS");
  });
});
