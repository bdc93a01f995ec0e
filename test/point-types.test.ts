/**
 * Point types are configuration (POINT_TYPES, MINIMUM_<TYPE>_TRANSFER_SIZE) and credits that name
 * an asset and a block feed byAsset (BALANCE_ASSETS): through the real HTTP app, on SQLite and on
 * PostgreSQL (skipped without DATABASE_URL_TEST).
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { buildAppOverStore, temporarySqliteStore, type StoreApp } from "./helpers/app-over-store.js";
import {
  expectError,
  expectValidationFailed,
  newAccount,
  randomAddress,
  registerOperator,
  signIn,
  type BalanceJson,
  type Send,
  type TestResponse,
} from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

const GEN1_TYPES = "PHASE2_POINTS,PHASE2_GOLD,LIQUIDITY,DEVELOPER";

interface Backend {
  name: string;
  /** The real app over a fresh database of this backend, configured by `env`. */
  open(env: Record<string, string>): Promise<StoreApp>;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const sqlite: Backend = {
  name: "SQLite",
  open: async (env) => {
    const temporary = temporarySqliteStore();
    const app = await buildAppOverStore(temporary.store, temporary.databaseUrl, { env });
    cleanups.push(async () => {
      await app.close();
      await temporary.remove();
    });
    return app;
  },
};

const postgres: Backend = {
  name: "PostgreSQL",
  open: async (env) => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    const app = await buildAppOverStore(schema.openStore(), schema.connectionString, { env });
    cleanups.push(async () => {
      await app.close();
      await schema.drop();
    });
    return app;
  },
};

interface Contract {
  address: string;
  token: string;
}

async function newContract(app: StoreApp): Promise<Contract> {
  const address = randomAddress();
  const operator = newAccount();
  await registerOperator(app.send, app.adminToken, address, operator.address);
  return { address, token: await signIn(app.send, address, operator) };
}

function credit(app: StoreApp, address: string, body: Record<string, unknown>, creditId: string = randomUUID()): Promise<TestResponse> {
  return app.send({ method: "PUT", url: `/v1/admin/contracts/${address}/credits/${creditId}`, token: app.adminToken, body });
}

async function credited(app: StoreApp, address: string, body: Record<string, unknown>, creditId?: string): Promise<void> {
  const response = await credit(app, address, body, creditId);
  expect(response.status, response.text).toBe(200);
}

async function balancesOf(send: Send, contract: Contract): Promise<Record<string, BalanceJson>> {
  const response = await send({ method: "GET", url: `/v1/contracts/${contract.address}/point-balances`, token: contract.token });
  expect(response.status, response.text).toBe(200);
  return (response.json as { balancesByPointType: Record<string, BalanceJson> }).balancesByPointType;
}

function submit(send: Send, contract: Contract, batchId: string, pointType: unknown, points: string): Promise<TestResponse> {
  return send({
    method: "PUT",
    url: `/v1/contracts/${contract.address}/batches/${batchId}`,
    token: contract.token,
    body: { pointType, transfers: [{ toAddress: randomAddress(), points }] },
  });
}

const zeroAsset = { earnedCumulative: "0", earnedCumulativeBlock: 0 };
const noAssets = { ETH: zeroAsset, WETH: zeroAsset, USDB: zeroAsset, BLAST: zeroAsset };
const zeroBalance = {
  available: "0",
  pendingSent: "0",
  earnedCumulative: "0",
  receivedCumulative: "0",
  finalizedSentCumulative: "0",
  byAsset: noAssets,
};

