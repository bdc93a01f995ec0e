import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { ClaimedDelivery } from "../store/store.js";
import { parseRetryAfter, type SendResult } from "./schedule.js";
import { signatureHeader } from "./signing.js";
import { RefusedTarget, resolveTarget, type ResolvedTarget } from "./ssrf.js";

/** docs/api.md Webhooks: an answer must come within 15 s. */
export const SEND_TIMEOUT_MS = 15_000;
const USER_AGENT = "points-ledger-webhooks/1";

export interface SendOptions {
  allowPrivateUrls: boolean;
  timeoutMs: number;
  now: () => number;
  /** Aborts the send (shutdown); the attempt is reported as failed. */
  signal?: AbortSignal;
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
  const finish = (statusCode: number | null, error: string | null, retryAfterSeconds: number | null = null): SendResult => ({
    atMs,
    statusCode,
    error,
    // Rounded down: atMs + durationMs never lies after the moment the outcome is stored, so a retry
    // with no wait is due at once (rounding up made it due 1 ms late and runOnce stopped short).
    durationMs: Math.max(0, Math.floor(performance.now() - started)),
    retryAfterSeconds,
  });
  try {
    const target = await resolveTarget(delivery.url, options.allowPrivateUrls);
    const timestampSeconds = Math.floor(options.now() / 1000);
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(delivery.payload)),
      "user-agent": USER_AGENT,
      "webhook-id": delivery.eventId,
      "webhook-timestamp": String(timestampSeconds),
      "webhook-signature": signatureHeader(delivery.secrets, delivery.eventId, timestampSeconds, delivery.payload),
    };
    const answer = await post(target, headers, delivery.payload, options.timeoutMs, options.signal);
    const redirect = answer.statusCode >= 300 && answer.statusCode <= 399;
    const error = redirect ? `redirect${answer.location ? ` to ${answer.location.slice(0, 200)}` : ""} not followed` : null;
    return finish(answer.statusCode, error, parseRetryAfter(answer.retryAfter, options.now()));
  } catch (error) {
    return finish(null, options.signal?.aborted ? "aborted: the service shut down" : describeFailure(error, options.timeoutMs));
  }
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof RefusedTarget) return `target refused: ${error.message}`;
  const { name, code, message } = error as NodeJS.ErrnoException;
  if (name === "AbortError" || name === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`;
  return code ? `${code}: ${message}` : message;
}

/** POST to the checked address: the lookup below hands Node that address, whatever DNS says now. */
function post(
  target: ResolvedTarget,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  abort?: AbortSignal,
): Promise<Answer> {
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const transport = target.url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(
      target.url,
      {
        method: "POST",
        headers,
        agent: false,
        lookup: pinned,
        signal: abort ? AbortSignal.any([AbortSignal.timeout(timeoutMs), abort]) : AbortSignal.timeout(timeoutMs),
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
