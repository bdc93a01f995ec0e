import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PointsAdminClient,
  PointsApiError,
  PointsClient,
  PointsCursorError,
  PointsInputError,
  PointsNetworkError,
  batchIdFor,
  mergeTransfers,
  parseTransferFile,
  planBatches,
  type Batch,
  type Signer,
  type Transfer,
} from "../src/client/index.js";
import { errorFromResponse } from "../src/client/errors.js";
import { loadConfig } from "../src/config.js";
import { parseAddress, type AddressKey } from "../src/domain/address.js";
import { formatPoints, parsePoints } from "../src/domain/points.js";
import { startServer, type RunningServer } from "../src/server.js";
import { mulberry32, seededFaults, startFaultProxy, type Fault, type FaultProxy } from "./helpers/fault-proxy.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";

const MAX_TRANSFERS_PER_BATCH = 500;
const TOKEN_TTL_SECONDS = 600;
const DEADLINE_MS = 45_000;
/** Fast client retries: the proxy's faults are injected, not load, so waiting long adds nothing. */
const FAST_RETRY = { maxAttempts: 12, baseDelayMs: 5, maxDelayMs: 40 };

let dir: string;
let server: RunningServer;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "points-ledger-client-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    DEFAULT_FINALIZE_SECONDS: "3600",
    MAX_TRANSFERS_PER_BATCH: String(MAX_TRANSFERS_PER_BATCH),
    BEARER_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
    AUTH_RATE_LIMIT_PER_MINUTE: "100000",
    RATE_LIMIT_PER_MINUTE: "100000000",
    FINALIZER_INTERVAL_MS: "20",
    LOG_LEVEL: "silent",
  });
  server = await startServer(config);
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function randomAddress(): `0x${string}` {
  return getAddress(`0x${randomBytes(20).toString("hex")}`);
}

/** A fresh contract with a registered operator and `credit` PHASE2_POINTS. */
async function newContract(credit = "1000000", baseUrl = server.url) {
  const operatorKey = generatePrivateKey();
  const contract = randomAddress();
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  if (credit !== "0") await admin.credit(contract, `credit-${contract}`, "PHASE2_POINTS", credit);
  const client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey, retry: FAST_RETRY });
  return { contract, operatorKey, client };
}

async function pollUntil<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function collect(iterable: AsyncIterable<Batch>): Promise<Batch[]> {
  const batches: Batch[] = [];
  for await (const batch of iterable) batches.push(batch);
  return batches;
}

async function receivedBy(address: string): Promise<bigint> {
  return (await server.store.getBalances(parseAddress(address) as AddressKey)).PHASE2_POINTS.receivedCumulative;
}

async function expectApiError(promise: Promise<unknown>): Promise<PointsApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PointsApiError);
  return error as PointsApiError;
}

