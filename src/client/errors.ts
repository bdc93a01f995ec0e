import { ERROR_CODES, ERROR_STATUS, type ErrorCode, type ErrorDetailsByCode, type FieldError } from "../domain/errors.js";

export type { ErrorCode, ErrorDetailsByCode, FieldError };

/** An error answer of the service, or of something in front of it (a proxy's bare 503). */
export class PointsApiError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly status: number;
  readonly details: ErrorDetailsByCode[C] | undefined;
  /** Seconds from a Retry-After header, when the answer had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: C, status: number, message: string, details?: ErrorDetailsByCode[C], retryAfterSeconds?: number) {
    super(message);
    this.name = "PointsApiError";
    this.code = code;
    this.status = status;
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** Narrows an unknown error to one code, so its `details` are typed. */
  static is<K extends ErrorCode>(error: unknown, code: K): error is PointsApiError<K> {
    return error instanceof PointsApiError && error.code === code;
  }
}

/** The request never got an answer (connection refused or reset, timeout) after every attempt. */
export class PointsNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PointsNetworkError";
  }
}

/** Input rejected by the client before anything was sent; `details` names every offending item. */
export class PointsInputError extends Error {
  readonly details: FieldError[];

  constructor(details: FieldError[], message = `${details.length} invalid input item(s)`) {
    super(message);
    this.name = "PointsInputError";
    this.details = details;
  }
}

/** The listing cursor did not advance: following it would loop forever. */
export class PointsCursorError extends Error {
  constructor(cursor: string) {
    super(`the service returned cursor ${cursor} again; stopping instead of looping`);
    this.name = "PointsCursorError";
  }
}

/**
 * Statuses of gateways in front of the service (a load balancer's 502, a proxy's 503 or 504): retry
 * shortly. A bare 503 is a proxy's: the service's own 503s (UNAVAILABLE, CHAIN_UNAVAILABLE) carry
 * their body, so it is UNAVAILABLE however many codes the catalogue gives 503.
 */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The code of an answer without the catalogue body (a load balancer's HTML 502, a proxy's bare
 * 503), so callers can always switch on `code`: the catalogue's code for that status when only
 * one code has it, else INTERNAL.
 */
function codeForBareStatus(status: number): ErrorCode {
  if (GATEWAY_STATUSES.has(status)) return "UNAVAILABLE";
  const codes = ERROR_CODES.filter((code) => ERROR_STATUS[code] === status);
  return codes.length === 1 ? codes[0]! : "INTERNAL";
}

interface ErrorBody {
  success: false;
  error: { code: string; message: string; details?: unknown };
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== "object" || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string";
}

/** Builds the typed error from a non-2xx answer; `body` is the parsed JSON or null. */
export function errorFromResponse(status: number, body: unknown, retryAfterSeconds: number | undefined): PointsApiError {
  if (isErrorBody(body) && (ERROR_CODES as readonly string[]).includes(body.error.code)) {
    const { code, message, details } = body.error;
    return new PointsApiError(code as ErrorCode, status, message, details as never, retryAfterSeconds);
  }
  return new PointsApiError(codeForBareStatus(status), status, `HTTP ${status} without an API error body`, undefined, retryAfterSeconds);
}
