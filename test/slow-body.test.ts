/**
 * Slow bodies against the real server process (issue 8 item 1): 520 raw connections send the
 * headers of a challenge request with a Content-Length and then no body (or one byte every
 * 500 ms). Before the fix they filled the in-flight limit (512) and every other request,
 * /healthz and /readyz included, got 503 for as long as they stayed. Now a request only counts
 * once its body has arrived, health routes always answer, and the request timeout cuts the silent
 * ones off with a 400.
 */
import { rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { parseRawResponse } from "./helpers/http.js";
import {
  assertBuilt,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

const REQUEST_TIMEOUT_MS = 2000;
const HEADERS_TIMEOUT_MS = 1000;
/** The default MAX_IN_FLIGHT_REQUESTS is 512: more slow connections than that. */
const SILENT_CONNECTIONS = 480;
const TRICKLE_CONNECTIONS = 40;
const TRICKLE_INTERVAL_MS = 500;
const DECLARED_BODY_BYTES = 200;
/** Connections opened at once, so the listen backlog never overflows (a dropped SYN retries after 1 s). */
const CONNECT_GROUP = 100;
/** Node checks the timeouts every 500 ms (TIMEOUT_CHECK_INTERVAL_MS); the rest is slack for a busy machine. */
const CUT_OFF_SLACK_MS = 2000;
/** Valid requests sent while the slow connections are open, each on a fresh connection. */
const VALID_ROUNDS = 12;
const VALID_ANSWER_TIMEOUT_MS = 5000;

interface SlowConnection {
  socket: Socket;
  /** When its headers had been written. */
  sentMs: number;
  received: Buffer[];
  closedMs: number | null;
  trickle: NodeJS.Timeout | null;
}

let dir: string;
let server: ServerProcess | undefined;
let token: string;
let contract: string;
const slow: SlowConnection[] = [];

beforeAll(async () => {
  assertBuilt();
  dir = tempDir("slow-body");
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    // Only the slow bodies are under test here, not the per-client challenge budget.
    AUTH_RATE_LIMIT_PER_MINUTE: "100000",
  });
  contract = randomAddress();
  const operator = privateKeyToAccount(generatePrivateKey());
  await setOperator(server.url, adminToken, contract, operator.address);
  token = await signIn(server.url, contract, operator);
});

afterAll(async () => {
  for (const connection of slow) {
    if (connection.trickle) clearInterval(connection.trickle);
    connection.socket.destroy();
  }
  if (server) await server.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Opens a connection and writes the headers of a challenge request whose body never (fully) comes. */
function openSlowConnection(baseUrl: string, trickles: boolean): Promise<SlowConnection> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: base.hostname, port: Number(base.port) });
    const connection: SlowConnection = { socket, sentMs: 0, received: [], closedMs: null, trickle: null };
    socket.on("data", (chunk: Buffer) => connection.received.push(chunk));
    socket.on("close", () => {
      connection.closedMs = performance.now();
      if (connection.trickle) clearInterval(connection.trickle);
    });
    socket.on("error", (error) => {
      if (connection.sentMs === 0) reject(error);
    });
    socket.once("connect", () => {
      const head =
        `POST /v1/dapp-auth/challenge HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${DECLARED_BODY_BYTES}\r\n\r\n`;
      socket.write(head, () => {
        connection.sentMs = performance.now();
        if (trickles) {
          let sent = 0;
          connection.trickle = setInterval(() => {
            if (socket.writable && sent < DECLARED_BODY_BYTES - 1) socket.write(sent++ === 0 ? "{" : " ");
          }, TRICKLE_INTERVAL_MS);
        }
        resolve(connection);
      });
    });
  });
}

interface Answer {
  label: string;
  status: number;
  body: string;
  answeredMs: number;
}

/** One request on a connection of its own (no keep-alive agent), answered or failed within the timeout. */
function freshRequest(
  baseUrl: string,
  label: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<Answer> {
  const base = new URL(baseUrl);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {};
  if (payload !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(payload));
  }
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  return new Promise((resolve) => {
    const outgoing = httpRequest({ host: base.hostname, port: base.port, method, path, headers, agent: false }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () =>
        resolve({ label, status: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), answeredMs: performance.now() }),
      );
    });
    // Status 0: no answer (refused, reset or timed out).
    outgoing.setTimeout(VALID_ANSWER_TIMEOUT_MS, () => outgoing.destroy(new Error("no answer")));
    outgoing.on("error", (error) => resolve({ label, status: 0, body: String(error), answeredMs: performance.now() }));
    outgoing.end(payload);
  });
}