describe("public routes", () => {
  it("reads parameters, health, readiness and metrics without signing in", async () => {
    const parameters = await admin.getParameters();
    expect(parameters).toMatchObject({ MAX_TRANSFERS_PER_BATCH, MINIMUM_FINALIZE_SECONDS: 1, BEARER_TOKEN_TTL_SECONDS: TOKEN_TTL_SECONDS });
    expect(parameters.MINIMUM_PHASE2_POINTS_TRANSFER_SIZE).toBe("0.01");
    expect(await admin.health()).toBe(true);
    expect(await admin.ready()).toBe(true);
    expect(await admin.metrics()).toMatch(/# TYPE \S+ (counter|histogram)/);
    const nobody = await startFaultProxy({ target: server.url, decide: () => "reset" });
    expect(await new PointsAdminClient({ baseUrl: nobody.url, adminToken }).health()).toBe(false);
    await nobody.close();
  });
});

describe("sign-in", () => {
  it("signs in with a private key, a viem Account or any {address, signMessage} signer", async () => {
    const { contract, operatorKey, client } = await newContract("1000");
    const account = privateKeyToAccount(operatorKey);
    const adapter: Signer = { address: account.address.toLowerCase(), signMessage: ({ message }) => account.signMessage({ message }) };
    for (const c of [
      client,
      new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: account }),
      new PointsClient({ baseUrl: server.url, contractAddress: contract.toLowerCase(), operator: adapter }),
    ]) {
      const balances = await c.getBalances();
      expect(balances.PHASE2_POINTS).toMatchObject({
        available: "1000",
        pendingSent: "0",
        earnedCumulative: "1000",
        receivedCumulative: "0",
        finalizedSentCumulative: "0",
      });
      expect(balances.PHASE2_POINTS!.byAsset.ETH).toEqual({ earnedCumulative: "0", earnedCumulativeBlock: 0 });
      expect(balances.PHASE2_GOLD!.available).toBe("0");
      expect(c.signIns).toBe(1);
    }
  });

  it("concurrent first requests share one sign-in", async () => {
    const { client } = await newContract("1");
    await Promise.all(Array.from({ length: 6 }, () => client.getBalances()));
    expect(client.signIns).toBe(1);
  });

  it("renews the token when less than 60 s are left, not before", async () => {
    const { contract, operatorKey } = await newContract("1");
    let offsetMs = 0;
    const client = new PointsClient({
      baseUrl: server.url,
      contractAddress: contract,
      operator: operatorKey,
      now: () => Date.now() + offsetMs,
    });
    await client.getBalances();
    offsetMs = (TOKEN_TTL_SECONDS - 120) * 1000;
    await client.getBalances();
    expect(client.signIns).toBe(1);
    offsetMs = (TOKEN_TTL_SECONDS - 59) * 1000;
    await client.getBalances();
    expect(client.signIns).toBe(2);
  });

  it("signs in again once after a 401 (token revoked by an operator change) and the request succeeds", async () => {
    const { contract, operatorKey, client } = await newContract("5");
    await client.getBalances();
    await admin.setOperator(contract, randomAddress());
    await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
    expect((await client.getBalances()).PHASE2_POINTS!.available).toBe("5");
    expect(client.signIns).toBe(2);
  });

  it("a signer that is not the operator gets FORBIDDEN; a wrong signature gets UNAUTHORIZED, without endless retries", async () => {
    const { contract, operatorKey } = await newContract("1");
    const stranger = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: generatePrivateKey() });
    expect((await expectApiError(stranger.getBalances())).code).toBe("FORBIDDEN");
    const impostorKey = privateKeyToAccount(generatePrivateKey());
    const impostor: Signer = {
      address: privateKeyToAccount(operatorKey).address,
      signMessage: ({ message }) => impostorKey.signMessage({ message }),
    };
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: impostor });
    const error = await expectApiError(client.getBalances());
    expect([error.code, error.status]).toEqual(["UNAUTHORIZED", 401]);
    expect(client.signIns).toBe(0);
  });
});

describe("answers without the catalogue body", () => {
  it("take the catalogue's code for their status, UNAVAILABLE from a gateway, INTERNAL when the status names no one code", () => {
    const expected: [number, string][] = [
      [400, "VALIDATION_FAILED"],
      [401, "UNAUTHORIZED"],
      [403, "FORBIDDEN"],
      [404, "NOT_FOUND"],
      [409, "INTERNAL"],
      [410, "CURSOR_EXPIRED"],
      [413, "PAYLOAD_TOO_LARGE"],
      [415, "UNSUPPORTED_MEDIA_TYPE"],
      [422, "INSUFFICIENT_BALANCE"],
      [429, "RATE_LIMITED"],
      [500, "INTERNAL"],
      [502, "UNAVAILABLE"],
      [503, "UNAVAILABLE"],
      [504, "UNAVAILABLE"],
      [418, "INTERNAL"],
    ];
    for (const [status, code] of expected) {
      const error = errorFromResponse(status, status === 503 ? null : { html: "<h1>bad gateway</h1>" }, 2);
      expect([error.code, error.status, error.retryAfterSeconds, error.message], String(status)).toEqual([
        code,
        status,
        2,
        `HTTP ${status} without an API error body`,
      ]);
    }
  });

  it("keep the body's code when it is a catalogue code, whatever the status", () => {
    const error = errorFromResponse(502, { success: false, error: { code: "RATE_LIMITED", message: "slow down" } }, undefined);
    expect([error.code, error.status, error.message]).toEqual(["RATE_LIMITED", 502, "slow down"]);
  });
});

