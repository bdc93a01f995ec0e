import { PointsApiError, PointsNetworkError, errorFromResponse } from "./errors.js";

/**
 * HTTP with bounded retries. Only global `fetch`, `AbortSignal` and timers: the same code runs in
 * Node 20+ and in browsers.
 */

export interface RetryOptions {
  /** Attempts per request, the first included. Default 6. */
  maxAttempts?: number;
  /** First backoff step; doubles per attempt. Default 250 ms. */
  baseDelayMs?: number;
  /** Backoff ceiling. Default 10 s. */
  maxDelayMs?: number;
  /** A Retry-After header is honoured up to this long. Default 60 s. */
  maxRetryAfterMs?: number;
  /** Jitter source in [0, 1); Math.random by default. */
  random?: () => number;
  /** How to wait; a timer by default. Tests may record the delays instead. */
  sleep?: (ms: number) => Promise<void>;
}

export interface TransportOptions {
  /** e.g. `http://127.0.0.1:8080`; paths start with `/v1`. */
  baseUrl: string;
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RequestSpec {
  method: Method;
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  token?: string;
  /**
   * Safe to send again when its answer was lost or was a 5xx: true for reads, PUT and DELETE.
   * 429 and 503 are retried regardless: docs/api.md guarantees a rejected request changed nothing.
   */
  idempotent: boolean;
  /** The answer is text (GET /metrics), not the JSON envelope. */
  text?: boolean;
}

export interface Answer<T> {
  body: T;
  /** The server's clock from the Date header when it is readable (not across origins). */
  serverDateMs: number | null;
  /** The Last-Modified header (GET /v1/log/checkpoint: when it was signed), or null. */
  lastModifiedMs: number | null;
}

function headerTimeMs(value: string | null): number | null {
  const ms = value === null ? Number.NaN : Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

const DEFAULTS = {
  maxAttempts: 6,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
  timeoutMs: 30_000,
};

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Transport {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;
  private readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    // Bound to globalThis: browsers throw "Illegal invocation" for a detached fetch.
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    const retry = options.retry ?? {};
    this.retry = {
      maxAttempts: Math.max(1, retry.maxAttempts ?? DEFAULTS.maxAttempts),
      baseDelayMs: retry.baseDelayMs ?? DEFAULTS.baseDelayMs,
      maxDelayMs: retry.maxDelayMs ?? DEFAULTS.maxDelayMs,
      maxRetryAfterMs: retry.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
      random: retry.random ?? Math.random,
      sleep: retry.sleep ?? defaultSleep,
    };
  }

  /** One request with retries; resolves to the JSON body of a 2xx answer. */
  async request<T>(spec: RequestSpec): Promise<T> {
    return (await this.withRetry(spec.idempotent, () => this.exchange<T>(spec))).body;
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, or the attempts run out. Waits between
   * attempts: Retry-After when the server sent one, else exponential backoff with jitter.
   */
  async withRetry<T>(idempotent: boolean, attempt: () => Promise<T>): Promise<T> {
    for (let attemptNumber = 1; ; attemptNumber++) {
      try {
        return await attempt();
      } catch (error) {
        if (!isRetryable(error, idempotent) || attemptNumber >= this.retry.maxAttempts) {
          throw error instanceof PointsNetworkError && attemptNumber > 1
            ? new PointsNetworkError(`no answer after ${attemptNumber} attempts: ${error.message}`, { cause: error.cause })
            : error;
        }
        await this.retry.sleep(this.delayBeforeRetryMs(attemptNumber, error));
      }
    }
  }

  /** Single attempt, no retry. Throws PointsApiError for a non-2xx answer, PointsNetworkError for none. */
  async exchange<T>(spec: RequestSpec): Promise<Answer<T>> {
    const { response, text } = await this.send(spec);
    const answer = {
      serverDateMs: headerTimeMs(response.headers.get("date")),
      lastModifiedMs: headerTimeMs(response.headers.get("last-modified")),
    };
    if (response.ok && spec.text) return { ...answer, body: text as T };
    const body = parseJson(text);
    if (!response.ok) throw errorFromResponse(response.status, body, retryAfterSeconds(response.headers.get("retry-after")));
    if (!isSuccessBody(body)) {
      throw new PointsApiError("INTERNAL", response.status, `HTTP ${response.status} without a success body`);
    }
    return { ...answer, body: body as T };
  }

  /** The request and its whole answer body; any failure on the way is a lost answer. */
  private async send(spec: RequestSpec): Promise<{ response: Response; text: string }> {
    try {
      const response = await this.fetchFn(this.url(spec), {
        method: spec.method,
        headers: headersFor(spec),
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      // Reading the body can fail too (connection cut mid-answer).
      return { response, text: await response.text() };
    } catch (error) {
      throw new PointsNetworkError(`${spec.method} ${spec.path}: ${describe(error)}`, { cause: error });
    }
  }

  private url(spec: RequestSpec): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(spec.query ?? {})) if (value !== undefined) params.set(name, value);
    const query = params.toString();
    return `${this.baseUrl}${spec.path}${query === "" ? "" : `?${query}`}`;
  }

  private delayBeforeRetryMs(attemptNumber: number, error: unknown): number {
    if (error instanceof PointsApiError && error.retryAfterSeconds !== undefined) {
      return Math.min(error.retryAfterSeconds * 1000, this.retry.maxRetryAfterMs);
    }
    const ceiling = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attemptNumber - 1));
    // "Equal jitter": at least half the step, so retries never collapse to zero delay.
    return ceiling / 2 + this.retry.random() * (ceiling / 2);
  }
}

function headersFor(spec: RequestSpec): Record<string, string> {
  const headers: Record<string, string> = { accept: spec.text ? "text/plain" : "application/json" };
  if (spec.body !== undefined) headers["content-type"] = "application/json";
  if (spec.token !== undefined) headers.authorization = `Bearer ${spec.token}`;
  return headers;
}

function isRetryable(error: unknown, idempotent: boolean): boolean {
  if (error instanceof PointsApiError) {
    if (error.status === 429 || error.status === 503) return true;
    return idempotent && error.status >= 500;
  }
  return idempotent && error instanceof PointsNetworkError;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function isSuccessBody(body: unknown): boolean {
  return typeof body === "object" && body !== null && (body as { success?: unknown }).success === true;
}

/** Retry-After is either delay-seconds or an HTTP-date (RFC 9110 §10.2.3). */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const dateMs = Date.parse(header);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, Math.ceil((dateMs - Date.now()) / 1000));
}
