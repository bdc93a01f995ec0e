import http from "node:http";
import https from "node:https";
import { Socket, type LookupFunction } from "node:net";
import type { Duplex } from "node:stream";
import type { ClaimedDelivery } from "../domain/webhooks.js";
import { parseRetryAfter, type SendResult } from "./retry-schedule.js";
import { signatureHeader } from "./signing.js";
import { assertAllowedAddress, literalAddress, parseTargetUrl, RefusedTarget, resolveAll, systemResolver, type Resolver } from "./ssrf.js";

const USER_AGENT = "points-ledger-webhooks/1";

export interface SendOptions {
  allowPrivateUrls: boolean;
  timeoutMs: number;
  now: () => number;
  /** Aborts the send (shutdown); the attempt is reported as failed. */
  signal?: AbortSignal;
  /** How host names resolve (the system resolver by default; tests map names to chosen addresses). */
  resolver?: Resolver;
}

interface Answer {
  statusCode: number;
  retryAfter: string | undefined;
  location: string | undefined;
}

/**
 * One attempt: check the target again (its DNS may have changed since creation), POST the Event
 * JSON with the Standard Webhooks headers to the address that was checked, and report what came
 * back. Redirects are never followed (node:http does not follow them): a 3xx is a failed attempt.
 * Never throws: every failure is a result with `statusCode: null` and an error text.
 */
export async function sendDelivery(delivery: ClaimedDelivery, options: SendOptions): Promise<SendResult> {
  const atMs = options.now();
  const started = performance.now();
  const finish = (
    statusCode: number | null,
    error: string | null,
    retryAfterSeconds: number | null = null,
    timedOut = false,
  ): SendResult => ({
    atMs,
    statusCode,
    error,
    timedOut,
    // Rounded down: atMs + durationMs never lies after the moment the outcome is stored, so a retry
    // with no wait is due at once (rounding up made it due 1 ms late and runOnce stopped short).
    durationMs: Math.max(0, Math.floor(performance.now() - started)),
    retryAfterSeconds,
  });
  try {
    const url = parseTargetUrl(delivery.url);
    const literal = literalAddress(url);
    if (literal !== null && !options.allowPrivateUrls) assertAllowedAddress(literal, url.hostname);
    const timestampSeconds = Math.floor(options.now() / 1000);
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(delivery.payload)),
      "user-agent": USER_AGENT,
      "webhook-id": delivery.eventId,
      "webhook-timestamp": String(timestampSeconds),
      "webhook-signature": signatureHeader(delivery.secrets, delivery.eventId, timestampSeconds, delivery.payload),
    };
    const answer = await post(url, headers, delivery.payload, options);
    const redirect = answer.statusCode >= 300 && answer.statusCode <= 399;
    const error = redirect ? `redirect${answer.location ? ` to ${answer.location.slice(0, 200)}` : ""} not followed` : null;
    return finish(answer.statusCode, error, parseRetryAfter(answer.retryAfter, options.now()));
  } catch (error) {
    if (options.signal?.aborted) return finish(null, "aborted: the service shut down or the claim was lost");
    return finish(null, describeFailure(error, options.timeoutMs), null, isTimeout(error));
  }
}

/** An abort not asked for by the caller's signal: the send timeout ran out. */
function isTimeout(error: unknown): boolean {
  const { name } = error as Error;
  return name === "AbortError" || name === "TimeoutError";
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof RefusedTarget) return `target refused: ${error.message}`;
  if (isTimeout(error)) return `no answer within ${timeoutMs / 1000} s`;
  const { code, message } = error as NodeJS.ErrnoException;
  return code ? `${code}: ${message}` : message;
}

/**
 * A lookup for the connection itself: every address the name resolves to is checked (one refused
 * address refuses the send) right before Node connects to the one handed back, so what was
 * checked is what is connected to, whatever DNS said at creation (rebinding).
 */
function checkedLookup(resolver: Resolver): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveAll(hostname, resolver).then(
      (addresses) => {
        try {
          for (const { address } of addresses) assertAllowedAddress(address, hostname);
        } catch (error) {
          callback(error as NodeJS.ErrnoException, "", 0);
          return;
        }
        const family = (entry: { family: number }) => (entry.family === 6 ? 6 : 4);
        if (lookupOptions.all)
          callback(
            null,
            addresses.map((entry) => ({ address: entry.address, family: family(entry) })),
          );
        else callback(null, addresses[0]!.address, family(addresses[0]!));
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, "", 0),
    );
  };
}

/**
 * The last check, on the address the socket actually reached: registered before anything else
 * listens for "connect", so a refused peer is dropped before the request is written to it.
 */
function checkPeer(connection: Duplex | null | undefined): Duplex | null | undefined {
  // Both agents make net.Socket connections (a TLSSocket is one); anything else cannot be checked.
  if (!(connection instanceof Socket)) {
    connection?.destroy(new RefusedTarget("the connection cannot be checked", true));
    return connection;
  }
  const socket = connection;
  socket.once("connect", () => {
    const peer = socket.remoteAddress;
    try {
      if (peer === undefined) throw new RefusedTarget("the connection has no peer address", true);
      assertAllowedAddress(peer, peer);
    } catch (error) {
      socket.destroy(error as Error);
    }
  });
  return socket;
}

/** Agents whose every connection is checked by checkPeer; no keep-alive, as with `agent: false`. */
class CheckedHttpAgent extends http.Agent {
  override createConnection(...args: Parameters<http.Agent["createConnection"]>): ReturnType<http.Agent["createConnection"]> {
    return checkPeer(super.createConnection(...args));
  }
}
class CheckedHttpsAgent extends https.Agent {
  override createConnection(...args: Parameters<https.Agent["createConnection"]>): ReturnType<https.Agent["createConnection"]> {
    return checkPeer(super.createConnection(...args));
  }
}
/** Exported for the tests of the connect-time check. */
export const checkedAgents = { http: new CheckedHttpAgent(), https: new CheckedHttpsAgent() };

/** POST to `url`; without allowPrivateUrls, the connection is checked as it is made (checkedLookup, checkPeer). */
function post(url: URL, headers: Record<string, string>, body: string, options: SendOptions): Promise<Answer> {
  const secure = url.protocol === "https:";
  const transport = secure ? https : http;
  const checked = !options.allowPrivateUrls;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  return new Promise((resolve, reject) => {
    const request = transport.request(
      url,
      {
        method: "POST",
        headers,
        agent: checked ? (secure ? checkedAgents.https : checkedAgents.http) : false,
        lookup: checked ? checkedLookup(options.resolver ?? systemResolver) : undefined,
        signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
      },
      (response) => {
        // The status is the answer; the body is not read (a receiver cannot make us hold it).
        resolve({
          statusCode: response.statusCode ?? 0,
          retryAfter: headerText(response.headers["retry-after"]),
          location: headerText(response.headers.location),
        });
        response.destroy();
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
