import { createServer, request as upstreamRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP proxy on 127.0.0.1 that injects the faults a real network and load balancer produce,
 * so client retries are tested against the real server:
 * - "drop-response": forward, let the server process the request fully, read its answer, then
 *   cut the client's connection without sending it (the "did it happen?" case);
 * - "reset": cut the connection before forwarding (the server never sees the request);
 * - "unavailable" / "rate-limited": answer 503 / 429 itself, in a bare HTML body as a load
 *   balancer would, with a Retry-After header.
 */

export type Fault = "pass" | "drop-response" | "reset" | "unavailable" | "rate-limited";
export const FAULTS: readonly Fault[] = ["pass", "drop-response", "reset", "unavailable", "rate-limited"];

export interface ProxiedRequest {
  method: string;
  url: string;
  /** 0-based order of arrival. */
  index: number;
}

export interface FaultProxyOptions {
  /** The real server, e.g. http://127.0.0.1:4321. */
  target: string;
  /** Picks the fault for each request; every request passes when absent. */
  decide?: (request: ProxiedRequest) => Fault;
  /** Retry-After of the proxy's own 503/429 answers. Default 0. */
  retryAfterSeconds?: number;
  /** Added before each request is handled: a slow link. Default 0. */
  latencyMs?: number;
}

export interface FaultProxy {
  url: string;
  /** How many requests met each fault. */
  counts: Record<Fault, number>;
  /** Requests forwarded whose answer reached the proxy (passed or dropped). */
  processedByServer: number;
  close(): Promise<void>;
}

/** Headers that describe one hop, not the message. */
const HOP_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection", "upgrade"]);

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  const decide = options.decide ?? (() => "pass");
  const counts = Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<Fault, number>;
  const state = { processedByServer: 0, index: 0 };
  const server = createServer((req, res) => {
    const index = state.index++;
    void handle(req, res, index).catch(() => req.socket.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse, index: number): Promise<void> {
    const body = await readAll(req);
    if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs));
    const fault = decide({ method: req.method ?? "GET", url: req.url ?? "/", index });
    counts[fault]++;
    if (fault === "reset") return void req.socket.destroy();
    if (fault === "unavailable" || fault === "rate-limited")
      return refuse(res, fault === "unavailable" ? 503 : 429, options.retryAfterSeconds ?? 0);
    const answer = await forward(target, req, body);
    state.processedByServer++;
    if (fault === "drop-response") return void req.socket.destroy();
    res.writeHead(answer.status, { ...answer.headers, "content-length": String(answer.body.length) });
    res.end(answer.body);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    get processedByServer() {
      return state.processedByServer;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function refuse(res: ServerResponse, status: 503 | 429, retryAfterSeconds: number): void {
  const text = status === 503 ? "Service Unavailable" : "Too Many Requests";
  const body = `<html><body><h1>${status} ${text}</h1></body></html>`;
  res.writeHead(status, {
    "content-type": "text/html",
    "retry-after": String(retryAfterSeconds),
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

interface Answer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/** Sends the request on to the server and reads its whole answer: the server has processed it. */
function forward(target: URL, req: IncomingMessage, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const upstream = upstreamRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...messageHeaders(req.headers), "content-length": String(body.length) },
      },
      (response) => {
        readAll(response).then(
          (answerBody) => resolve({ status: response.statusCode ?? 502, headers: messageHeaders(response.headers), body: answerBody }),
          reject,
        );
      },
    );
    upstream.on("error", reject);
    upstream.end(body);
  });
}

function messageHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_HEADERS.has(name)) kept[name] = value;
  }
  return kept;
}

/** A deterministic fault plan: each request meets a fault with the given probabilities (seeded). */
export function seededFaults(seed: number, rates: Partial<Record<Exclude<Fault, "pass">, number>>): (request: ProxiedRequest) => Fault {
  const random = mulberry32(seed);
  return () => {
    let roll = random();
    for (const fault of ["drop-response", "reset", "unavailable", "rate-limited"] as const) {
      const rate = rates[fault] ?? 0;
      if (roll < rate) return fault;
      roll -= rate;
    }
    return "pass";
  };
}

/** A small seeded PRNG, so a failing run can be replayed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
