/**
 * The HTTP contract of docs/api.md through the real app (app.inject): every route, every error code of
 * the catalogue, the precedence of errors, and the exact shapes of successful answers. Time is a
 * ManualClock handed to buildApp, so expiry and finalization are exact, not waited for.
 */
import { randomUUID } from "node:crypto";
import { getAddress } from "viem";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../src/clock.js";
import { ERROR_STATUS } from "../src/domain/errors.js";
import { Finalizer } from "../src/worker/finalize.js";
import {
  addContract,
  batchBody,
  breakChecksum,
  createTestApp,
  creditPoints,
  expectError,
  expectValidationFailed,
  ledgerSnapshot,
  newAccount,
  putBatch,
  randomAddress,
  readBalances,
  recipientAddresses,
  registerOperator,
  requestChallenge,
  setupContract,
  signIn,
  type BalanceJson,
  type BatchJson,
  type TestLedger,
  type TestRequest,
  type TestResponse,
} from "./helpers/http.js";

const T0 = Date.UTC(2026, 0, 1);
const BATCH_KEYS = [
  "id",
  "contractAddress",
  "pointType",
  "status",
  "points",
  "transferCount",
  "secondsToFinalize",
  "createdAt",
  "finalizeAt",
  "updatedAt",
  "finalizedAt",
  "cancelledAt",
  "submittedBy",
  "cancelledBy",
].sort();

let ledger: TestLedger;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock(T0);
  ledger = await setupContract({ clock, credits: { PHASE2_POINTS: "1000", PHASE2_GOLD: "10" } });
});

afterEach(async () => {
  await ledger.close();
});

const batchesUrl = (contract: string = ledger.contract) => `/v1/contracts/${contract}/batches`;
const batchUrl = (batchId: string, contract: string = ledger.contract) => `${batchesUrl(contract)}/${batchId}`;
const iso = (ms: number) => new Date(ms).toISOString();

function withToken(request: Omit<TestRequest, "token">): Promise<TestResponse> {
  return ledger.send({ ...request, token: ledger.token });
}

/** Sends a request that must be rejected and asserts it changed nothing in the ledger. */
async function rejected(request: TestRequest, extraAddresses: string[] = []): Promise<TestResponse> {
  const before = await ledgerSnapshot(ledger.store, [ledger.contract], extraAddresses);
  const response = await ledger.send(request);
  expect(response.status, response.text).toBeGreaterThanOrEqual(400);
  expect(await ledgerSnapshot(ledger.store, [ledger.contract], extraAddresses)).toBe(before);
  return response;
}

async function getBatch(batchId: string): Promise<BatchJson & { transfers: { toAddress: string; points: string }[] }> {
  const response = await withToken({ method: "GET", url: batchUrl(batchId) });
  expect(response.status, response.text).toBe(200);
  return (response.json as { batch: BatchJson & { transfers: { toAddress: string; points: string }[] } }).batch;
}

/** byAsset of a balance no credit with an asset reached: the default BALANCE_ASSETS, all zero. */
const NO_ASSET_CREDITS = Object.fromEntries(
  ["ETH", "WETH", "USDB", "BLAST"].map((asset) => [asset, { earnedCumulative: "0", earnedCumulativeBlock: 0 }]),
);

async function pointsBalance(): Promise<BalanceJson> {
  return (await readBalances(ledger.send, ledger.contract, ledger.token)).PHASE2_POINTS;
}

/** available = earned + received − finalizedSent − pendingSent, in exact units. */
function expectBalanceIdentity(balance: BalanceJson): void {
  const units = (text: string) => {
    const [whole, fraction = ""] = text.split(".");
    return BigInt(whole!) * 10n ** 12n + BigInt(fraction.padEnd(12, "0"));
  };
  expect(units(balance.available)).toBe(
    units(balance.earnedCumulative) +
      units(balance.receivedCumulative) -
      units(balance.finalizedSentCumulative) -
      units(balance.pendingSent),
  );
  expect(units(balance.available) >= 0n).toBe(true);
}

describe("GET /v1/parameters", () => {
  it("returns every parameter with the value in force, sizes as decimal strings", async () => {
    const response = await ledger.send({ method: "GET", url: "/v1/parameters" });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      parameters: {
        MINIMUM_FINALIZE_SECONDS: 1,
        DEFAULT_FINALIZE_SECONDS: 60,
        MAX_TRANSFERS_PER_BATCH: 2000,
        MAX_TRANSFER_DECIMALS: 12,
        POINT_TYPES: ["PHASE2_POINTS", "PHASE2_GOLD"],
        MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.01",
        MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: "0.000001",
        BATCH_ID_MAX_LENGTH: 64,
        BEARER_TOKEN_TTL_SECONDS: 600,
        CHALLENGE_TTL_SECONDS: 60,
      },
    });
  });
});

describe("dapp-auth: challenge and solve", () => {
  it("issues a readable challenge naming service, contract, operator, nonce, issue and expiry time", async () => {
    const challenge = await requestChallenge(
      ledger.send,
      ledger.contract.toLowerCase(),
      ledger.operatorAccount.address.toUpperCase().replace("0X", "0x"),
    );
    expect(typeof challenge.challengeData).toBe("string");
    expect(challenge.challengeData.length).toBeGreaterThan(0);
    expect(challenge.message).toContain("points-ledger");
    expect(challenge.message).toContain(ledger.contract);
    expect(challenge.message).toContain(ledger.operatorAccount.address);
    expect(challenge.message).toMatch(/Nonce: [0-9a-f]{16,}/);
    expect(challenge.message).toContain(iso(T0));
    expect(challenge.message).toContain(iso(T0 + 60_000));
    const other = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    expect(other.challengeData).not.toBe(challenge.challengeData);
    expect(other.message).not.toBe(challenge.message);
  });

  it("solves with the operator's personal_sign signature into a token that lasts BEARER_TOKEN_TTL_SECONDS", async () => {
    const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    const signature = await ledger.operatorAccount.signMessage({ message: challenge.message });
    const response = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature },
    });
    expect(response.status).toBe(200);
    const solved = response.json as { success: boolean; bearerToken: string; expiresAt: string };
    expect(Object.keys(solved).sort()).toEqual(["bearerToken", "expiresAt", "success"]);
    expect(solved.success).toBe(true);
    expect(solved.expiresAt).toBe(iso(T0 + 600_000));
    const balances = await ledger.send({
      method: "GET",
      url: `/v1/contracts/${ledger.contract}/point-balances`,
      token: solved.bearerToken,
    });
    expect(balances.status).toBe(200);
  });

  it("answers 403 FORBIDDEN to a challenge for an address that is not the operator, or a contract without one", async () => {
    const notOperator = await rejected({
      method: "POST",
      url: "/v1/dapp-auth/challenge",
      body: { contractAddress: ledger.contract, operatorAddress: randomAddress() },
    });
    expectError(notOperator, 403, "FORBIDDEN");
    const noOperator = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/challenge",
      body: { contractAddress: randomAddress(), operatorAddress: ledger.operatorAccount.address },
    });
    expectError(noOperator, 403, "FORBIDDEN");
  });

  it("answers 401 to an unknown challenge", async () => {
    const signature = await ledger.operatorAccount.signMessage({ message: "anything" });
    const response = await rejected({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: "no-such-challenge", signature },
    });
    expectError(response, 401, "UNAUTHORIZED");
  });

  it("answers 401 to a challenge solved a second time", async () => {
    const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    const signature = await ledger.operatorAccount.signMessage({ message: challenge.message });
    const body = { challengeData: challenge.challengeData, signature };
    expect((await ledger.send({ method: "POST", url: "/v1/dapp-auth/solve", body })).status).toBe(200);
    expectError(await ledger.send({ method: "POST", url: "/v1/dapp-auth/solve", body }), 401, "UNAUTHORIZED");
  });

  it("answers 401 to a challenge solved after CHALLENGE_TTL_SECONDS", async () => {
    const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    const signature = await ledger.operatorAccount.signMessage({ message: challenge.message });
    clock.advance(60_000);
    const response = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature },
    });
    expectError(response, 401, "UNAUTHORIZED");
  });

  it("answers 401 to a signature by another key, and the guess burns the challenge", async () => {
    const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    const wrong = await newAccount().signMessage({ message: challenge.message });
    const response = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature: wrong },
    });
    expectError(response, 401, "UNAUTHORIZED");
    const right = await ledger.operatorAccount.signMessage({ message: challenge.message });
    const retry = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature: right },
    });
    expectError(retry, 401, "UNAUTHORIZED");
  });

  it("answers 401 to a signature that is not a signature at all", async () => {
    for (const signature of ["0x", "0x1234", "not hex", `0x${"ab".repeat(65)}`, `0x${"zz".repeat(65)}`]) {
      const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
      const response = await ledger.send({
        method: "POST",
        url: "/v1/dapp-auth/solve",
        body: { challengeData: challenge.challengeData, signature },
      });
      expectError(response, 401, "UNAUTHORIZED");
    }
  });

  it("answers 401 when the operator changed between challenge and solve", async () => {
    const challenge = await requestChallenge(ledger.send, ledger.contract, ledger.operatorAccount.address);
    const signature = await ledger.operatorAccount.signMessage({ message: challenge.message });
    await registerOperator(ledger.send, ledger.adminToken, ledger.contract, newAccount().address);
    const response = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature },
    });
    expectError(response, 401, "UNAUTHORIZED");
  });

  it("answers 400 with details to malformed challenge and solve bodies", async () => {
    expectValidationFailed(
      await ledger.send({ method: "POST", url: "/v1/dapp-auth/challenge", body: { contractAddress: "0x12", extra: 1 } }),
      ["contractAddress", "operatorAddress", "extra"],
    );
    expectValidationFailed(await ledger.send({ method: "POST", url: "/v1/dapp-auth/solve", body: { challengeData: 5 } }), [
      "challengeData",
      "signature",
    ]);
  });
});