describe("batches", () => {
  it("submits, reads, lists and cancels with typed results", async () => {
    const { contract, client } = await newContract("100");
    const recipients = [randomAddress(), randomAddress()];
    const request = {
      pointType: "PHASE2_POINTS" as const,
      transfers: [
        { toAddress: recipients[0]!.toLowerCase(), points: "1.50" },
        { toAddress: recipients[1]!, points: "0.25" },
      ],
    };
    expect(await client.submitBatch("round-trip-1", request)).toEqual({ batchId: "round-trip-1", created: true });
    const batch = await client.getBatch("round-trip-1");
    expect(batch).toMatchObject({
      id: "round-trip-1",
      contractAddress: contract,
      status: "PENDING",
      points: "1.75",
      transferCount: 2,
      secondsToFinalize: 3600,
    });
    expect(batch.transfers).toEqual([
      { toAddress: recipients[0], points: "1.5" },
      { toAddress: recipients[1], points: "0.25" },
    ]);
    expect((await client.getBalances()).PHASE2_POINTS).toMatchObject({ available: "98.25", pendingSent: "1.75" });
    const page = await client.listBatches({ status: "PENDING", limit: 10 });
    expect(page.batches.map((b) => b.id)).toEqual(["round-trip-1"]);
    expect(page.cursor).toBeNull();
    const cancelled = await client.cancelBatch("round-trip-1");
    expect(cancelled).toMatchObject({ id: "round-trip-1", status: "CANCELLED" });
    expect(cancelled.cancelledAt).not.toBeNull();
    expect((await client.cancelBatch("round-trip-1")).status).toBe("CANCELLED");
    expect((await client.getBalances()).PHASE2_POINTS).toMatchObject({ available: "100", pendingSent: "0" });
  });

  it("a repeated PUT with the same content is success (created: false); other content is a BATCH_ID_EXISTS conflict", async () => {
    const { client } = await newContract("100");
    const request = { pointType: "PHASE2_POINTS" as const, transfers: [{ toAddress: randomAddress(), points: "3" }], secondsToFinalize: 5 };
    expect((await client.submitBatch("same-id", request)).created).toBe(true);
    expect(await client.submitBatch("same-id", request)).toEqual({ batchId: "same-id", created: false, status: "PENDING" });
    const conflict = await expectApiError(client.submitBatch("same-id", { ...request, secondsToFinalize: 6 }));
    expect(PointsApiError.is(conflict, "BATCH_ID_EXISTS")).toBe(true);
    if (PointsApiError.is(conflict, "BATCH_ID_EXISTS"))
      expect(conflict.details).toEqual({ batchId: "same-id", status: "PENDING", matchesRequest: false });
    expect((await client.getBalances()).PHASE2_POINTS!.pendingSent).toBe("3");
  });

  it("createBatch (POST) returns the id the service assigned", async () => {
    const { client } = await newContract("10");
    const { batchId } = await client.createBatch({ pointType: "PHASE2_POINTS", transfers: [{ toAddress: randomAddress(), points: "2" }] });
    expect(batchId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client.getBatch(batchId)).points).toBe("2");
  });

  it("throws typed errors with the catalogue code, status and details", async () => {
    const { client } = await newContract("10");
    const invalid = await expectApiError(
      client.submitBatch("bad", {
        pointType: "PHASE2_POINTS",
        transfers: [
          { toAddress: "0x1234", points: "1" },
          { toAddress: randomAddress(), points: "1e3" },
        ],
      }),
    );
    expect([invalid.code, invalid.status]).toEqual(["VALIDATION_FAILED", 400]);
    if (PointsApiError.is(invalid, "VALIDATION_FAILED")) {
      expect(invalid.details?.map((d) => d.path).sort()).toEqual(["transfers[0].toAddress", "transfers[1].points"]);
    }
    const poor = await expectApiError(
      client.submitBatch("too-much", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: randomAddress(), points: "11" }] }),
    );
    expect([poor.code, poor.status, poor.details]).toEqual(["INSUFFICIENT_BALANCE", 422, { available: "10", requested: "11" }]);
    const missing = await expectApiError(client.getBatch("no-such-batch"));
    expect([missing.code, missing.status]).toEqual(["NOT_FOUND", 404]);
    expect((await expectApiError(client.cancelBatch("no-such-batch"))).code).toBe("NOT_FOUND");

    await client.submitBatch("finalizes", {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: randomAddress(), points: "1" }],
      secondsToFinalize: 1,
    });
    await pollUntil("the batch to finalize", async () => ((await client.getBatch("finalizes")).status === "FINALIZED" ? true : undefined));
    const late = await expectApiError(client.cancelBatch("finalizes"));
    expect([late.code, late.status]).toEqual(["BATCH_NOT_CANCELLABLE", 409]);
    expect(late.details).toMatchObject({ batchId: "finalizes", status: "FINALIZED" });
  });

  it("iterates every batch across pages, with filters, following the cursor to the end", async () => {
    const { client } = await newContract("100");
    for (let i = 0; i < 7; i++) {
      await client.submitBatch(`page-${i}`, { pointType: "PHASE2_POINTS", transfers: [{ toAddress: randomAddress(), points: "1" }] });
    }
    for (const id of ["page-1", "page-4"]) await client.cancelBatch(id);
    const all = await collect(client.batches({ pageSize: 2, sort: "ASC" }));
    expect(all.map((b) => b.id)).toEqual(["page-0", "page-1", "page-2", "page-3", "page-4", "page-5", "page-6"]);
    const cancelled = await collect(client.batches({ pageSize: 1, status: "CANCELLED" }));
    expect(cancelled.map((b) => b.id).sort()).toEqual(["page-1", "page-4"]);
    expect(await collect(client.batches({ pointType: "PHASE2_GOLD" }))).toEqual([]);
  });

  it("stops with PointsCursorError when the service repeats a cursor", async () => {
    const { contract, operatorKey, client } = await newContract("10");
    await client.submitBatch("only", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: randomAddress(), points: "1" }] });
    const [batch] = (await client.listBatches()).batches;
    // A broken server (or proxy cache) that answers every list request with the same cursor.
    const stuckFetch: typeof fetch = async (input, init) => {
      const url = String(input);
      if (url.includes("/batches?")) return Response.json({ success: true, batches: [batch], cursor: "c3R1Y2s" });
      return fetch(input, init);
    };
    const stuck = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey, fetch: stuckFetch });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const b of stuck.batches()) seen.push(b.id);
    })().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PointsCursorError);
    expect(seen).toEqual(["only", "only"]);
  });
});

