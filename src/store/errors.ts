/** The database cannot be reached or is overloaded; the HTTP layer answers 503 with Retry-After. */
export class StoreUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
