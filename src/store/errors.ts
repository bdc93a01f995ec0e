/** The database cannot be reached or is overloaded; the HTTP layer answers 503 with Retry-After. */
export class StoreUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** SQLite answers BUSY/LOCKED when another process holds the write lock past busy_timeout. */
const SQLITE_TRANSIENT_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_LOCKED"]);

export function isStoreUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && SQLITE_TRANSIENT_CODES.has(code);
}