describe("admin", () => {
  it("credits are idempotent by creditId; other content is CREDIT_ID_EXISTS", async () => {
    const address = randomAddress();
    expect(await admin.credit(address, "credit-a", "PHASE2_GOLD", "2.5")).toEqual({ creditId: "credit-a", created: true });
    expect(await admin.credit(address, "credit-a", "PHASE2_GOLD", "2.5")).toEqual({ creditId: "credit-a", created: false });
    const conflict = await expectApiError(admin.credit(address, "credit-a", "PHASE2_GOLD", "3"));
    expect([conflict.code, conflict.details]).toEqual(["CREDIT_ID_EXISTS", { creditId: "credit-a", matchesRequest: false }]);
    const wrongToken = new PointsAdminClient({ baseUrl: server.url, adminToken: "not-the-admin-token" });
    expect((await expectApiError(wrongToken.setOperator(address, randomAddress()))).code).toBe("FORBIDDEN");
    expect((await server.store.getBalances(parseAddress(address)!)).PHASE2_GOLD.earnedCumulative).toBe(parsePoints("2.5"));
  });
});

describe("retries", () => {
  let proxy: FaultProxy | null = null;
  const withProxy = async (decide: (r: { method: string; url: string; index: number }) => Fault, retryAfterSeconds = 0) => {
    await proxy?.close();
    proxy = await startFaultProxy({ target: server.url, decide, retryAfterSeconds });
    return proxy;
  };
  afterAll(async () => proxy?.close());

  it("honours Retry-After on 503 and 429, and gives up after maxAttempts with the typed error", async () => {
    const p = await withProxy((r) => (r.index % 2 === 0 ? "unavailable" : "rate-limited"), 7);
    const delays: number[] = [];
    const client = new PublicClientWithSleep(p.url, delays, 4);
    const error = await expectApiError(client.getParameters());
    expect([error.code, error.status, error.retryAfterSeconds]).toEqual(["RATE_LIMITED", 429, 7]);
    expect(delays).toEqual([7000, 7000, 7000]);
    expect(p.counts.unavailable + p.counts["rate-limited"]).toBe(4);
  });

  it("backs off exponentially with jitter on network errors, then throws PointsNetworkError", async () => {
    const p = await withProxy(() => "reset");
    const delays: number[] = [];
    const error = await new PublicClientWithSleep(p.url, delays, 5).getParameters().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PointsNetworkError);
    expect(p.counts.reset).toBe(5);
    // Base 100 ms doubling, each delay in [step/2, step].
    delays.forEach((delay, i) => {
      const step = 100 * 2 ** i;
      expect(delay).toBeGreaterThanOrEqual(step / 2);
      expect(delay).toBeLessThanOrEqual(step);
    });
    expect(delays).toHaveLength(4);
  });

  it("a PUT whose answer was lost is retried and counted once (created: false on the retry)", async () => {
    const { client: direct, contract, operatorKey } = await newContract("50");
    await direct.signIn();
    let putsSeen = 0;
    const p = await withProxy((r) => (r.method === "PUT" && putsSeen++ === 0 ? "drop-response" : "pass"));
    const client = new PointsClient({ baseUrl: p.url, contractAddress: contract, operator: operatorKey, retry: FAST_RETRY });
    const result = await client.submitBatch("lost-answer", {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: randomAddress(), points: "7" }],
    });
    expect(result).toEqual({ batchId: "lost-answer", created: false, status: "PENDING" });
    expect(p.counts["drop-response"]).toBe(1);
    expect((await direct.getBalances()).PHASE2_POINTS!.pendingSent).toBe("7");
  });

  it("a POST whose answer was lost is not resent; a POST refused with 503 is", async () => {
    const { client: direct, contract, operatorKey } = await newContract("50");
    let posts = 0;
    const p = await withProxy((r) =>
      r.method === "POST" && r.url.endsWith("/batches") ? (posts++ === 0 ? "drop-response" : posts === 2 ? "unavailable" : "pass") : "pass",
    );
    const client = new PointsClient({ baseUrl: p.url, contractAddress: contract, operator: operatorKey, retry: FAST_RETRY });
    const request = { pointType: "PHASE2_POINTS" as const, transfers: [{ toAddress: randomAddress(), points: "1" }] };
    expect(
      await client.createBatch(request).then(
        () => null,
        (e: unknown) => e,
      ),
    ).toBeInstanceOf(PointsNetworkError);
    expect(posts).toBe(1);
    await client.createBatch(request);
    expect(posts).toBe(3);
    expect((await collect(direct.batches())).length).toBe(2);
  });

  it("submitAll of 7,000 transfers through a faulty proxy sends every transfer exactly once", async () => {
    const { contract, operatorKey, client: direct } = await newContract("100000000");
    const p = await withProxy(seededFaults(20261121, { "drop-response": 0.2, reset: 0.05, unavailable: 0.1, "rate-limited": 0.05 }));
    const client = new PointsClient({ baseUrl: p.url, contractAddress: contract, operator: operatorKey, retry: FAST_RETRY });
    const { transfers, expected, totalUnits } = randomDistribution(7000, 6000, 42);
    const progress: number[] = [];
    const summary = await client.submitAll(transfers, {
      runId: "airdrop-7000",
      pointType: "PHASE2_POINTS",
      secondsToFinalize: 1,
      onProgress: (e) => progress.push(e.batchesDone),
    });
    const batchCount = Math.ceil(expected.size / MAX_TRANSFERS_PER_BATCH);
    expect(summary).toMatchObject({ inputTransfers: 7000, recipients: expected.size, totalPoints: formatPoints(totalUnits) });
    expect(summary.batchIds).toHaveLength(batchCount);
    expect(summary.batchesCreated + summary.batchesAlreadyStored).toBe(batchCount);
    expect(progress).toEqual(Array.from({ length: batchCount }, (_, i) => i + 1));
    // The faults did happen, including answers lost after the server stored the batch.
    expect(p.counts["drop-response"]).toBeGreaterThan(0);
    expect(p.counts.unavailable + p.counts["rate-limited"] + p.counts.reset).toBeGreaterThan(0);

    const stored = await collect(direct.batches({ sort: "ASC" }));
    expect(stored.map((b) => b.id).sort()).toEqual([...summary.batchIds].sort());
    const sent = new Map<string, bigint>();
    let batchTotals = 0n;
    for (const batch of stored) {
      const full = await direct.getBatch(batch.id);
      expect(full.transfers.length).toBeLessThanOrEqual(MAX_TRANSFERS_PER_BATCH);
      batchTotals += parsePoints(full.points)!;
      for (const t of full.transfers)
        sent.set(t.toAddress.toLowerCase(), (sent.get(t.toAddress.toLowerCase()) ?? 0n) + parsePoints(t.points)!);
    }
    expect(batchTotals).toBe(totalUnits);
    expect(sent).toEqual(expected);

    const again = await client.submitAll(transfers, { runId: "airdrop-7000", pointType: "PHASE2_POINTS", secondsToFinalize: 1 });
    expect([again.batchesCreated, again.batchesAlreadyStored]).toEqual([0, batchCount]);

    await pollUntil("every batch to finalize", async () => {
      const finalized = await collect(direct.batches({ status: "FINALIZED" }));
      return finalized.length === batchCount ? true : undefined;
    });
    const balance = (await direct.getBalances()).PHASE2_POINTS!;
    expect([balance.pendingSent, balance.finalizedSentCumulative]).toEqual(["0", formatPoints(totalUnits)]);
    for (const [address, units] of expected) expect(await receivedBy(address)).toBe(units);
    expect(await server.store.verify()).toEqual([]);
  });
});