for (const backend of [sqlite, postgres]) {
  const skip = backend === postgres && !DATABASE_URL_TEST;
  describe.skipIf(skip)(`configured point types on ${backend.name}${skip ? ` (${SKIP_REASON})` : ""}`, () => {
    it("Gen-1 types: a LIQUIDITY batch draws only on LIQUIDITY, and balances list all four types", async () => {
      const app = await backend.open({ POINT_TYPES: GEN1_TYPES, MINIMUM_LIQUIDITY_TRANSFER_SIZE: "0.5" });
      const contract = await newContract(app);
      await credited(app, contract.address, { pointType: "LIQUIDITY", points: "10" });
      await credited(app, contract.address, { pointType: "DEVELOPER", points: "3" });
      await credited(app, contract.address, { pointType: "PHASE2_POINTS", points: "100" });
      expect((await submit(app.send, contract, "liq-1", "LIQUIDITY", "4")).status).toBe(200);
      // 7 > 6 LIQUIDITY left, whatever the other types hold.
      const short = await submit(app.send, contract, "liq-2", "LIQUIDITY", "7");
      expect(expectError(short, 422, "INSUFFICIENT_BALANCE").details).toEqual({ available: "6", requested: "7" });
      expectValidationFailed(await submit(app.send, contract, "liq-3", "LIQUIDITY", "0.4"), ["transfers[0].points"]);
      expect(await balancesOf(app.send, contract)).toEqual({
        PHASE2_POINTS: { ...zeroBalance, available: "100", earnedCumulative: "100" },
        PHASE2_GOLD: zeroBalance,
        LIQUIDITY: { ...zeroBalance, available: "6", pendingSent: "4", earnedCumulative: "10" },
        DEVELOPER: { ...zeroBalance, available: "3", earnedCumulative: "3" },
      });
      const listed = await app.send({
        method: "GET",
        url: `/v1/contracts/${contract.address}/batches?pointType=LIQUIDITY`,
        token: contract.token,
      });
      expect((listed.json as { batches: { id: string; pointType: string }[] }).batches).toMatchObject([
        { id: "liq-1", pointType: "LIQUIDITY" },
      ]);
    });

    it("Gen-1 types: /v1/parameters lists them and one minimum transfer size per type", async () => {
      const app = await backend.open({ POINT_TYPES: GEN1_TYPES, MINIMUM_LIQUIDITY_TRANSFER_SIZE: "0.5" });
      const response = await app.send({ method: "GET", url: "/v1/parameters" });
      const parameters = (response.json as { parameters: Record<string, unknown> }).parameters;
      expect(parameters.POINT_TYPES).toEqual(["PHASE2_POINTS", "PHASE2_GOLD", "LIQUIDITY", "DEVELOPER"]);
      expect(Object.fromEntries(Object.entries(parameters).filter(([name]) => /^MINIMUM_.*_TRANSFER_SIZE$/.test(name)))).toEqual({
        MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.01",
        MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: "0.000001",
        MINIMUM_LIQUIDITY_TRANSFER_SIZE: "0.5",
        MINIMUM_DEVELOPER_TRANSFER_SIZE: "0.01",
      });
    });

    it("an unconfigured point type is 400 naming pointType, in a batch, a credit and a listing filter", async () => {
      const app = await backend.open({ POINT_TYPES: GEN1_TYPES });
      const contract = await newContract(app);
      const refused = await submit(app.send, contract, "xp-1", "XP", "1");
      expectValidationFailed(refused, ["pointType"]);
      expect(expectError(refused, 400, "VALIDATION_FAILED").details).toEqual([
        { path: "pointType", message: "must be one of PHASE2_POINTS, PHASE2_GOLD, LIQUIDITY, DEVELOPER" },
      ]);
      expectValidationFailed(await credit(app, contract.address, { pointType: "XP", points: "1" }), ["pointType"]);
      const listed = await app.send({
        method: "GET",
        url: `/v1/contracts/${contract.address}/batches?pointType=XP`,
        token: contract.token,
      });
      expect(listed.status).toBe(400);
      expect(await app.store.pointTypesInUse()).toEqual([]);
    });

    it("XP,GEMS alone: only those two exist, each its own pool", async () => {
      const app = await backend.open({ POINT_TYPES: "XP,GEMS", MINIMUM_GEMS_TRANSFER_SIZE: "1" });
      const contract = await newContract(app);
      await credited(app, contract.address, { pointType: "XP", points: "50" });
      expect((await submit(app.send, contract, "xp-1", "XP", "20")).status).toBe(200);
      expect(expectError(await submit(app.send, contract, "gems-1", "GEMS", "1"), 422, "INSUFFICIENT_BALANCE").details).toEqual({
        available: "0",
        requested: "1",
      });
      expectValidationFailed(await submit(app.send, contract, "p-1", "PHASE2_POINTS", "1"), ["pointType"]);
      expect(await balancesOf(app.send, contract)).toEqual({
        XP: { ...zeroBalance, available: "30", pendingSent: "20", earnedCumulative: "50" },
        GEMS: zeroBalance,
      });
      const parameters = ((await app.send({ method: "GET", url: "/v1/parameters" })).json as { parameters: Record<string, unknown> })
        .parameters;
      expect(parameters).toMatchObject({ POINT_TYPES: ["XP", "GEMS"], MINIMUM_XP_TRANSFER_SIZE: "0.01", MINIMUM_GEMS_TRANSFER_SIZE: "1" });
      expect(Object.keys(parameters).filter((name) => name.includes("PHASE2"))).toEqual([]);
    });
  });

  describe.skipIf(skip)(`byAsset in balances on ${backend.name}${skip ? ` (${SKIP_REASON})` : ""}`, () => {
    it("sums credits per asset exactly, keeps the highest block, and lists every BALANCE_ASSETS entry", async () => {
      const app = await backend.open({ POINT_TYPES: GEN1_TYPES });
      const contract = await newContract(app);
      await credited(app, contract.address, { pointType: "LIQUIDITY", points: "0.000000000001", asset: "ETH", block: 19_000_000 });
      await credited(app, contract.address, {
        pointType: "LIQUIDITY",
        points: "999999999999.999999999999",
        asset: "ETH",
        block: 18_000_000,
      });
      await credited(app, contract.address, { pointType: "LIQUIDITY", points: "2.5", asset: "USDB" });
      await credited(app, contract.address, { pointType: "LIQUIDITY", points: "1", asset: "LP_TOKEN", block: 5 });
      await credited(app, contract.address, { pointType: "LIQUIDITY", points: "4", block: 99_000_000 });
      await credited(app, contract.address, { pointType: "DEVELOPER", points: "7", asset: null, block: null });
      await credited(app, contract.address, { pointType: "PHASE2_GOLD", points: "0.25", asset: "BLAST", block: 9_007_199_254_740_991 });
      const balances = await balancesOf(app.send, contract);
      expect(balances.LIQUIDITY).toEqual({
        ...zeroBalance,
        available: "1000000000007.5",
        earnedCumulative: "1000000000007.5",
        byAsset: {
          ...noAssets,
          ETH: { earnedCumulative: "1000000000000", earnedCumulativeBlock: 19_000_000 },
          USDB: { earnedCumulative: "2.5", earnedCumulativeBlock: 0 },
          LP_TOKEN: { earnedCumulative: "1", earnedCumulativeBlock: 5 },
        },
      });
      expect(balances.DEVELOPER).toEqual({ ...zeroBalance, available: "7", earnedCumulative: "7" });
      expect(balances.PHASE2_GOLD!.byAsset).toEqual({
        ...noAssets,
        BLAST: { earnedCumulative: "0.25", earnedCumulativeBlock: 9_007_199_254_740_991 },
      });
      expect(balances.PHASE2_POINTS).toEqual(zeroBalance);
    });

    it("BALANCE_ASSETS decides which assets are always present", async () => {
      const app = await backend.open({ BALANCE_ASSETS: "USDB,WBTC" });
      const contract = await newContract(app);
      await credited(app, contract.address, { pointType: "PHASE2_POINTS", points: "3", asset: "ETH", block: 1 });
      const balances = await balancesOf(app.send, contract);
      expect(balances.PHASE2_POINTS!.byAsset).toEqual({
        USDB: zeroAsset,
        WBTC: zeroAsset,
        ETH: { earnedCumulative: "3", earnedCumulativeBlock: 1 },
      });
      expect(balances.PHASE2_GOLD!.byAsset).toEqual({ USDB: zeroAsset, WBTC: zeroAsset });
    });

    it("a reused creditId with a different asset or block is 409 with matchesRequest false", async () => {
      const app = await backend.open({});
      const contract = await newContract(app);
      const body = { pointType: "PHASE2_POINTS", points: "5", asset: "ETH", block: 10 };
      await credited(app, contract.address, body, "credit-1");
      const details = async (changed: Record<string, unknown>) =>
        expectError(await credit(app, contract.address, { ...body, ...changed }, "credit-1"), 409, "CREDIT_ID_EXISTS").details;
      expect(await details({})).toEqual({ creditId: "credit-1", matchesRequest: true });
      expect(await details({ asset: "WETH" })).toEqual({ creditId: "credit-1", matchesRequest: false });
      expect(await details({ asset: undefined })).toEqual({ creditId: "credit-1", matchesRequest: false });
      expect(await details({ block: 11 })).toEqual({ creditId: "credit-1", matchesRequest: false });
      expect((await balancesOf(app.send, contract)).PHASE2_POINTS!.byAsset.ETH).toEqual({
        earnedCumulative: "5",
        earnedCumulativeBlock: 10,
      });
    });

    it("refuses a malformed asset or block as 400 naming the field, changing nothing", async () => {
      const app = await backend.open({});
      const contract = await newContract(app);
      for (const [field, value] of [
        ["asset", "eth"],
        ["asset", "A_VERY_LONG_ASSET_NAME"],
        ["asset", ""],
        ["block", -1],
        ["block", 1.5],
        ["block", "12"],
        ["block", 2 ** 60],
      ] as const) {
        expectValidationFailed(await credit(app, contract.address, { pointType: "PHASE2_POINTS", points: "1", [field]: value }), [field]);
      }
      expect(await balancesOf(app.send, contract)).toEqual({ PHASE2_POINTS: zeroBalance, PHASE2_GOLD: zeroBalance });
    });
  });
}