describe("bearer tokens on contract routes", () => {
  const balancesOf = (token: string | null, contract: string = ledger.contract) =>
    ledger.send({ method: "GET", url: `/v1/contracts/${contract}/point-balances`, token });

  it("answers 401 with WWW-Authenticate: Bearer to a missing, malformed or unknown token", async () => {
    const unknown = `plt_${"A".repeat(43)}`;
    const cases: TestRequest[] = [
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances` },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, headers: { authorization: `Basic ${ledger.token}` } },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, headers: { authorization: "Bearer" } },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, headers: { authorization: `Bearer ${ledger.token}x` } },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: unknown },
    ];
    for (const request of cases) {
      const response = await ledger.send(request);
      expectError(response, 401, "UNAUTHORIZED");
      expect(String(response.headers["www-authenticate"])).toMatch(/^Bearer\b/);
    }
  });

  it("answers 401 once the token is BEARER_TOKEN_TTL_SECONDS old", async () => {
    clock.advance(600_000 - 1);
    expect((await balancesOf(ledger.token)).status).toBe(200);
    clock.advance(1);
    expectError(await balancesOf(ledger.token), 401, "UNAUTHORIZED");
  });

  it("revokes the contract's tokens when the operator changes, not when the same operator is set again", async () => {
    await registerOperator(ledger.send, ledger.adminToken, ledger.contract, ledger.operatorAccount.address.toLowerCase());
    expect((await balancesOf(ledger.token)).status).toBe(200);
    const next = newAccount();
    await registerOperator(ledger.send, ledger.adminToken, ledger.contract, next.address);
    expectError(await balancesOf(ledger.token), 401, "UNAUTHORIZED");
    const nextToken = await signIn(ledger.send, ledger.contract, next);
    expect((await balancesOf(nextToken)).status).toBe(200);
  });

  it("answers 403 FORBIDDEN to a valid token used on another contract's routes", async () => {
    const other = await addContract(ledger, { PHASE2_POINTS: "5" });
    expectError(await balancesOf(ledger.token, other.contract), 403, "FORBIDDEN");
    const put = await ledger.send({
      method: "PUT",
      url: batchUrl("b1", other.contract),
      token: ledger.token,
      body: batchBody([{ toAddress: randomAddress(), points: "1" }]),
    });
    expectError(put, 403, "FORBIDDEN");
    expect((await readBalances(ledger.send, other.contract, other.token)).PHASE2_POINTS.pendingSent).toBe("0");
  });

  it("accepts any spelling of the contract address in the path", async () => {
    for (const spelling of [ledger.contract, ledger.contract.toLowerCase(), `0x${ledger.contract.slice(2).toUpperCase()}`]) {
      expect((await balancesOf(ledger.token, spelling)).status).toBe(200);
    }
  });
});

describe("admin API", () => {
  it("registers an operator and answers with EIP-55 spellings of lowercase input", async () => {
    const contract = randomAddress();
    const operator = randomAddress();
    const response = await ledger.send({
      method: "PUT",
      url: `/v1/admin/contracts/${contract.toLowerCase()}/operator`,
      token: ledger.adminToken,
      body: { operatorAddress: operator.toLowerCase() },
    });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ success: true, contractAddress: contract, operatorAddress: operator });
  });

  it("credits points into earnedCumulative, one account for every spelling of the address", async () => {
    const lower = ledger.contract.toLowerCase();
    const upper = `0x${ledger.contract.slice(2).toUpperCase()}`;
    const response = await ledger.send({
      method: "PUT",
      url: `/v1/admin/contracts/${lower}/credits/c-lower`,
      token: ledger.adminToken,
      body: { pointType: "PHASE2_POINTS", points: "0.50" },
    });
    expect(response.json).toEqual({ success: true, creditId: "c-lower" });
    await creditPoints(ledger.send, ledger.adminToken, upper, "PHASE2_POINTS", "1.000000000001", "c-upper");
    expect((await pointsBalance()).earnedCumulative).toBe("1001.500000000001");
  });

  it("answers 409 CREDIT_ID_EXISTS to a reused creditId, with matchesRequest, and credits nothing", async () => {
    await creditPoints(ledger.send, ledger.adminToken, ledger.contract, "PHASE2_GOLD", "1.5", "credit-7");
    const url = `/v1/admin/contracts/${ledger.contract.toLowerCase()}/credits/credit-7`;
    const same = await rejected({ method: "PUT", url, token: ledger.adminToken, body: { pointType: "PHASE2_GOLD", points: "1.50" } });
    expect(expectError(same, 409, "CREDIT_ID_EXISTS").details).toMatchObject({ creditId: "credit-7", matchesRequest: true });
    const different = await rejected({ method: "PUT", url, token: ledger.adminToken, body: { pointType: "PHASE2_GOLD", points: "2" } });
    expect(expectError(different, 409, "CREDIT_ID_EXISTS").details).toMatchObject({ creditId: "credit-7", matchesRequest: false });
    const otherType = await rejected({ method: "PUT", url, token: ledger.adminToken, body: { pointType: "PHASE2_POINTS", points: "1.5" } });
    expect(expectError(otherType, 409, "CREDIT_ID_EXISTS").details).toMatchObject({ matchesRequest: false });
  });

  it("answers 403 without the admin token, with a wrong one, or with a contract token", async () => {
    const url = `/v1/admin/contracts/${ledger.contract}/credits/free-points`;
    const body = { pointType: "PHASE2_POINTS", points: "1000000" };
    for (const token of [null, "wrong-admin-token-0000", `${ledger.adminToken}x`, ledger.token]) {
      expectError(await rejected({ method: "PUT", url, token, body }), 403, "FORBIDDEN");
    }
    const operatorChange = await rejected({
      method: "PUT",
      url: `/v1/admin/contracts/${ledger.contract}/operator`,
      body: { operatorAddress: randomAddress() },
    });
    expectError(operatorChange, 403, "FORBIDDEN");
    expect((await readBalances(ledger.send, ledger.contract, ledger.token)).PHASE2_POINTS.earnedCumulative).toBe("1000");
  });

  it("answers 403 to every admin request when no ADMIN_TOKEN is configured", async () => {
    const disabled = await createTestApp({ env: { ADMIN_TOKEN: "" } });
    try {
      expect(disabled.config.adminToken).toBeNull();
      for (const token of [null, "some-token-of-16-chars", ""]) {
        const response = await disabled.send({
          method: "PUT",
          url: `/v1/admin/contracts/${randomAddress()}/operator`,
          token,
          body: { operatorAddress: randomAddress() },
        });
        expectError(response, 403, "FORBIDDEN");
      }
    } finally {
      await disabled.close();
    }
  });

  it("answers 400 with details to malformed admin requests", async () => {
    const admin = (url: string, body: unknown) => rejected({ method: "PUT", url, token: ledger.adminToken, body });
    const credits = `/v1/admin/contracts/${ledger.contract}/credits`;
    expectValidationFailed(await admin(`${credits}/ok-id`, { pointType: "PHASE2_POINTS", points: "0" }), ["points"]);
    expectValidationFailed(await admin(`${credits}/ok-id`, { pointType: "PHASE2_POINTS", points: "-1" }), ["points"]);
    expectValidationFailed(await admin(`${credits}/ok-id`, { pointType: "GOLD", points: 1, x: true }), ["pointType", "points", "x"]);
    expectValidationFailed(await admin(`${credits}/${"c".repeat(65)}`, { pointType: "PHASE2_POINTS", points: "1" }), ["creditId"]);
    expectValidationFailed(await admin(`/v1/admin/contracts/0xabc/credits/ok-id`, { pointType: "PHASE2_POINTS", points: "1" }), [
      "contractAddress",
    ]);
    const operatorUrl = `/v1/admin/contracts/${ledger.contract}/operator`;
    expectValidationFailed(await admin(operatorUrl, { operatorAddress: `0x${"0".repeat(40)}` }), ["operatorAddress"]);
    expectValidationFailed(await admin(operatorUrl, {}), ["operatorAddress"]);
  });
});

describe("GET point-balances", () => {
  it("returns both point types with the five fields as decimal strings, and the balance identity", async () => {
    const response = await withToken({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances` });
    expect(response.json).toEqual({
      success: true,
      balancesByPointType: {
        PHASE2_POINTS: {
          available: "1000",
          pendingSent: "0",
          earnedCumulative: "1000",
          receivedCumulative: "0",
          finalizedSentCumulative: "0",
          byAsset: NO_ASSET_CREDITS,
        },
        PHASE2_GOLD: {
          available: "10",
          pendingSent: "0",
          earnedCumulative: "10",
          receivedCumulative: "0",
          finalizedSentCumulative: "0",
          byAsset: NO_ASSET_CREDITS,
        },
      },
    });
  });

  it("keeps available = earned + received − finalizedSent − pendingSent through submit, cancel and finalize", async () => {
    const [a, b] = recipientAddresses(2);
    await putBatch(ledger.send, ledger, "keep", batchBody([{ toAddress: a!, points: "100.25" }], "PHASE2_POINTS", 5));
    await putBatch(ledger.send, ledger, "drop", batchBody([{ toAddress: b!, points: "0.75" }], "PHASE2_POINTS", 5));
    let balance = await pointsBalance();
    expect(balance).toEqual({
      available: "899",
      pendingSent: "101",
      earnedCumulative: "1000",
      receivedCumulative: "0",
      finalizedSentCumulative: "0",
      byAsset: NO_ASSET_CREDITS,
    });
    expectBalanceIdentity(balance);
    expect((await withToken({ method: "DELETE", url: batchUrl("drop") })).status).toBe(200);
    balance = await pointsBalance();
    expect(balance).toMatchObject({ available: "899.75", pendingSent: "100.25" });
    expectBalanceIdentity(balance);
    clock.advance(5_000);
    expect(await ledger.finalizeDue()).toBe(1);
    balance = await pointsBalance();
    expect(balance).toEqual({
      available: "899.75",
      pendingSent: "0",
      earnedCumulative: "1000",
      receivedCumulative: "0",
      finalizedSentCumulative: "100.25",
      byAsset: NO_ASSET_CREDITS,
    });
    expectBalanceIdentity(balance);
  });
});

