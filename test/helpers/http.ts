/**
 * Shared helpers for tests that go through the real HTTP app: a real config (loadConfig) on a
 * temporary SQLite file, an operator registered through the admin API, points credited through
 * the admin API, and a bearer token obtained by signing the challenge with a viem account.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { expect } from "vitest";
import { systemClock, type Clock } from "../../src/clock.js";
import { loadConfig, type Config } from "../../src/config.js";
import type { AddressKey } from "../../src/domain/address.js";
import type { DefaultPointType, PointType } from "../../src/domain/batch.js";
import { Finalizer } from "../../src/worker/finalize.js";
import { buildApp } from "../../src/http/app.js";
import { createMetrics, type Metrics } from "../../src/metrics.js";
import { createSqliteStore } from "../../src/ledger/sqlite.js";
import type { LedgerStore } from "../../src/store/store.js";
import { NO_LOAD_SHEDDING } from "./process.js";

export type Hex = `0x${string}`;
type Env = Record<string, string>;

/** Small delays so finalization is reachable in a test; high rate limits so only the rate-limit tests meet them. */
export const TEST_ENV: Env = {
  MINIMUM_FINALIZE_SECONDS: "1",
  DEFAULT_FINALIZE_SECONDS: "60",
  BEARER_TOKEN_TTL_SECONDS: "600",
  CHALLENGE_TTL_SECONDS: "60",
  AUTH_RATE_LIMIT_PER_MINUTE: "100000",
  RATE_LIMIT_PER_MINUTE: "100000000",
  FINALIZER_INTERVAL_MS: "20",
  ...NO_LOAD_SHEDDING,
  LOG_LEVEL: "silent",
};

// ---------------------------------------------------------------------------------------------
// Requests: one shape for app.inject and for a real socket, so helpers work over both.

export interface TestRequest {
  method: string;
  url: string;
  token?: string | null;
  /** A value is sent as JSON; a string or Buffer is sent as-is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  json: unknown;
}

export type Send = (request: TestRequest) => Promise<TestResponse>;

function requestHeaders(request: TestRequest): { headers: Record<string, string>; payload: string | Buffer | undefined } {
  const headers: Record<string, string> = {};
  let payload: string | Buffer | undefined;
  if (request.body !== undefined) {
    const raw = typeof request.body === "string" || Buffer.isBuffer(request.body);
    payload = raw ? (request.body as string | Buffer) : JSON.stringify(request.body);
    headers["content-type"] = "application/json";
  }
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  return { headers: { ...headers, ...request.headers }, payload };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function injectSender(app: FastifyInstance): Send {
  return async (request) => {
    const { headers, payload } = requestHeaders(request);
    const response = await app.inject({
      method: request.method as "GET",
      url: request.url,
      headers,
      ...(payload === undefined ? {} : { payload }),
    });
    return { status: response.statusCode, headers: response.headers, text: response.body, json: parseJson(response.body) };
  };
}

/** Sends over a real TCP connection with node:http, which leaves the path and headers as given. */
export function socketSender(baseUrl: string): Send {
  const base = new URL(baseUrl);
  return (request) =>
    new Promise<TestResponse>((resolve, reject) => {
      const { headers, payload } = requestHeaders(request);
      if (payload !== undefined && headers["content-length"] === undefined && headers["transfer-encoding"] === undefined) {
        headers["content-length"] = String(Buffer.byteLength(payload));
      }
      const outgoing = httpRequest(
        { host: base.hostname, port: base.port, method: request.method, path: request.url, headers },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
          incoming.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text, json: parseJson(text) });
          });
          incoming.on("error", reject);
        },
      );
      // A server may answer (413) before it has read the whole body and then close; the answer is what counts.
      outgoing.on("error", reject);
      outgoing.end(payload);
    });
}

/**
 * Writes raw bytes to the server and returns what it answers before closing: for requests that
 * an HTTP client library refuses to produce (bad request lines, raw non-ASCII, broken framing).
 */
export function sendRawHttp(baseUrl: string, bytes: string | Buffer, timeoutMs = 10_000): Promise<string> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: base.hostname, port: Number(base.port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error("no answer before the deadline")), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      // One answer is all we want; stop at the end of the first response's body.
      if (firstResponseComplete(Buffer.concat(chunks).toString("latin1"))) socket.end();
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      if (chunks.length > 0) resolve(Buffer.concat(chunks).toString("utf8"));
      else reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    socket.write(bytes);
  });
}

function firstResponseComplete(text: string): boolean {
  const headerEnd = text.indexOf("\r\n\r\n");
  if (headerEnd === -1) return false;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, headerEnd));
  return length !== null && text.length - headerEnd - 4 >= Number(length[1]);
}

