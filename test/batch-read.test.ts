/**
 * GET one batch of the largest size (MAX_TRANSFERS_PER_BATCH = 10,000) through the real app, on
 * SQLite and on PostgreSQL. The response is written as JSON text by hand, a slice of transfers at
 * a time, with cached checksums (src/http/present.ts, src/domain/address.ts): these tests check
 * that none of that changes what docs/api.md promises, i.e. every recipient EIP-55 checksummed as viem
 * spells it, every amount exactly what was sent in canonical form, submitted order kept.
 */
import { randomBytes } from "node:crypto";
import { FormatRegistry } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKSUM_CACHE_MAX_ENTRIES, checksumAddress } from "../src/domain/address.js";
import { loadConfig } from "../src/config.js";
import { buildApp } from "../src/http/app.js";
import { ISO_TIME_PATTERN, Responses } from "../src/http/schemas.js";
import { TEST_ENV, addContract, createTestApp, injectSender, putBatch, type Send, type TestApp } from "./helpers/http.js";
import { DATABASE_URL_TEST, SKIP_REASON, createTestSchema, type TestSchema } from "./helpers/postgres.js";

const TRANSFER_COUNT = 10_000;
// TypeBox's checker knows no formats of its own; the service prints times as ISO_TIME_PATTERN.
const ISO_TIME = new RegExp(ISO_TIME_PATTERN);
FormatRegistry.Set("date-time", (value) => ISO_TIME.test(value));
/**
 * The largest batch; the smallest unit as minimum transfer size, so it can be sent (TEST_ENV
 * already turns shedding off: a 10,000-transfer submission is slow on a busy CI machine).
 */
const BIG_BATCH_ENV = {
  MAX_TRANSFERS_PER_BATCH: String(TRANSFER_COUNT),
  MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.000000000001",
};
/** Enough for 10,000 amounts of up to 10^13 points each. */
const CREDIT = "100000000000000000";
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
  "transfers",
].sort();

interface SentTransfer {
  toAddress: string;
  points: string;
}

/** Recipients spelled every accepted way: lowercase, EIP-55 mixed case, uppercase. */
function spelling(lowercase: string, i: number): string {
  if (i % 3 === 0) return lowercase;
  if (i % 3 === 1) return getAddress(lowercase);
  return `0x${lowercase.slice(2).toUpperCase()}`;
}

/**
 * Amounts past what a double holds exactly (up to 25 significant digits), some with trailing
 * fractional zeros that the answer must drop, and the smallest unit.
 */
function amount(i: number): string {
  const whole = 1n + (BigInt(`0x${randomBytes(6).toString("hex")}`) % 9_999_999_999_999n);
  const fraction = `${BigInt(`0x${randomBytes(6).toString("hex")}`) % 1_000_000_000_000n}`.padStart(12, "0");
  switch (i % 5) {
    case 0:
      return `${whole}`;
    case 1:
      return `${whole}.${fraction}`;
    case 2:
      return `${whole}.${fraction.slice(0, 3)}000`;
    case 3:
      return "0.000000000001";
    default:
      return `${whole}.${fraction.slice(0, 1 + (i % 12))}`;
  }
}

/** docs/api.md's form of a points string: no trailing fractional zeros, no bare dot. */
function canonical(points: string): string {
  return points.includes(".") ? points.replace(/0+$/, "").replace(/\.$/, "") : points;
}

function bigBatch(): SentTransfer[] {
  return Array.from({ length: TRANSFER_COUNT }, (_, i) => ({
    toAddress: spelling(`0x${randomBytes(20).toString("hex")}`, i),
    points: amount(i),
  }));
}

/** Submits a 10,000-transfer batch, reads it back twice, and checks both answers transfer by transfer. */
async function checkBigBatchReadsBack(testApp: Pick<TestApp, "send" | "adminToken">): Promise<void> {
  const ledger = await addContract(testApp, { PHASE2_POINTS: CREDIT });
  const sent = bigBatch();
  await putBatch(testApp.send, ledger, "big", { pointType: "PHASE2_POINTS", transfers: sent });
  // Twice: the first read computes most checksums, the second finds them cached.
  for (let read = 0; read < 2; read++) {
    await expectBatchAsSent(testApp.send, ledger, sent);
  }
}