describe("submitting batches: validation (400 VALIDATION_FAILED, details per field, nothing changes)", () => {
  const recipients = recipientAddresses(30);
  const transfers = (count: number, points = "1") => recipients.slice(0, count).map((toAddress) => ({ toAddress, points }));
  const withTransfer = (count: number, index: number, replacement: unknown) => {
    const list: unknown[] = transfers(count);
    list[index] = replacement;
    return { pointType: "PHASE2_POINTS", transfers: list };
  };
  const checksummed = randomAddress();
  const points = (value: unknown) => withTransfer(3, 1, { toAddress: recipients[1], points: value });

  const cases: { name: string; body: () => unknown; paths: string[] }[] = [
    {
      name: "one bad points value among 20 transfers",
      body: () => withTransfer(20, 17, { toAddress: recipients[17], points: "1.2.3" }),
      paths: ["transfers[17].points"],
    },
    { name: "an extra top-level field", body: () => ({ pointType: "PHASE2_POINTS", transfers: transfers(1), memo: "x" }), paths: ["memo"] },
    {
      name: "an extra field in a transfer",
      body: () => withTransfer(3, 1, { toAddress: recipients[1], points: "1", note: "x" }),
      paths: ["transfers[1].note"],
    },
    { name: "a missing pointType", body: () => ({ transfers: transfers(1) }), paths: ["pointType"] },
    { name: "missing transfers", body: () => ({ pointType: "PHASE2_POINTS" }), paths: ["transfers"] },
    { name: "a transfer without points", body: () => withTransfer(2, 0, { toAddress: recipients[0] }), paths: ["transfers[0].points"] },
    { name: "a transfer without toAddress", body: () => withTransfer(3, 2, { points: "1" }), paths: ["transfers[2].toAddress"] },
    { name: "a transfer that is not an object", body: () => withTransfer(2, 1, "0xabc:1"), paths: ["transfers[1]"] },
    {
      name: "a bad EIP-55 checksum",
      body: () => withTransfer(4, 3, { toAddress: breakChecksum(checksummed), points: "1" }),
      paths: ["transfers[3].toAddress"],
    },
    {
      name: "an address of 39 hex digits",
      body: () => withTransfer(2, 0, { toAddress: recipients[0]!.slice(0, 41), points: "1" }),
      paths: ["transfers[0].toAddress"],
    },
    {
      name: "an address without 0x",
      body: () => withTransfer(2, 0, { toAddress: recipients[0]!.slice(2), points: "1" }),
      paths: ["transfers[0].toAddress"],
    },
    {
      name: "one recipient twice, in two spellings",
      body: () => ({
        pointType: "PHASE2_POINTS",
        transfers: [
          { toAddress: checksummed, points: "1" },
          { toAddress: checksummed.toLowerCase(), points: "2" },
        ],
      }),
      paths: ["transfers[1].toAddress"],
    },
    {
      name: "the contract itself as recipient (uppercase spelling)",
      body: () => withTransfer(2, 1, { toAddress: `0x${ledger.contract.slice(2).toUpperCase()}`, points: "1" }),
      paths: ["transfers[1].toAddress"],
    },
    {
      name: "the zero address as recipient",
      body: () => withTransfer(2, 0, { toAddress: `0x${"0".repeat(40)}`, points: "1" }),
      paths: ["transfers[0].toAddress"],
    },
    { name: "PHASE2_POINTS below the 0.01 minimum", body: () => points("0.009999999999"), paths: ["transfers[1].points"] },
    {
      name: "PHASE2_GOLD below the 0.000001 minimum",
      body: () => ({ pointType: "PHASE2_GOLD", transfers: [{ toAddress: recipients[0], points: "0.000000999999" }] }),
      paths: ["transfers[0].points"],
    },
    { name: "zero points", body: () => points("0"), paths: ["transfers[1].points"] },
    { name: "13 fractional digits", body: () => points("1.0000000000001"), paths: ["transfers[1].points"] },
    { name: "an exponent", body: () => points("1e3"), paths: ["transfers[1].points"] },
    { name: "a negative amount", body: () => points("-1"), paths: ["transfers[1].points"] },
    { name: "a plus sign", body: () => points("+1"), paths: ["transfers[1].points"] },
    { name: "leading zeros", body: () => points("00.5"), paths: ["transfers[1].points"] },
    { name: "a leading space", body: () => points(" 1"), paths: ["transfers[1].points"] },
    { name: "a bare fraction", body: () => points(".5"), paths: ["transfers[1].points"] },
    { name: "a trailing dot", body: () => points("1."), paths: ["transfers[1].points"] },
    { name: "a comma", body: () => points("1,5"), paths: ["transfers[1].points"] },
    { name: "points as a JSON number", body: () => points(1), paths: ["transfers[1].points"] },
    { name: "more than 10^18 points", body: () => points("1000000000000000000.000000000001"), paths: ["transfers[1].points"] },
    { name: "a 40-digit amount", body: () => points("1".repeat(40)), paths: ["transfers[1].points"] },
    {
      name: "2001 transfers",
      body: () => ({ pointType: "PHASE2_POINTS", transfers: recipientAddresses(2001).map((toAddress) => ({ toAddress, points: "0.01" })) }),
      paths: ["transfers"],
    },
    { name: "no transfers", body: () => ({ pointType: "PHASE2_POINTS", transfers: [] }), paths: ["transfers"] },
    {
      name: "transfers as an object",
      body: () => ({ pointType: "PHASE2_POINTS", transfers: { 0: transfers(1)[0] } }),
      paths: ["transfers"],
    },
    { name: "an unknown pointType", body: () => ({ pointType: "PHASE3_POINTS", transfers: transfers(1) }), paths: ["pointType"] },
    ...[0, 61, 1.5, "10", -5, true, 1e300].map((value) => ({
      name: `secondsToFinalize ${JSON.stringify(value)}`,
      body: () => ({ pointType: "PHASE2_POINTS", transfers: transfers(1), secondsToFinalize: value }),
      paths: ["secondsToFinalize"],
    })),
    {
      name: "several schema errors at once",
      body: () => ({
        pointType: "PHASE2_POINTS",
        transfers: [
          { toAddress: recipients[0], points: "abc" },
          { toAddress: "nope", points: "1" },
        ],
        secondsToFinalize: 0,
        extra: 1,
      }),
      paths: ["transfers[0].points", "transfers[1].toAddress", "secondsToFinalize", "extra"],
    },
    {
      name: "several ledger-rule errors at once",
      body: () => {
        const list: { toAddress: string; points: string }[] = transfers(6);
        list[2] = { toAddress: recipients[0]!.toUpperCase().replace("0X", "0x"), points: "1" };
        list[4] = { toAddress: recipients[4]!, points: "0.001" };
        list[5] = { toAddress: `0x${"0".repeat(40)}`, points: "0.001" };
        return { pointType: "PHASE2_POINTS", transfers: list };
      },
      paths: ["transfers[2].toAddress", "transfers[4].points", "transfers[5].toAddress", "transfers[5].points"],
    },
    {
      name: "schema errors and ledger-rule errors together",
      body: () => {
        const list: unknown[] = transfers(4);
        list[1] = { toAddress: breakChecksum(checksummed), points: "1" };
        list[2] = { toAddress: recipients[0]!.toUpperCase().replace("0X", "0x"), points: "0.001" };
        list[3] = { toAddress: `0x${"0".repeat(40)}`, points: "abc" };
        return { pointType: "PHASE2_POINTS", transfers: list, memo: "x" };
      },
      paths: [
        "memo",
        "transfers[1].toAddress",
        "transfers[2].toAddress",
        "transfers[2].points",
        "transfers[3].toAddress",
        "transfers[3].points",
      ],
    },
    {
      name: "a ledger-rule error beside an invalid pointType",
      body: () => ({ pointType: "constructor", transfers: [{ toAddress: ledger.contract, points: "1" }] }),
      paths: ["pointType", "transfers[0].toAddress"],
    },
    { name: "a JSON array", body: () => "[]", paths: ["(body)"] },
    { name: "JSON null", body: () => "null", paths: ["(body)"] },
    { name: "a JSON string", body: () => '"PHASE2_POINTS"', paths: ["(body)"] },
    { name: "malformed JSON", body: () => '{"pointType": "PHASE2_POINTS", "transfers": [', paths: ["(body)"] },
    { name: "a __proto__ key", body: () => '{"pointType":"PHASE2_POINTS","transfers":[],"__proto__":{"admin":true}}', paths: ["(body)"] },
  ];

  it.each(cases)("PUT rejects $name", async ({ body, paths }) => {
    expectValidationFailed(await rejected({ method: "PUT", url: batchUrl("b-1"), token: ledger.token, body: body() }, recipients), paths);
  });

  it.each(cases.slice(0, 12))("POST rejects $name", async ({ body, paths }) => {
    expectValidationFailed(await rejected({ method: "POST", url: batchesUrl(), token: ledger.token, body: body() }, recipients), paths);
  });

  it.each([0, 61, 1.5, "10"])('names the allowed range when secondsToFinalize is %j (not "must be null")', async (value) => {
    const body = { ...batchBody([{ toAddress: recipients[0]!, points: "1" }]), secondsToFinalize: value };
    const error = expectError(await rejected({ method: "PUT", url: batchUrl("b-1"), token: ledger.token, body }), 400, "VALIDATION_FAILED");
    const detail = (error.details as { path: string; message: string }[]).find((entry) => entry.path === "secondsToFinalize");
    expect(detail?.message).toBe("must be an integer from 1 to 60 (seconds), or null for the default");
  });

  it("rejects an empty body, with or without a JSON content type", async () => {
    expectValidationFailed(await rejected({ method: "PUT", url: batchUrl("b-1"), token: ledger.token }), ["(body)"]);
    const empty = await rejected({
      method: "PUT",
      url: batchUrl("b-1"),
      token: ledger.token,
      headers: { "content-type": "application/json" },
    });
    expectValidationFailed(empty, ["(body)"]);
  });

  it.each([
    ["a batchId of 65 characters", "a".repeat(65)],
    ["a batchId with a space", "bad%20id"],
    ["a batchId with a slash", "a%2Fb"],
    ["a batchId with unicode", "%C3%A9t%C3%A9"],
    ["a batchId with a percent sign", "50%25"],
  ])("rejects %s", async (_name, batchId) => {
    const body = batchBody([{ toAddress: recipients[0]!, points: "1" }]);
    expectValidationFailed(await rejected({ method: "PUT", url: batchUrl(batchId), token: ledger.token, body }), ["batchId"]);
    expectValidationFailed(await withToken({ method: "GET", url: batchUrl(batchId) }), ["batchId"]);
    expectValidationFailed(await rejected({ method: "DELETE", url: batchUrl(batchId), token: ledger.token }), ["batchId"]);
  });

  it("accepts a batchId of exactly 64 characters from the whole alphabet", async () => {
    const batchId = `${"Az09._:-".repeat(8)}`;
    expect(batchId).toHaveLength(64);
    await putBatch(ledger.send, ledger, batchId, batchBody([{ toAddress: recipients[0]!, points: "1" }]));
    expect((await getBatch(batchId)).id).toBe(batchId);
  });

  it("answers 403 to a valid token with a malformed contract address in the path (403 is checked before 400)", async () => {
    const body = batchBody([{ toAddress: recipients[0]!, points: "1" }]);
    expectError(await rejected({ method: "PUT", url: batchUrl("b-1", "0x1234"), token: ledger.token, body }), 403, "FORBIDDEN");
    expectError(
      await rejected({ method: "PUT", url: batchUrl("b-1", breakChecksum(ledger.contract)), token: ledger.token, body }),
      403,
      "FORBIDDEN",
    );
  });
});