describe("submitAll input", () => {
  it("rejects bad transfers before sending anything, naming every one", async () => {
    const { contract, client } = await newContract("100");
    const good = randomAddress();
    const transfers: Transfer[] = [
      { toAddress: good, points: "1" },
      { toAddress: "0xnot-an-address", points: "1" },
      { toAddress: "0x0000000000000000000000000000000000000000", points: "1" },
      { toAddress: contract, points: "1" },
      { toAddress: randomAddress(), points: "1e3" },
      { toAddress: randomAddress(), points: "0" },
      { toAddress: randomAddress(), points: "0.001" },
      { toAddress: good, points: "2" },
    ];
    const error = await client.submitAll(transfers, { runId: "bad-input", pointType: "PHASE2_POINTS" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PointsInputError);
    expect((error as PointsInputError).details.map((d) => d.path)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `transfers[${i}]`));
    expect(await collect(client.batches())).toEqual([]);
  });

  it("merges repeated recipients exactly, in bigint units", async () => {
    const { client } = await newContract("100");
    const a = randomAddress();
    const b = randomAddress();
    const transfers = [
      { toAddress: a, points: "0.1" },
      { toAddress: b, points: "0.2" },
      { toAddress: a.toLowerCase(), points: "0.2" },
      { toAddress: a, points: "0.000000000001" },
    ];
    const summary = await client.submitAll(transfers, { runId: "merge", pointType: "PHASE2_POINTS" });
    expect(summary).toMatchObject({ inputTransfers: 4, recipients: 2, totalPoints: "0.500000000001", batchIds: ["merge-0"] });
    expect((await client.getBatch("merge-0")).transfers).toEqual([
      { toAddress: a, points: "0.300000000001" },
      { toAddress: b, points: "0.2" },
    ]);
  });
});