/** Parses the status line and JSON body of a raw HTTP answer. */
export function parseRawResponse(raw: string): { status: number; headers: string; json: unknown } {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  const headerEnd = raw.indexOf("\r\n\r\n");
  return {
    status: status ? Number(status[1]) : 0,
    headers: headerEnd === -1 ? raw : raw.slice(0, headerEnd),
    json: headerEnd === -1 ? undefined : parseJson(raw.slice(headerEnd + 4)),
  };
}

// ---------------------------------------------------------------------------------------------
// The app on a temporary database.

export interface TestApp {
  app: FastifyInstance;
  store: LedgerStore;
  config: Config;
  clock: Clock;
  metrics: Metrics;
  adminToken: string;
  /** Requests through app.inject. */
  send: Send;
  /** Runs the real Finalizer once over everything due at the app's clock; returns how many it finalized. */
  finalizeDue(): Promise<number>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Overrides of TEST_ENV (e.g. `{ AUTH_RATE_LIMIT_PER_MINUTE: "3" }`, `{ ADMIN_TOKEN: "" }`). */
  env?: Env;
  clock?: Clock;
}

export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-http-"));
  const adminToken = `admin-${randomBytes(16).toString("hex")}`;
  const config = loadConfig({
    ...TEST_ENV,
    ADMIN_TOKEN: adminToken,
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...options.env,
  });
  const store = createSqliteStore({ path: config.databaseUrl.slice("sqlite:".length), synchronous: "NORMAL" });
  await store.migrate();
  const clock = options.clock ?? systemClock;
  const metrics = createMetrics();
  const app = await buildApp({ config, store, clock, metrics, logger: false });
  const finalizer = new Finalizer(store, clock, { intervalMs: 1000, batchesPerPass: 50 }, metrics, app.log);
  return {
    app,
    store,
    config,
    clock,
    metrics,
    adminToken: config.adminToken ?? adminToken,
    send: injectSender(app),
    finalizeDue: () => finalizer.runUntilIdle(),
    close: async () => {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts the app on a real socket (port 0) and returns its base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  return address.replace("localhost", "127.0.0.1");
}

// ---------------------------------------------------------------------------------------------
// Operators, credits, sign-in.

export function newAccount(): PrivateKeyAccount {
  return privateKeyToAccount(generatePrivateKey());
}

/** A fresh checksummed address nobody holds the key of. */
export function randomAddress(): Hex {
  return newAccount().address;
}

/** The address in mixed case with one letter's case flipped: a wrong EIP-55 checksum, still 0x + 40 hex. */
export function breakChecksum(address: string): string {
  const checksummed = getAddress(address.toLowerCase());
  for (let i = 2; i < checksummed.length; i++) {
    const c = checksummed[i]!;
    if (!/[a-fA-F]/.test(c)) continue;
    const flipped = checksummed.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + checksummed.slice(i + 1);
    // All-lowercase or all-uppercase spellings carry no checksum, so keep the result mixed case.
    if (/[a-f]/.test(flipped.slice(2)) && /[A-F]/.test(flipped.slice(2))) return flipped;
  }
  throw new Error(`${address} has too few letters to carry a checksum`);
}

export async function registerOperator(send: Send, adminToken: string, contract: string, operatorAddress: string): Promise<void> {
  const response = await send({
    method: "PUT",
    url: `/v1/admin/contracts/${contract}/operator`,
    token: adminToken,
    body: { operatorAddress },
  });
  expect(response.status, response.text).toBe(200);
}

export async function creditPoints(
  send: Send,
  adminToken: string,
  address: string,
  pointType: PointType,
  points: string,
  creditId: string = randomUUID(),
): Promise<void> {
  const response = await send({
    method: "PUT",
    url: `/v1/admin/contracts/${address}/credits/${creditId}`,
    token: adminToken,
    body: { pointType, points },
  });
  expect(response.status, response.text).toBe(200);
}

export async function requestChallenge(
  send: Send,
  contract: string,
  operatorAddress: string,
): Promise<{ challengeData: string; message: string }> {
  const response = await send({ method: "POST", url: "/v1/dapp-auth/challenge", body: { contractAddress: contract, operatorAddress } });
  expect(response.status, response.text).toBe(200);
  return response.json as { challengeData: string; message: string };
}

/** challenge → personal_sign with the operator's key → solve; returns the bearer token. */
export async function signIn(send: Send, contract: string, operator: PrivateKeyAccount): Promise<string> {
  const challenge = await requestChallenge(send, contract, operator.address);
  const signature = await operator.signMessage({ message: challenge.message });
  const response = await send({
    method: "POST",
    url: "/v1/dapp-auth/solve",
    body: { challengeData: challenge.challengeData, signature },
  });
  expect(response.status, response.text).toBe(200);
  return (response.json as { bearerToken: string }).bearerToken;
}

export interface OperatedContract {
  contract: Hex;
  operatorAccount: PrivateKeyAccount;
  token: string;
}

/** A new contract with a registered operator, the given credits and a signed-in token. */
export async function addContract(
  testApp: Pick<TestApp, "send" | "adminToken">,
  credits: Record<PointType, string> = {},
): Promise<OperatedContract> {
  const contract = randomAddress();
  const operatorAccount = newAccount();
  await registerOperator(testApp.send, testApp.adminToken, contract, operatorAccount.address);
  for (const [pointType, points] of Object.entries(credits)) {
    await creditPoints(testApp.send, testApp.adminToken, contract, pointType, points);
  }
  const token = await signIn(testApp.send, contract, operatorAccount);
  return { contract, operatorAccount, token };
}

export type TestLedger = TestApp & OperatedContract;

/** The usual starting point: an app and one contract, signed in, with credits. */
export async function setupContract(options: TestAppOptions & { credits?: Record<PointType, string> } = {}): Promise<TestLedger> {
  const testApp = await createTestApp(options);
  try {
    return { ...testApp, ...(await addContract(testApp, options.credits ?? { PHASE2_POINTS: "1000", PHASE2_GOLD: "10" })) };
  } catch (error) {
    await testApp.close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Response shapes and assertions.

export interface BalanceJson {
  available: string;
  pendingSent: string;
  earnedCumulative: string;
  receivedCumulative: string;
  finalizedSentCumulative: string;
  byAsset: Record<string, { earnedCumulative: string; earnedCumulativeBlock: number }>;
}
/** The default POINT_TYPES are always there; a test that configures others reads them as possibly absent. */
export type BalancesJson = Record<DefaultPointType, BalanceJson> & Record<string, BalanceJson | undefined>;

export interface BatchJson {
  id: string;
  contractAddress: string;
  pointType: PointType;
  status: string;
  points: string;
  transferCount: number;
  secondsToFinalize: number;
  createdAt: string;
  finalizeAt: string;
  updatedAt: string | null;
  finalizedAt: string | null;
  cancelledAt: string | null;
}

export interface ErrorJson {
  code: string;
  message: string;
  details?: unknown;
}

export async function readBalances(send: Send, contract: string, token: string): Promise<BalancesJson> {
  const response = await send({ method: "GET", url: `/v1/contracts/${contract}/point-balances`, token });
  expect(response.status, response.text).toBe(200);
  return (response.json as { balancesByPointType: BalancesJson }).balancesByPointType;
}

/** Asserts the error envelope of docs/api.md and returns its `error`. */
export function expectError(response: TestResponse, status: number, code: string): ErrorJson {
  expect(response.status, response.text).toBe(status);
  const body = response.json as { success: unknown; error: ErrorJson };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  return body.error;
}

/** A batch body of one transfer per recipient. */
export function batchBody(
  transfers: { toAddress: string; points: string }[],
  pointType: PointType = "PHASE2_POINTS",
  secondsToFinalize?: number | null,
): Record<string, unknown> {
  return secondsToFinalize === undefined ? { pointType, transfers } : { pointType, transfers, secondsToFinalize };
}

/** Puts a batch and asserts it was accepted. */
export async function putBatch(send: Send, ledger: OperatedContract, batchId: string, body: unknown): Promise<void> {
  const response = await send({ method: "PUT", url: `/v1/contracts/${ledger.contract}/batches/${batchId}`, token: ledger.token, body });
  expect(response.status, response.text).toBe(200);
  expect(response.json).toEqual({ success: true, batchId });
}

/** Asserts a 400 VALIDATION_FAILED whose details name exactly `paths`, each with a message. */
export function expectValidationFailed(response: TestResponse, paths: string[]): void {
  const error = expectError(response, 400, "VALIDATION_FAILED");
  const details = error.details as { path: string; message: string }[];
  expect(Array.isArray(details), response.text).toBe(true);
  expect(details.map((d) => d.path).sort()).toEqual([...paths].sort());
  for (const detail of details) expect(detail.message.length).toBeGreaterThan(0);
}

/** `count` distinct valid recipient addresses (lowercase spelling), cheap to make in bulk. */
export function recipientAddresses(count: number): Hex[] {
  const prefix = randomBytes(8).toString("hex");
  return Array.from({ length: count }, (_, i) => `0x${prefix}${(i + 1).toString(16).padStart(24, "0")}` as Hex);
}

/**
 * Everything a rejected request must leave alone, as comparable text: the balances of the given
 * addresses and every batch of the given contracts (with its transfers).
 */
export async function ledgerSnapshot(store: LedgerStore, contracts: string[], otherAddresses: string[] = []): Promise<string> {
  const keyOf = (address: string) => address.toLowerCase() as AddressKey;
  const balances = await Promise.all([...contracts, ...otherAddresses].map((address) => store.getBalances(keyOf(address))));
  const batches = [];
  for (const contract of contracts) {
    const page = await store.listBatches(keyOf(contract), { sort: "ASC", limit: 1000 });
    for (const batch of page.batches) batches.push(await store.getBatch(keyOf(contract), batch.batchId));
  }
  return JSON.stringify({ balances, batches }, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
}