describe("submitting batches: acceptance, idempotency and balance", () => {
  const [r1, r2, r3] = recipientAddresses(3);

  it("PUT accepts a batch and reserves its total in pendingSent", async () => {
    const response = await withToken({
      method: "PUT",
      url: batchUrl("batch-1"),
      body: batchBody([
        { toAddress: r1!, points: "1.5" },
        { toAddress: r2!, points: "2" },
      ]),
    });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ success: true, batchId: "batch-1" });
    expect(await pointsBalance()).toMatchObject({ available: "996.5", pendingSent: "3.5" });
  });

  it("POST assigns a UUID batchId that GET finds", async () => {
    const response = await withToken({
      method: "POST",
      url: batchesUrl(),
      body: batchBody([{ toAddress: r1!, points: "3" }], "PHASE2_GOLD"),
    });
    expect(response.status).toBe(200);
    const { batchId } = response.json as { batchId: string };
    expect(batchId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect((await getBatch(batchId)).points).toBe("3");
    expect((await readBalances(ledger.send, ledger.contract, ledger.token)).PHASE2_GOLD).toMatchObject({
      available: "7",
      pendingSent: "3",
    });
  });

  it("answers 422 INSUFFICIENT_BALANCE with {available, requested} and reserves nothing", async () => {
    await putBatch(ledger.send, ledger, "first", batchBody([{ toAddress: r1!, points: "999.5" }]));
    const response = await rejected({
      method: "PUT",
      url: batchUrl("second"),
      token: ledger.token,
      body: batchBody([
        { toAddress: r2!, points: "0.25" },
        { toAddress: r3!, points: "0.26" },
      ]),
    });
    expect(expectError(response, 422, "INSUFFICIENT_BALANCE").details).toEqual({ available: "0.5", requested: "0.51" });
    expectError(await withToken({ method: "GET", url: batchUrl("second") }), 404, "NOT_FOUND");
    const exact = await withToken({ method: "PUT", url: batchUrl("second"), body: batchBody([{ toAddress: r2!, points: "0.5" }]) });
    expect(exact.status).toBe(200);
    expect(await pointsBalance()).toMatchObject({ available: "0", pendingSent: "1000" });
  });

  it("checks each point type against its own balance", async () => {
    const response = await rejected({
      method: "POST",
      url: batchesUrl(),
      token: ledger.token,
      body: batchBody([{ toAddress: r1!, points: "10.000001" }], "PHASE2_GOLD"),
    });
    expect(expectError(response, 422, "INSUFFICIENT_BALANCE").details).toEqual({ available: "10", requested: "10.000001" });
  });

  it("answers 409 BATCH_ID_EXISTS to a repeated PUT, matchesRequest true for the same batch in any spelling", async () => {
    await putBatch(
      ledger.send,
      ledger,
      "dup",
      batchBody(
        [
          { toAddress: r1!, points: "1.5" },
          { toAddress: r2!, points: "2" },
        ],
        "PHASE2_POINTS",
        null,
      ),
    );
    const sameRequest = batchBody(
      [
        { toAddress: r1!.toUpperCase().replace("0X", "0x"), points: "1.500" },
        { toAddress: r2!, points: "2.0" },
      ],
      "PHASE2_POINTS",
      60,
    );
    const response = await rejected({
      method: "PUT",
      url: batchUrl("dup", ledger.contract.toLowerCase()),
      token: ledger.token,
      body: sameRequest,
    });
    expect(expectError(response, 409, "BATCH_ID_EXISTS").details).toEqual({ batchId: "dup", status: "PENDING", matchesRequest: true });
  });

  it.each([
    [
      "another amount",
      batchBody([
        { toAddress: "R1", points: "1.5" },
        { toAddress: "R2", points: "2.1" },
      ]),
    ],
    [
      "another order",
      batchBody([
        { toAddress: "R2", points: "2" },
        { toAddress: "R1", points: "1.5" },
      ]),
    ],
    [
      "another point type",
      batchBody(
        [
          { toAddress: "R1", points: "1.5" },
          { toAddress: "R2", points: "2" },
        ],
        "PHASE2_GOLD",
      ),
    ],
    [
      "another delay",
      batchBody(
        [
          { toAddress: "R1", points: "1.5" },
          { toAddress: "R2", points: "2" },
        ],
        "PHASE2_POINTS",
        30,
      ),
    ],
    ["a transfer fewer", batchBody([{ toAddress: "R1", points: "1.5" }])],
    ["a body over the balance", batchBody([{ toAddress: "R1", points: "5000" }])],
  ])("answers 409 BATCH_ID_EXISTS with matchesRequest false for %s", async (_name, template) => {
    await putBatch(
      ledger.send,
      ledger,
      "dup",
      batchBody([
        { toAddress: r1!, points: "1.5" },
        { toAddress: r2!, points: "2" },
      ]),
    );
    const body = JSON.parse(
      JSON.stringify(template).replaceAll('"R1"', JSON.stringify(r1)).replaceAll('"R2"', JSON.stringify(r2)),
    ) as unknown;
    const response = await rejected({ method: "PUT", url: batchUrl("dup"), token: ledger.token, body });
    expect(expectError(response, 409, "BATCH_ID_EXISTS").details).toEqual({ batchId: "dup", status: "PENDING", matchesRequest: false });
  });

  it("reports the stored status in BATCH_ID_EXISTS after cancel and after finalization", async () => {
    const body = batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 1);
    await putBatch(ledger.send, ledger, "gone", body);
    await putBatch(ledger.send, ledger, "done", batchBody([{ toAddress: r2!, points: "1" }], "PHASE2_POINTS", 1));
    expect((await withToken({ method: "DELETE", url: batchUrl("gone") })).status).toBe(200);
    clock.advance(1_000);
    await ledger.finalizeDue();
    const cancelled = await withToken({ method: "PUT", url: batchUrl("gone"), body });
    expect(expectError(cancelled, 409, "BATCH_ID_EXISTS").details).toEqual({ batchId: "gone", status: "CANCELLED", matchesRequest: true });
    const finalized = await withToken({ method: "PUT", url: batchUrl("done"), body });
    expect(expectError(finalized, 409, "BATCH_ID_EXISTS").details).toEqual({ batchId: "done", status: "FINALIZED", matchesRequest: false });
  });

  it("scopes batchIds to the contract: another contract may use the same one", async () => {
    const other = await addContract(ledger, { PHASE2_POINTS: "5" });
    await putBatch(ledger.send, ledger, "shared-id", batchBody([{ toAddress: r1!, points: "1" }]));
    await putBatch(ledger.send, other, "shared-id", batchBody([{ toAddress: r1!, points: "2" }]));
    expect((await getBatch("shared-id")).points).toBe("1");
  });

  it("takes absent or null secondsToFinalize as DEFAULT_FINALIZE_SECONDS and keeps a given one", async () => {
    await putBatch(ledger.send, ledger, "absent", batchBody([{ toAddress: r1!, points: "1" }]));
    await putBatch(ledger.send, ledger, "null", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", null));
    await putBatch(ledger.send, ledger, "min", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 1));
    await putBatch(ledger.send, ledger, "max", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 60));
    expect((await getBatch("absent")).secondsToFinalize).toBe(60);
    expect((await getBatch("null")).secondsToFinalize).toBe(60);
    expect((await getBatch("min")).secondsToFinalize).toBe(1);
    expect((await getBatch("max")).finalizeAt).toBe(iso(T0 + 60_000));
  });

  it("accepts a full batch of MAX_TRANSFERS_PER_BATCH transfers with 12-decimal points", async () => {
    const recipients = recipientAddresses(2000);
    const body = batchBody(recipients.map((toAddress) => ({ toAddress, points: "0.010000000001" })));
    await putBatch(ledger.send, ledger, "full", body);
    const batch = await getBatch("full");
    expect(batch.transferCount).toBe(2000);
    expect(batch.points).toBe("20.000000002");
    expect(batch.transfers[1999]).toEqual({ toAddress: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/), points: "0.010000000001" });
  });
});