async function expectBatchAsSent(send: Send, ledger: { contract: string; token: string }, sent: SentTransfer[]): Promise<void> {
  const response = await send({ method: "GET", url: `/v1/contracts/${ledger.contract}/batches/big`, token: ledger.token });
  expect(response.status, response.text.slice(0, 500)).toBe(200);
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
  const body = response.json as { success: boolean; batch: Record<string, unknown> & { transfers: SentTransfer[] } };
  expect(body.success).toBe(true);
  // The hand-written text must still be what the documented response schema describes.
  expect(Value.Check(Responses.batchWithTransfers, body)).toBe(true);
  expect(Object.keys(body.batch).sort()).toEqual(BATCH_KEYS);
  expect(body.batch.contractAddress).toBe(getAddress(ledger.contract));
  expect(body.batch.transferCount).toBe(TRANSFER_COUNT);
  const { transfers } = body.batch;
  expect(transfers).toHaveLength(TRANSFER_COUNT);
  const mismatches: string[] = [];
  for (let i = 0; i < TRANSFER_COUNT; i++) {
    const got = transfers[i]!;
    const want = { toAddress: getAddress(sent[i]!.toAddress.toLowerCase()), points: canonical(sent[i]!.points) };
    if (Object.keys(got).length !== 2 || got.toAddress !== want.toAddress || got.points !== want.points) {
      mismatches.push(`#${i}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
  }
  expect(mismatches.slice(0, 5)).toEqual([]);
}

describe("GET one 10,000-transfer batch on SQLite", () => {
  let testApp: TestApp;
  beforeAll(async () => {
    testApp = await createTestApp({ env: BIG_BATCH_ENV });
  });
  afterAll(async () => {
    await testApp?.close();
  });

  it("returns every transfer in submitted order, checksummed as viem spells it, amounts exact and canonical", async () => {
    await checkBigBatchReadsBack(testApp);
  });
});

describe.skipIf(!DATABASE_URL_TEST)(`GET one 10,000-transfer batch on PostgreSQL${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`, () => {
  let db: TestSchema;
  let testApp: Pick<TestApp, "send" | "adminToken"> & { close(): Promise<void> };
  beforeAll(async () => {
    db = await createTestSchema(DATABASE_URL_TEST!);
    const adminToken = `admin-${randomBytes(16).toString("hex")}`;
    const config = loadConfig({ ...TEST_ENV, ...BIG_BATCH_ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: db.connectionString });
    const store = db.openStore();
    await store.migrate();
    const app = await buildApp({ config, store, logger: false });
    testApp = { send: injectSender(app), adminToken, close: () => app.close() };
  });
  afterAll(async () => {
    await testApp?.close();
    await db?.drop();
  });

  it("returns every transfer in submitted order, checksummed as viem spells it, amounts exact and canonical", async () => {
    await checkBigBatchReadsBack(testApp);
  });
});

describe("checksumAddress with its cache", () => {
  it("gives viem's spelling for more distinct addresses than the cache holds, read twice", () => {
    const keys = Array.from({ length: CHECKSUM_CACHE_MAX_ENTRIES + 1000 }, () => `0x${randomBytes(20).toString("hex")}`);
    for (let pass = 0; pass < 2; pass++) {
      const wrong = keys.filter((key) => checksumAddress(key) !== getAddress(key));
      expect(wrong.slice(0, 5)).toEqual([]);
    }
  });

  it("answers an uppercase spelling of a cached address and still refuses a malformed one", () => {
    const key = `0x${randomBytes(20).toString("hex")}`;
    const expected = getAddress(key);
    expect(checksumAddress(key)).toBe(expected);
    expect(checksumAddress(`0x${key.slice(2).toUpperCase()}`)).toBe(expected);
    expect(() => checksumAddress(`${key}0`)).toThrow(TypeError);
    expect(() => checksumAddress(`0x${key.slice(3)}g`)).toThrow(TypeError);
  });
});