describe("planning", () => {
  it("derives valid, deterministic, distinct batch ids from any run id", () => {
    const ids = ["run-1", "x".repeat(70), "name with spaces/ünïcode", "name with spaces/ünïcodf", "a".repeat(62)];
    const all = ids.flatMap((runId) => [0, 1, 12345].map((i) => batchIdFor(runId, i)));
    for (const id of all) expect(id).toMatch(/^[A-Za-z0-9._:-]{1,64}$/);
    expect(new Set(all).size).toBe(all.length);
    expect(batchIdFor("run-1", 3)).toBe("run-1-3");
    expect(batchIdFor("name with spaces/ünïcode", 2)).toBe(batchIdFor("name with spaces/ünïcode", 2));
  });

  it("splits merged recipients into full batches of the maximum size", () => {
    const { recipients } = mergeTransfers(Array.from({ length: 1001 }, () => ({ toAddress: randomAddress(), points: "1" })));
    const plan = planBatches(recipients, 500, "r");
    expect(plan.map((b) => b.transfers.length)).toEqual([500, 500, 1]);
    expect(plan.map((b) => b.batchId)).toEqual(["r-0", "r-1", "r-2"]);
  });

  it("parses CSV (with or without header) and JSON lines, reporting shape errors by line", () => {
    const a = randomAddress();
    expect(parseTransferFile(`address,points\n${a},1.5\n\n${a}, "2"\n`)).toEqual({
      format: "csv",
      transfers: [
        { line: 2, toAddress: a, points: "1.5" },
        { line: 4, toAddress: a, points: "2" },
      ],
      errors: [],
    });
    const jsonl = parseTransferFile(
      `{"toAddress":"${a}","points":"1"}\n{"toAddress":"${a}","points":1}\nnot json\n{"toAddress":"${a}","points":"1","x":1}`,
    );
    expect(jsonl.format).toBe("jsonl");
    expect(jsonl.transfers).toHaveLength(1);
    expect(jsonl.errors.map((e) => e.line)).toEqual([2, 3, 4]);
    expect(parseTransferFile(`${a},1,extra\n${a}`).errors.map((e) => e.line)).toEqual([1, 2]);
  });
});