describe("GET one batch", () => {
  it("returns every batch field and the transfers in submitted order, EIP-55 and trimmed points", async () => {
    const recipients = recipientAddresses(5);
    const spellings = [
      recipients[3]!,
      recipients[0]!.toUpperCase().replace("0X", "0x"),
      getAddress(recipients[4]!),
      recipients[1]!,
      recipients[2]!,
    ];
    const amounts = ["1.50", "2", "0.010000000000", "100.000000000001", "3.25"];
    clock.advance(123);
    await putBatch(
      ledger.send,
      ledger,
      "shape",
      batchBody(
        spellings.map((toAddress, i) => ({ toAddress, points: amounts[i]! })),
        "PHASE2_POINTS",
        7,
      ),
    );
    const batch = await getBatch("shape");
    expect(Object.keys(batch).sort()).toEqual([...BATCH_KEYS, "transfers"].sort());
    expect(batch).toEqual({
      id: "shape",
      contractAddress: ledger.contract,
      pointType: "PHASE2_POINTS",
      status: "PENDING",
      points: "106.760000000001",
      transferCount: 5,
      secondsToFinalize: 7,
      createdAt: iso(T0 + 123),
      finalizeAt: iso(T0 + 7_123),
      updatedAt: null,
      finalizedAt: null,
      cancelledAt: null,
      submittedBy: { type: "operator", address: ledger.operatorAccount.address },
      cancelledBy: null,
      transfers: spellings.map((toAddress, i) => ({
        toAddress: getAddress(toAddress.toLowerCase()),
        points: ["1.5", "2", "0.01", "100.000000000001", "3.25"][i],
      })),
    });
  });

  it("answers 404 NOT_FOUND for an unknown batch and for another contract's batch", async () => {
    const other = await addContract(ledger, { PHASE2_POINTS: "5" });
    await putBatch(ledger.send, other, "theirs", batchBody([{ toAddress: randomAddress(), points: "1" }]));
    expectError(await withToken({ method: "GET", url: batchUrl("nope") }), 404, "NOT_FOUND");
    expectError(await withToken({ method: "GET", url: batchUrl("theirs") }), 404, "NOT_FOUND");
    expectError(await rejected({ method: "DELETE", url: batchUrl("theirs"), token: ledger.token }), 404, "NOT_FOUND");
    expect((await readBalances(ledger.send, other.contract, other.token)).PHASE2_POINTS.pendingSent).toBe("1");
  });
});

