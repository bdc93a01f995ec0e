import type { AttemptOutcome, DeliveryAttempt } from "../domain/webhooks.js";

/**
 * What follows an attempt (docs/api.md Webhooks): a 2xx is success; a 410 disables the endpoint at
 * once; anything else is retried after the next wait of the schedule (±20 % jitter, never sooner
 * than the receiver's Retry-After, bounded), and after the last wait's try the delivery FAILED.
 * Pure: the delivery job passes the clock's result and the random draw.
 */

/** ± fraction of each wait, so receivers recovering from an outage are not hit by every retry at once. */
export const RETRY_JITTER = 0.2;
/** A receiver's Retry-After is honoured up to this; a longer one is cut to it. */
export const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

export interface SendResult {
  atMs: number;
  /** null: no answer (timeout, refused connection or address); `error` says why. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The receiver's Retry-After in seconds, when it sent a valid one. */
  retryAfterSeconds: number | null;
  /** No answer within the send timeout (the endpoint holds connections open): the endpoint is slowed down. */
  timedOut: boolean;
}

export function isSuccess(statusCode: number | null): boolean {
  return statusCode !== null && statusCode >= 200 && statusCode <= 299;
}

/**
 * `tries`: attempts before this one in the current round (0 for the first). With a schedule of
 * n waits a delivery is tried at most n + 1 times per round.
 */
export function decideOutcome(tries: number, scheduleSeconds: readonly number[], result: SendResult, random: number): AttemptOutcome {
  const attempt: DeliveryAttempt = { atMs: result.atMs, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
  const { timedOut } = result;
  if (isSuccess(result.statusCode)) return { attempt, status: "SUCCEEDED", nextAttemptAtMs: null, disableEndpoint: null, timedOut };
  if (result.statusCode === 410) {
    const reason = `the endpoint answered 410 Gone at ${new Date(result.atMs).toISOString()}`;
    return { attempt, status: "FAILED", nextAttemptAtMs: null, disableEndpoint: reason, timedOut };
  }
  const waitSeconds = scheduleSeconds[tries];
  if (waitSeconds === undefined) return { attempt, status: "FAILED", nextAttemptAtMs: null, disableEndpoint: null, timedOut };
  const jitteredMs = Math.round(waitSeconds * 1000 * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
  const askedMs = result.retryAfterSeconds === null ? 0 : Math.min(result.retryAfterSeconds, MAX_RETRY_AFTER_SECONDS) * 1000;
  const nextAttemptAtMs = result.atMs + result.durationMs + Math.max(jitteredMs, askedMs);
  return { attempt, status: "PENDING", nextAttemptAtMs, disableEndpoint: null, timedOut };
}

/** Retry-After as seconds from `nowMs`: delta-seconds or an HTTP date; anything else is ignored (null). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^[0-9]{1,10}$/.test(text)) return Number(text);
  const dateMs = Date.parse(text);
  if (Number.isNaN(dateMs) || !/[a-z]/i.test(text)) return null;
  return Math.max(0, Math.ceil((dateMs - nowMs) / 1000));
}