const PORTABLE_PACKAGES = /^(viem|js-sha3|@noble\/hashes|@noble\/curves|canonicalize)(\/|$)/;

describe("portability", () => {
  it("the built client imports no node: module, directly or through its relative imports", () => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), "../dist/src/client/index.js");
    const seen = new Set<string>();
    const offenders: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, "utf8");
      for (const match of source.matchAll(/(?:import|export)[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)) {
        const specifier = match[1] ?? match[2]!;
        if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier));
        // Packages known to run in browsers as they do in Node.js: viem, and the pure-JavaScript hashes,
        // curves and RFC 8785 canonicalization the transparency log's proofs are checked with.
        else if (specifier.startsWith("node:") || !PORTABLE_PACKAGES.test(specifier)) offenders.push(`${file}: ${specifier}`);
      }
    };
    visit(root);
    expect(seen.size).toBeGreaterThan(5);
    expect(offenders).toEqual([]);
  });
});

/** A public client whose retries record their delays instead of waiting. */
class PublicClientWithSleep extends PointsAdminClient {
  constructor(baseUrl: string, delays: number[], maxAttempts: number) {
    super({
      baseUrl,
      adminToken,
      retry: { maxAttempts, baseDelayMs: 100, maxDelayMs: 100_000, sleep: async (ms) => void delays.push(ms) },
    });
  }
}

/** `count` transfers to `recipients` distinct addresses (the rest repeat), exact random amounts ≥ 0.01. */
function randomDistribution(count: number, recipients: number, seed: number) {
  const random = mulberry32(seed);
  const addresses = Array.from({ length: recipients }, () => randomAddress());
  const transfers: Transfer[] = [];
  const expected = new Map<string, bigint>();
  let totalUnits = 0n;
  for (let i = 0; i < count; i++) {
    const address = i < recipients ? addresses[i]! : addresses[Math.floor(random() * recipients)]!;
    const units = 10n ** 10n + BigInt(Math.floor(random() * 1e9)) * 1_000_003n;
    transfers.push({ toAddress: i % 3 === 0 ? address.toLowerCase() : address, points: formatPoints(units) });
    expected.set(address.toLowerCase(), (expected.get(address.toLowerCase()) ?? 0n) + units);
    totalUnits += units;
  }
  return { transfers, expected, totalUnits };
}
