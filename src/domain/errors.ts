import type { BatchStatus } from "./batch.js";
import { MAX_VALIDATION_DETAILS } from "./limits.js";

/**
 * The error catalogue of docs/api.md, declared once: every code with its HTTP status, its default
 * message and the type of its `details`. Handlers throw ApiError; one error handler
 * (src/http/errors.ts) turns it into `{success: false, error: {code, message, details?}}`, and the
 * client (src/client/errors.ts) reads answers with the same declarations.
 */
export const ERROR_CATALOGUE = {
  VALIDATION_FAILED: { status: 400, message: "request validation failed" },
  UNAUTHORIZED: { status: 401, message: "missing, malformed, unknown or expired bearer token" },
  FORBIDDEN: { status: 403, message: "not allowed with this token" },
  NOT_FOUND: { status: 404, message: "not found" },
  BATCH_ID_EXISTS: { status: 409, message: "this contract already used the batchId" },
  BATCH_NOT_CANCELLABLE: { status: 409, message: "the batch can no longer be cancelled" },
  CREDIT_ID_EXISTS: { status: 409, message: "the creditId is already used" },
  SNAPSHOT_ID_EXISTS: { status: 409, message: "the snapshotId is already used" },
  OPERATORS_ON_CHAIN: { status: 409, message: "operators come from the chain (CHAIN_RPC_URL): an administrator does not set them" },
  NOT_YET_LOGGED: { status: 409, message: "the event is not yet in a transparency log checkpoint of that size" },
  CURSOR_EXPIRED: { status: 410, message: "the events cursor is older than the retained events" },
  PAYLOAD_TOO_LARGE: { status: 413, message: "request body exceeds the size limit" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: "the body must be application/json" },
  INSUFFICIENT_BALANCE: { status: 422, message: "the batch total exceeds the available balance" },
  RATE_LIMITED: { status: 429, message: "rate limit exceeded" },
  INTERNAL: { status: 500, message: "internal error" },
  UNAVAILABLE: { status: 503, message: "the service is unavailable, retry shortly" },
  CHAIN_UNAVAILABLE: { status: 503, message: "the chain's RPC endpoint did not answer in time, or answered an error" },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

export const ERROR_STATUS = Object.fromEntries(ERROR_CODES.map((code) => [code, ERROR_CATALOGUE[code].status])) as {
  [C in ErrorCode]: (typeof ERROR_CATALOGUE)[C]["status"];
};

export interface FieldError {
  path: string;
  message: string;
}

/** What `details` holds for each code (undefined: none). */
export interface ErrorDetailsByCode {
  VALIDATION_FAILED: FieldError[];
  UNAUTHORIZED: undefined;
  /** A route outside an API key's scopes names the scope it needs; other 403s carry none. */
  FORBIDDEN: { requiredScope: string } | undefined;
  NOT_FOUND: undefined;
  BATCH_ID_EXISTS: { batchId: string; status: BatchStatus; matchesRequest: boolean };
  BATCH_NOT_CANCELLABLE: { batchId: string; status: BatchStatus };
  CREDIT_ID_EXISTS: { creditId: string; matchesRequest: boolean };
  SNAPSHOT_ID_EXISTS: { snapshotId: string; matchesRequest: boolean };
  OPERATORS_ON_CHAIN: undefined;
  NOT_YET_LOGGED: undefined;
  CURSOR_EXPIRED: undefined;
  PAYLOAD_TOO_LARGE: undefined;
  UNSUPPORTED_MEDIA_TYPE: undefined;
  INSUFFICIENT_BALANCE: { available: string; requested: string };
  RATE_LIMITED: undefined;
  INTERNAL: undefined;
  UNAVAILABLE: undefined;
  CHAIN_UNAVAILABLE: undefined;
}

/** Path of the last `details` entry when the list was cut at MAX_VALIDATION_DETAILS. */
export const MORE_DETAILS_PATH = "(more)";

export class ApiError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly status: number;
  readonly details: ErrorDetailsByCode[C] | undefined;
  /** Seconds for a Retry-After header (429 and 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: C, message: string = ERROR_CATALOGUE[code].message, details?: ErrorDetailsByCode[C], retryAfterSeconds?: number) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * VALIDATION_FAILED naming each offending field, at most MAX_VALIDATION_DETAILS of them: a longer
 * list ends with one `(more)` entry saying how many more were found, so a hostile body cannot make
 * the answer (or its serialization) grow with its size.
 */
export function validationFailed(details: FieldError[], message: string = ERROR_CATALOGUE.VALIDATION_FAILED.message): ApiError {
  return new ApiError("VALIDATION_FAILED", message, capDetails(details));
}

export function capDetails(details: FieldError[], moreCount = 0): FieldError[] {
  // Lists already cut (a schema's findings joined by rule checks) carry their count in their
  // `(more)` entry: fold it back in, so joining and cutting again never loses it.
  let more = moreCount;
  const listed: FieldError[] = [];
  for (const detail of details) {
    if (detail.path === MORE_DETAILS_PATH) more += Number(MORE_COUNT.exec(detail.message)?.[1] ?? 0);
    else listed.push(detail);
  }
  const extra = Math.max(0, listed.length - MAX_VALIDATION_DETAILS) + more;
  if (extra === 0) return listed;
  const kept = listed.slice(0, MAX_VALIDATION_DETAILS);
  kept.push({ path: MORE_DETAILS_PATH, message: `${extra} more offending field${extra === 1 ? " was" : "s were"} found` });
  return kept;
}

const MORE_COUNT = /^(\d+) more/;

export function unauthorized(message: string = ERROR_CATALOGUE.UNAUTHORIZED.message): ApiError {
  return new ApiError("UNAUTHORIZED", message);
}

export function forbidden(message: string, details?: ErrorDetailsByCode["FORBIDDEN"]): ApiError {
  return new ApiError("FORBIDDEN", message, details);
}

export function notFound(message: string): ApiError {
  return new ApiError("NOT_FOUND", message);
}

export function unavailable(message: string, retryAfterSeconds = 1): ApiError {
  return new ApiError("UNAVAILABLE", message, undefined, retryAfterSeconds);
}

/** CHAIN_UNAVAILABLE (API.md, Operators on chain): never a guess, always a Retry-After. */
export function chainUnavailable(message: string, retryAfterSeconds: number): ApiError {
  return new ApiError("CHAIN_UNAVAILABLE", message, undefined, Math.max(1, Math.ceil(retryAfterSeconds)));
}

/** RATE_LIMITED with its Retry-After (at least 1 s: a 0 would invite an immediate retry into the same budget). */
export function rateLimited(retryAfterSeconds: number, message: string = ERROR_CATALOGUE.RATE_LIMITED.message): ApiError {
  return new ApiError("RATE_LIMITED", message, undefined, Math.max(1, retryAfterSeconds));
}

/**
 * A broken ledger invariant. Kept on in production: the operation stops instead of writing a
 * wrong ledger (the store's transaction rolls back).
 */
export class InvariantViolation extends Error {
  constructor(message: string) {
    super(`ledger invariant violated: ${message}`);
    this.name = "InvariantViolation";
  }
}

export function assertInvariant(condition: boolean, message: string): asserts condition {
  if (!condition) throw new InvariantViolation(message);
}