/** The routes a client relies on, each expected answer beside it. */
function validRequests(baseUrl: string): { expected: number; answer: Promise<Answer> }[] {
  const requests: { expected: number; answer: Promise<Answer> }[] = [];
  for (let round = 0; round < VALID_ROUNDS; round++) {
    requests.push(
      { expected: 200, answer: freshRequest(baseUrl, "GET /healthz", "GET", "/healthz") },
      { expected: 200, answer: freshRequest(baseUrl, "GET /readyz", "GET", "/readyz") },
      { expected: 200, answer: freshRequest(baseUrl, "GET /v1/parameters", "GET", "/v1/parameters") },
      {
        // A full challenge body for a contract without an operator: answered, and 403 is the right answer.
        expected: 403,
        answer: freshRequest(baseUrl, "POST /v1/dapp-auth/challenge", "POST", "/v1/dapp-auth/challenge", {
          body: { contractAddress: randomAddress(), operatorAddress: randomAddress() },
        }),
      },
      { expected: 200, answer: freshRequest(baseUrl, "GET point-balances", "GET", `/v1/contracts/${contract}/point-balances`, { token }) },
    );
  }
  return requests;
}

describe("slow bodies (issue 8 item 1), real server process", () => {
  it(`serves every valid request while ${SILENT_CONNECTIONS + TRICKLE_CONNECTIONS} bodies stall, then cuts each stalled one off with 400 "request timeout"`, async () => {
    const url = server!.url;
    const total = SILENT_CONNECTIONS + TRICKLE_CONNECTIONS;
    for (let opened = 0; opened < total; opened += CONNECT_GROUP) {
      const group = Array.from({ length: Math.min(CONNECT_GROUP, total - opened) }, (_, i) =>
        openSlowConnection(url, opened + i >= SILENT_CONNECTIONS),
      );
      slow.push(...(await Promise.all(group)));
    }
    const allSentMs = performance.now();

    const requests = validRequests(url);
    const answers = await Promise.all(requests.map((r) => r.answer));
    const served = answers.filter((a) => a.status !== 0 && a.status !== 503).length;
    const firstCutMs = Math.min(...slow.map((c) => c.closedMs ?? Infinity));
    console.log(
      `slow bodies: ${served}/${answers.length} valid requests served (${Math.round((100 * served) / answers.length)}%) ` +
        `while ${total} stalled bodies were open; statuses ${JSON.stringify(countBy(answers.map((a) => a.status)))}`,
    );
    expect(answers.filter((a) => a.status === 503).map((a) => a.label)).toEqual([]);
    requests.forEach((request, i) =>
      expect(answers[i]!.status, `${answers[i]!.label}: ${answers[i]!.body.slice(0, 200)}`).toBe(request.expected),
    );
    // They were served while every stalled body was still open, not after the cut-off freed them.
    expect(Math.max(...answers.map((a) => a.answeredMs))).toBeLessThan(firstCutMs);

    const lastSentMs = Math.max(...slow.map((c) => c.sentMs));
    await pollUntil(
      "every stalled connection to be closed by the server",
      lastSentMs + REQUEST_TIMEOUT_MS + CUT_OFF_SLACK_MS - performance.now(),
      async () => (slow.every((c) => c.closedMs !== null) ? true : undefined),
    ).catch((error: Error) => {
      throw new Error(`${error.message}: ${slow.filter((c) => c.closedMs === null).length} of ${total} still open`);
    });
    const heldMs = slow.map((c) => c.closedMs! - c.sentMs);
    console.log(
      `slow bodies: cut off after ${Math.round(Math.min(...heldMs))}–${Math.round(Math.max(...heldMs))} ms (opened over ${Math.round(allSentMs - slow[0]!.sentMs)} ms)`,
    );
    for (const connection of slow) {
      expect(connection.closedMs! - connection.sentMs).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS + CUT_OFF_SLACK_MS);
      const raw = Buffer.concat(connection.received).toString("utf8");
      const answer = parseRawResponse(raw);
      expect(answer.status, raw.slice(0, 300)).toBe(400);
      const error = (answer.json as { success: boolean; error: { code: string; message: string } }).error;
      expect(error).toMatchObject({ code: "VALIDATION_FAILED", message: "request timeout" });
    }

    // The process lived through it and is ready.
    expect(() => process.kill(server!.pid, 0)).not.toThrow();
    const readiness = await freshRequest(url, "GET /readyz", "GET", "/readyz");
    expect(readiness.status).toBe(200);
  });
});

function countBy(values: number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
