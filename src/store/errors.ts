/**
 * The database cannot be reached, is overloaded, or cannot write (full disk, read-only file);
 * the HTTP layer answers 503 with Retry-After. Each adapter translates its own driver's errors
 * into this one (postgres/db.ts and sqlite/db.ts toStoreError), so nothing above the store
 * needs to know a database's error codes.
 */
export class StoreUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