describe("GET batches (list)", () => {
  interface Page {
    batches: BatchJson[];
    cursor: string | null;
  }
  const list = async (query: string): Promise<Page> => {
    const response = await withToken({ method: "GET", url: `${batchesUrl()}?${query}` });
    expect(response.status, response.text).toBe(200);
    const page = response.json as Page & { success: boolean };
    expect(page.success).toBe(true);
    for (const batch of page.batches) expect(Object.keys(batch).sort()).toEqual(BATCH_KEYS);
    return page;
  };
  const ids = (page: Page) => page.batches.map((b) => b.id);

  /** Puts `count` one-transfer batches, advancing the clock `stepMs` after each (0: same createdAt). */
  async function putMany(prefix: string, count: number, stepMs: number, pointType: "PHASE2_POINTS" | "PHASE2_GOLD" = "PHASE2_POINTS") {
    const made: string[] = [];
    for (let i = 0; i < count; i++) {
      const batchId = `${prefix}-${i}`;
      await putBatch(ledger.send, ledger, batchId, batchBody([{ toAddress: randomAddress(), points: "0.01" }], pointType, 1 + (i % 5)));
      made.push(batchId);
      clock.advance(stepMs);
    }
    return made;
  }

  /** Follows cursors to the end, calling `between` after each page; returns the ids in visiting order. */
  async function pageThrough(query: string, between: () => Promise<void> = async () => {}): Promise<string[]> {
    const visited: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const page: Page = await list(cursor === null ? query : `${query}&cursor=${encodeURIComponent(cursor)}`);
      visited.push(...ids(page));
      cursor = page.cursor;
      if (cursor === null) return visited;
      await between();
    }
    throw new Error("paging did not end");
  }

  it("lists newest first by default, 100 per page, with a null cursor on the last page", async () => {
    const made = await putMany("b", 101, 1);
    const first = await list("");
    expect(first.batches).toHaveLength(100);
    expect(ids(first)).toEqual(made.slice(1).reverse());
    expect(first.cursor).toEqual(expect.any(String));
    const second = await list(`cursor=${encodeURIComponent(first.cursor!)}`);
    expect(ids(second)).toEqual(["b-0"]);
    expect(second.cursor).toBeNull();
  });

  it("returns an empty list and a null cursor when nothing matches", async () => {
    expect(await list("")).toEqual({ success: true, batches: [], cursor: null });
  });

  it.each(["ASC", "DESC"])("visits every batch exactly once in %s order, including ties on createdAt", async (sort) => {
    // Three batches per millisecond, so the cursor must break ties.
    const made: string[] = [];
    for (let i = 0; i < 8; i++) {
      made.push(...(await putMany(`t${i}`, 3, 0)));
      clock.advance(1);
    }
    for (const limit of [1, 2, 3, 7, 24, 25, 1000]) {
      const visited = await pageThrough(`sort=${sort}&limit=${limit}`);
      expect(visited).toEqual(sort === "ASC" ? made : [...made].reverse());
    }
  });

  it.each(["ASC", "DESC"])("visits every batch once while new batches arrive between pages (%s)", async (sort) => {
    const before = await putMany("old", 20, 1);
    let added = 0;
    const visited = await pageThrough(`sort=${sort}&limit=3`, async () => {
      await putMany(`new${added++}`, 2, 0);
    });
    expect(added).toBeGreaterThan(2);
    expect(new Set(visited).size).toBe(visited.length);
    if (sort === "DESC") {
      // Newer batches sort before the cursor: a DESC walk visits exactly the batches that existed.
      expect(visited).toEqual([...before].reverse());
    } else {
      // Arrivals sort after the cursor: an ASC walk also visits them, each once, in order.
      expect(visited).toEqual(ids(await list("sort=ASC&limit=1000")));
      expect(visited.length).toBe(before.length + 2 * added);
    }
  });

  it("filters by pointType and status, and pages within the filter", async () => {
    const points = await putMany("p", 4, 1, "PHASE2_POINTS");
    const gold = await putMany("g", 3, 1, "PHASE2_GOLD");
    expect((await withToken({ method: "DELETE", url: batchUrl("p-1") })).status).toBe(200);
    expect((await withToken({ method: "DELETE", url: batchUrl("g-2") })).status).toBe(200);
    expect(ids(await list("pointType=PHASE2_GOLD&sort=ASC"))).toEqual(gold);
    expect(ids(await list("pointType=PHASE2_POINTS&sort=ASC"))).toEqual(points);
    expect(ids(await list("status=CANCELLED&sort=ASC"))).toEqual(["p-1", "g-2"]);
    expect(ids(await list("status=PENDING&pointType=PHASE2_POINTS&sort=ASC"))).toEqual(["p-0", "p-2", "p-3"]);
    expect(await pageThrough("status=PENDING&sort=DESC&limit=2")).toEqual(["g-1", "g-0", "p-3", "p-2", "p-0"]);
    clock.advance(10_000);
    await ledger.finalizeDue();
    expect(ids(await list("status=FINALIZED&sort=ASC"))).toEqual(["p-0", "p-2", "p-3", "g-0", "g-1"]);
    expect(ids(await list("status=PENDING"))).toEqual([]);
    expect(ids(await list("status=FINALIZING"))).toEqual([]);
  });

  it("filters by createdBefore and createdAfter as exclusive bounds, printed times round-tripping exactly", async () => {
    const made = await putMany("c", 5, 1);
    const all = (await list("sort=ASC")).batches;
    const createdAt = all.map((b) => b.createdAt);
    expect(createdAt).toEqual([0, 1, 2, 3, 4].map((i) => iso(T0 + i)));
    expect(ids(await list(`sort=ASC&createdAfter=${createdAt[1]}&createdBefore=${createdAt[3]}`))).toEqual([made[2]]);
    expect(ids(await list(`sort=ASC&createdAfter=${createdAt[3]}`))).toEqual([made[4]]);
    expect(ids(await list(`createdBefore=${createdAt[1]}`))).toEqual([made[0]]);
    expect(ids(await list(`createdAfter=${createdAt[4]}`))).toEqual([]);
    expect(ids(await list(`createdAfter=${createdAt[2]!.replace(".002Z", "Z")}&sort=ASC`))).toEqual(made.slice(1));
    expect(await pageThrough(`createdAfter=${createdAt[0]}&limit=1&sort=ASC`)).toEqual(made.slice(1));
  });

  it("accepts limit 1 and 1000", async () => {
    await putMany("l", 3, 1);
    expect((await list("limit=1")).batches).toHaveLength(1);
    expect((await list("limit=1000")).batches).toHaveLength(3);
    expect((await list("limit=1000")).cursor).toBeNull();
  });

  it.each([
    ["limit=0", ["limit"]],
    ["limit=1001", ["limit"]],
    ["limit=-1", ["limit"]],
    ["limit=abc", ["limit"]],
    ["limit=1.5", ["limit"]],
    ["limit=", ["limit"]],
    ["limit=1&limit=2", ["limit"]],
    ["status=DONE", ["status"]],
    ["status=pending", ["status"]],
    ["pointType=GOLD", ["pointType"]],
    ["sort=asc", ["sort"]],
    ["sort=", ["sort"]],
    ["createdBefore=yesterday", ["createdBefore"]],
    ["createdBefore=2026-01-01", ["createdBefore"]],
    ["createdAfter=2026-02-30T00:00:00.000Z", ["createdAfter"]],
    ["createdAfter=2026-01-01T00:00:00.000%2B01:00", ["createdAfter"]],
    ["cursor=!!!", ["cursor"]],
    [`cursor=${Buffer.from("1.2.3").toString("base64url")}`, ["cursor"]],
    [`cursor=${"A".repeat(129)}`, ["cursor"]],
    ["cursor=", ["cursor"]],
    ["unknown=1", ["unknown"]],
    ["limit=0&status=X&extra=1", ["limit", "status", "extra"]],
  ])("answers 400 with details to the query %s", async (query, paths) => {
    expectValidationFailed(await withToken({ method: "GET", url: `${batchesUrl()}?${query}` }), paths);
  });
});

describe("DELETE (cancel)", () => {
  const [r1, r2] = recipientAddresses(2);

  it("cancels a PENDING batch, releases its total, and a repeated cancel answers the same 200", async () => {
    await putBatch(
      ledger.send,
      ledger,
      "c1",
      batchBody(
        [
          { toAddress: r1!, points: "10" },
          { toAddress: r2!, points: "0.5" },
        ],
        "PHASE2_POINTS",
        5,
      ),
    );
    clock.advance(4_999);
    const response = await withToken({ method: "DELETE", url: batchUrl("c1") });
    expect(response.status).toBe(200);
    const cancelled = (response.json as { success: boolean; batch: BatchJson }).batch;
    expect(Object.keys(cancelled).sort()).toEqual(BATCH_KEYS);
    expect(cancelled).toMatchObject({
      id: "c1",
      status: "CANCELLED",
      points: "10.5",
      transferCount: 2,
      createdAt: iso(T0),
      finalizeAt: iso(T0 + 5_000),
      updatedAt: iso(T0 + 4_999),
      cancelledAt: iso(T0 + 4_999),
      finalizedAt: null,
    });
    expect(await pointsBalance()).toMatchObject({ available: "1000", pendingSent: "0" });
    clock.advance(10_000);
    const again = await withToken({ method: "DELETE", url: batchUrl("c1") });
    expect(again.status).toBe(200);
    expect(again.json).toEqual(response.json);
    expect(await ledger.finalizeDue()).toBe(0);
    expect(await pointsBalance()).toMatchObject({ available: "1000", pendingSent: "0", finalizedSentCumulative: "0" });
  });

  it("answers 409 BATCH_NOT_CANCELLABLE once finalizeAt has passed, even before the finalizer ran", async () => {
    await putBatch(ledger.send, ledger, "late", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 2));
    clock.advance(2_000);
    expectError(await rejected({ method: "DELETE", url: batchUrl("late"), token: ledger.token }), 409, "BATCH_NOT_CANCELLABLE");
    expect((await getBatch("late")).status).toBe("PENDING");
  });

  it("answers 409 BATCH_NOT_CANCELLABLE for a FINALIZED batch", async () => {
    await putBatch(ledger.send, ledger, "final", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 1));
    clock.advance(1_000);
    expect(await ledger.finalizeDue()).toBe(1);
    expectError(await rejected({ method: "DELETE", url: batchUrl("final"), token: ledger.token }, [r1!]), 409, "BATCH_NOT_CANCELLABLE");
  });

  it("answers 404 NOT_FOUND for an unknown batch", async () => {
    expectError(await rejected({ method: "DELETE", url: batchUrl("never"), token: ledger.token }), 404, "NOT_FOUND");
  });
});

