/**
 * How long a batch whose finalization failed is left alone before a claim takes it again. Both
 * adapters store the failure on the batch (finalize_failures, finalize_retry_at_ms,
 * finalize_error) and compute the next attempt in SQL from these constants:
 *
 *   retryAt = failedAt + min(FINALIZE_RETRY_MAX_MS, FINALIZE_RETRY_BASE_MS · 2^(failures before this one))
 *
 * Doubling keeps a batch that keeps failing from costing an attempt every pass (however many
 * batches fail, each costs at most one attempt per backoff), and the cap means a failure that
 * heals (a repaired row, a statement that timed out once) is retried within minutes.
 */
export const FINALIZE_RETRY_BASE_MS = 1000;
export const FINALIZE_RETRY_MAX_MS = 5 * 60 * 1000;
/** Doublings past which the delay is capped anyway (2^9 s > 5 min); bounds the shift in SQL. */
export const FINALIZE_RETRY_MAX_DOUBLINGS = 9;
/** Characters of the error message kept on the batch row for operators. */
export const FINALIZE_ERROR_MAX_CHARS = 500;

/** The error as stored on the failing batch: name and message, bounded. */
export function finalizeErrorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > FINALIZE_ERROR_MAX_CHARS ? `${text.slice(0, FINALIZE_ERROR_MAX_CHARS - 1)}…` : text;
}
