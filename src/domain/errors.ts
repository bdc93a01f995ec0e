/**
 * The error catalogue of API.md: every code with its HTTP status. Handlers throw ApiError; one
 * error handler (src/http/errors.ts) turns it into `{success: false, error: {code, message, details?}}`.
 */

export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  BATCH_ID_EXISTS: 409,
  BATCH_NOT_CANCELLABLE: 409,
  CREDIT_ID_EXISTS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INSUFFICIENT_BALANCE: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  /** Seconds for a Retry-After header (429 and 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, details?: unknown, retryAfterSeconds?: number) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export function validationFailed(details: FieldError[], message = "request validation failed"): ApiError {
  return new ApiError("VALIDATION_FAILED", message, details);
}

export function unauthorized(message = "missing, malformed, unknown or expired bearer token"): ApiError {
  return new ApiError("UNAUTHORIZED", message);
}

export function forbidden(message: string): ApiError {
  return new ApiError("FORBIDDEN", message);
}

export function notFound(message: string): ApiError {
  return new ApiError("NOT_FOUND", message);
}

export function unavailable(message: string, retryAfterSeconds = 1): ApiError {
  return new ApiError("UNAVAILABLE", message, undefined, retryAfterSeconds);
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