describe("finalization", () => {
  it("moves the points to the recipients at finalizeAt, exactly once", async () => {
    const recipient = await addContract(ledger);
    const plain = randomAddress();
    await putBatch(
      ledger.send,
      ledger,
      "pay",
      batchBody(
        [
          { toAddress: recipient.contract.toLowerCase(), points: "1.5" },
          { toAddress: plain, points: "2" },
        ],
        "PHASE2_POINTS",
        3,
      ),
    );
    clock.advance(2_999);
    expect(await ledger.finalizeDue()).toBe(0);
    expect((await getBatch("pay")).status).toBe("PENDING");
    clock.advance(1);
    expect(await ledger.finalizeDue()).toBe(1);
    expect(await ledger.finalizeDue()).toBe(0);
    const batch = await getBatch("pay");
    expect(batch).toMatchObject({ status: "FINALIZED", finalizedAt: iso(T0 + 3_000), updatedAt: iso(T0 + 3_000), cancelledAt: null });
    expect(await pointsBalance()).toEqual({
      available: "996.5",
      pendingSent: "0",
      earnedCumulative: "1000",
      receivedCumulative: "0",
      finalizedSentCumulative: "3.5",
      byAsset: NO_ASSET_CREDITS,
    });
    const received = (await readBalances(ledger.send, recipient.contract, recipient.token)).PHASE2_POINTS;
    expect(received).toEqual({
      available: "1.5",
      pendingSent: "0",
      earnedCumulative: "0",
      receivedCumulative: "1.5",
      finalizedSentCumulative: "0",
      byAsset: NO_ASSET_CREDITS,
    });
    expect(await ledger.store.verify()).toEqual([]);
  });

  it("lets a contract distribute points it received", async () => {
    const middle = await addContract(ledger);
    await putBatch(ledger.send, ledger, "in", batchBody([{ toAddress: middle.contract, points: "5" }], "PHASE2_POINTS", 1));
    const tooEarly = await ledger.send({
      method: "POST",
      url: batchesUrl(middle.contract),
      token: middle.token,
      body: batchBody([{ toAddress: randomAddress(), points: "1" }]),
    });
    expect(expectError(tooEarly, 422, "INSUFFICIENT_BALANCE").details).toEqual({ available: "0", requested: "1" });
    clock.advance(1_000);
    await ledger.finalizeDue();
    await putBatch(ledger.send, middle, "out", batchBody([{ toAddress: randomAddress(), points: "4.99" }], "PHASE2_POINTS", 1));
    expect((await readBalances(ledger.send, middle.contract, middle.token)).PHASE2_POINTS).toEqual({
      available: "0.01",
      pendingSent: "4.99",
      earnedCumulative: "0",
      receivedCumulative: "5",
      finalizedSentCumulative: "0",
      byAsset: NO_ASSET_CREDITS,
    });
    expect(await ledger.store.verify()).toEqual([]);
  });

  it("finalizes on the real clock soon after finalizeAt with the polling finalizer", async () => {
    const live = await setupContract({ credits: { PHASE2_POINTS: "10" } });
    const finalizer = new Finalizer(
      live.store,
      systemClock,
      { intervalMs: live.config.finalizerIntervalMs, batchesPerPass: 50 },
      live.metrics,
      live.app.log,
    );
    try {
      finalizer.start();
      await putBatch(live.send, live, "soon", batchBody([{ toAddress: randomAddress(), points: "2" }], "PHASE2_POINTS", 1));
      const deadline = Date.now() + 15_000;
      let batch: BatchJson | undefined;
      while (Date.now() < deadline) {
        const response = await live.send({ method: "GET", url: batchUrl("soon", live.contract), token: live.token });
        batch = (response.json as { batch: BatchJson }).batch;
        if (batch.status === "FINALIZED") break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(batch?.status).toBe("FINALIZED");
      expect(Date.parse(batch!.finalizedAt!)).toBeGreaterThanOrEqual(Date.parse(batch!.finalizeAt));
      expect((await readBalances(live.send, live.contract, live.token)).PHASE2_POINTS).toMatchObject({
        finalizedSentCumulative: "2",
        pendingSent: "0",
      });
    } finally {
      await finalizer.stop();
      await live.close();
    }
  });
});

describe("EIP-55 output", () => {
  it("prints every address checksummed whatever spelling came in", async () => {
    const recipient = randomAddress();
    const lower = ledger.contract.toLowerCase();
    const response = await ledger.send({
      method: "PUT",
      url: `/v1/contracts/${lower}/batches/spell`,
      token: ledger.token,
      body: batchBody([{ toAddress: `0x${recipient.slice(2).toUpperCase()}`, points: "1" }]),
    });
    expect(response.status).toBe(200);
    const fromUpperPath = await ledger.send({
      method: "GET",
      url: `/v1/contracts/0x${ledger.contract.slice(2).toUpperCase()}/batches/spell`,
      token: ledger.token,
    });
    const batch = (fromUpperPath.json as { batch: BatchJson & { transfers: { toAddress: string }[] } }).batch;
    expect(batch.contractAddress).toBe(ledger.contract);
    expect(batch.transfers[0]!.toAddress).toBe(recipient);
    const listed = await ledger.send({ method: "GET", url: `/v1/contracts/${lower}/batches`, token: ledger.token });
    expect((listed.json as { batches: BatchJson[] }).batches[0]!.contractAddress).toBe(ledger.contract);
  });
});

describe("error precedence: 401 > 403 > 413 > 415 > 400 > 404 > 409 > 422", () => {
  const huge = () => JSON.stringify({ pointType: "PHASE2_POINTS", transfers: [], pad: "x".repeat(1_100_000) });

  it("401 before 403, 413, 415 and 400", async () => {
    const other = await addContract(ledger);
    const requests: TestRequest[] = [
      { method: "PUT", url: batchUrl("b", other.contract), body: huge(), headers: { "content-type": "text/plain" } },
      { method: "PUT", url: batchUrl("b", other.contract), body: "{", token: `plt_${"x".repeat(43)}` },
      { method: "PUT", url: batchUrl("bad%20id!", "0x12"), body: huge() },
    ];
    for (const request of requests) expectError(await rejected(request), 401, "UNAUTHORIZED");
  });

  it("403 before 413, 415 and 400", async () => {
    const other = await addContract(ledger);
    for (const [body, contentType] of [
      [huge(), "application/json"],
      ["x", "text/plain"],
      ["{", "application/json"],
      ["{}", "application/json"],
    ]) {
      const response = await rejected({
        method: "PUT",
        url: batchUrl("bad%20id!", other.contract),
        token: ledger.token,
        body,
        headers: { "content-type": contentType! },
      });
      expectError(response, 403, "FORBIDDEN");
    }
    const admin = await rejected({ method: "PUT", url: `/v1/admin/contracts/0x12/credits/bad%20id`, body: huge() });
    expectError(admin, 403, "FORBIDDEN");
  });

  it("413 PAYLOAD_TOO_LARGE before 415 and 400", async () => {
    expectError(await rejected({ method: "PUT", url: batchUrl("b"), token: ledger.token, body: huge() }), 413, "PAYLOAD_TOO_LARGE");
    const plain = await rejected({
      method: "PUT",
      url: batchUrl("bad%20id!"),
      token: ledger.token,
      body: huge(),
      headers: { "content-type": "text/plain" },
    });
    expectError(plain, 413, "PAYLOAD_TOO_LARGE");
  });

  it("415 UNSUPPORTED_MEDIA_TYPE before 400", async () => {
    const valid = JSON.stringify(batchBody([{ toAddress: randomAddress(), points: "1" }]));
    for (const contentType of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/xml",
      "application/vnd.api+json",
    ]) {
      expectError(
        await rejected({ method: "PUT", url: batchUrl("b"), token: ledger.token, body: valid, headers: { "content-type": contentType } }),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      );
    }
    const badId = await rejected({
      method: "PUT",
      url: batchUrl("bad%20id!"),
      token: ledger.token,
      body: "{",
      headers: { "content-type": "text/plain" },
    });
    expectError(badId, 415, "UNSUPPORTED_MEDIA_TYPE");
    const challenge = await ledger.send({
      method: "POST",
      url: "/v1/dapp-auth/challenge",
      body: "contractAddress=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expectError(challenge, 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  it("400 before 404, 409 and 422", async () => {
    expectValidationFailed(await withToken({ method: "GET", url: batchUrl(`${"n".repeat(65)}`) }), ["batchId"]);
    await putBatch(ledger.send, ledger, "taken", batchBody([{ toAddress: randomAddress(), points: "1" }]));
    const invalidRepeat = await rejected({
      method: "PUT",
      url: batchUrl("taken"),
      token: ledger.token,
      body: batchBody([{ toAddress: randomAddress(), points: "5000.0000000000001" }]),
    });
    expectValidationFailed(invalidRepeat, ["transfers[0].points"]);
  });

  it("409 BATCH_ID_EXISTS before 422", async () => {
    await putBatch(ledger.send, ledger, "taken", batchBody([{ toAddress: randomAddress(), points: "999" }]));
    const response = await rejected({
      method: "PUT",
      url: batchUrl("taken"),
      token: ledger.token,
      body: batchBody([{ toAddress: randomAddress(), points: "2" }]),
    });
    expect(expectError(response, 409, "BATCH_ID_EXISTS").details).toMatchObject({ matchesRequest: false });
  });

  it("404 NOT_FOUND for an unknown route, authenticated or not", async () => {
    for (const request of [
      { method: "GET", url: "/v1/nothing-here" },
      { method: "GET", url: "/v2/parameters" },
      { method: "PATCH", url: batchUrl("b"), token: ledger.token, body: {} },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/batches/a/b`, token: ledger.token },
      { method: "POST", url: "/v1/parameters", body: {} },
    ] satisfies TestRequest[]) {
      expectError(await rejected(request), 404, "NOT_FOUND");
    }
  });
});

describe("rate limiting", () => {
  it("answers 429 RATE_LIMITED with Retry-After beyond AUTH_RATE_LIMIT_PER_MINUTE", async () => {
    const limited = await createTestApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: "3" } });
    try {
      const body = { contractAddress: randomAddress(), operatorAddress: randomAddress() };
      const statuses: number[] = [];
      let last: TestResponse | undefined;
      for (let i = 0; i < 5; i++) {
        last = await limited.send({ method: "POST", url: "/v1/dapp-auth/challenge", body });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([403, 403, 403, 429, 429]);
      expectError(last!, 429, "RATE_LIMITED");
      expect(Number(last!.headers["retry-after"])).toBeGreaterThan(0);
      expect((await limited.send({ method: "GET", url: "/v1/parameters" })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe("operations", () => {
  it("GET /healthz and /readyz answer 200", async () => {
    expect((await ledger.send({ method: "GET", url: "/healthz" })).status).toBe(200);
    const ready = await ledger.send({ method: "GET", url: "/readyz" });
    expect(ready.status).toBe(200);
    expect((ready.json as { success: boolean }).success).toBe(true);
  });

  it("GET /readyz answers 503 UNAVAILABLE with Retry-After when the database does not answer", async () => {
    await ledger.store.close();
    const response = await ledger.send({ method: "GET", url: "/readyz" });
    expectError(response, 503, "UNAVAILABLE");
    expect(Number(response.headers["retry-after"])).toBeGreaterThan(0);
    expect((await ledger.send({ method: "GET", url: "/healthz" })).status).toBe(200);
  });

  it("answers 500 INTERNAL without internals when a store call fails unexpectedly", async () => {
    // A closed SQLite handle throws a plain TypeError: not a known transient database state.
    await ledger.store.close();
    const response = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: ledger.token });
    expect(expectError(response, 500, "INTERNAL").message).toBe("internal error");
    expect(response.text).not.toMatch(/database|sqlite|TypeError|\n\s+at /i);
    expect((await ledger.send({ method: "GET", url: "/healthz" })).status).toBe(200);
  });

  it("answers 503 UNAVAILABLE with Retry-After to every request after drain()", async () => {
    ledger.app.drain();
    for (const request of [
      { method: "GET", url: "/v1/parameters" },
      { method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: ledger.token },
      { method: "PUT", url: batchUrl("late"), token: ledger.token, body: batchBody([{ toAddress: randomAddress(), points: "1" }]) },
    ] satisfies TestRequest[]) {
      const response = await ledger.send(request);
      expectError(response, 503, "UNAVAILABLE");
      expect(Number(response.headers["retry-after"])).toBeGreaterThan(0);
    }
    expect(JSON.parse(await ledgerSnapshot(ledger.store, [ledger.contract])).batches).toEqual([]);
  });

  it("GET /metrics counts requests by route and status, batches and finalization", async () => {
    const [r1, r2] = recipientAddresses(2);
    await putBatch(
      ledger.send,
      ledger,
      "m1",
      batchBody(
        [
          { toAddress: r1!, points: "1" },
          { toAddress: r2!, points: "1" },
        ],
        "PHASE2_POINTS",
        1,
      ),
    );
    await putBatch(ledger.send, ledger, "m2", batchBody([{ toAddress: r1!, points: "1" }], "PHASE2_POINTS", 5));
    await withToken({ method: "DELETE", url: batchUrl("m2") });
    await withToken({ method: "PUT", url: batchUrl("m1"), body: {} });
    clock.advance(1_000);
    await ledger.finalizeDue();
    const response = await ledger.send({ method: "GET", url: "/metrics" });
    expect(response.status).toBe(200);
    expect(String(response.headers["content-type"])).toMatch(/^text\/plain/);
    const text = response.text;
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    const route = "/v1/contracts/:contractAddress/batches/:batchId";
    expect(value(`points_http_requests_total{method="PUT",route="${route}",status="200"}`)).toBe(2);
    expect(value(`points_http_requests_total{method="PUT",route="${route}",status="400"}`)).toBe(1);
    expect(value(`points_http_requests_total{method="DELETE",route="${route}",status="200"}`)).toBe(1);
    expect(value(`points_http_request_duration_seconds_count{method="PUT",route="${route}",status="200"}`)).toBe(2);
    expect(value("points_batches_accepted_total")).toBe(2);
    expect(value("points_batches_cancelled_total")).toBe(1);
    expect(value("points_batches_finalized_total")).toBe(1);
    expect(value("points_transfers_finalized_total")).toBe(2);
    expect(value("points_finalizer_lag_seconds_count")).toBe(1);
  });

  it("GET /openapi.json documents every route of docs/api.md from the validating schemas", async () => {
    const response = await ledger.send({ method: "GET", url: "/openapi.json" });
    expect(response.status).toBe(200);
    const doc = response.json as { openapi: string; paths: Record<string, Record<string, { requestBody?: unknown }>> };
    expect(doc.openapi).toMatch(/^3\./);
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(routes).toEqual(
      expect.arrayContaining([
        "GET /v1/parameters",
        "POST /v1/dapp-auth/challenge",
        "POST /v1/dapp-auth/solve",
        "GET /v1/contracts/{contractAddress}/point-balances",
        "PUT /v1/contracts/{contractAddress}/batches/{batchId}",
        "POST /v1/contracts/{contractAddress}/batches",
        "GET /v1/contracts/{contractAddress}/batches",
        "GET /v1/contracts/{contractAddress}/batches/{batchId}",
        "DELETE /v1/contracts/{contractAddress}/batches/{batchId}",
        "PUT /v1/admin/contracts/{contractAddress}/operator",
        "PUT /v1/admin/contracts/{contractAddress}/credits/{creditId}",
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
      ]),
    );
    const put = JSON.stringify(doc.paths["/v1/contracts/{contractAddress}/batches/{batchId}"]!.put!.requestBody);
    expect(put).toContain('"maxItems":2000');
    expect(put).toContain("PHASE2_GOLD");
  });

  it("GET /docs serves the interactive reference", async () => {
    const response = await ledger.send({ method: "GET", url: "/docs" });
    expect(response.status).toBe(200);
    expect(String(response.headers["content-type"])).toMatch(/^text\/html/);
    expect(response.text.toLowerCase()).toContain("swagger");
  });

  it("maps every catalogue code to its status", () => {
    // The catalogue the tests above exercise: a code added without a test shows up here.
    expect(Object.keys(ERROR_STATUS).sort()).toEqual(
      [
        "VALIDATION_FAILED",
        "UNAUTHORIZED",
        "FORBIDDEN",
        "NOT_FOUND",
        "BATCH_ID_EXISTS",
        "BATCH_NOT_CANCELLABLE",
        "CREDIT_ID_EXISTS",
        "SNAPSHOT_ID_EXISTS",
        "OPERATORS_ON_CHAIN",
        "NOT_YET_LOGGED",
        "CURSOR_EXPIRED",
        "PAYLOAD_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "INSUFFICIENT_BALANCE",
        "RATE_LIMITED",
        "INTERNAL",
        "UNAVAILABLE",
        "CHAIN_UNAVAILABLE",
      ].sort(),
    );
  });
});

describe("idempotent admin credit", () => {
  it("applies a credit once however often it is sent", async () => {
    const creditId = randomUUID();
    await creditPoints(ledger.send, ledger.adminToken, ledger.contract, "PHASE2_POINTS", "5", creditId);
    for (let i = 0; i < 3; i++) {
      const response = await ledger.send({
        method: "PUT",
        url: `/v1/admin/contracts/${ledger.contract}/credits/${creditId}`,
        token: ledger.adminToken,
        body: { pointType: "PHASE2_POINTS", points: "5" },
      });
      expectError(response, 409, "CREDIT_ID_EXISTS");
    }
    expect((await pointsBalance()).earnedCumulative).toBe("1005");
  });
});
