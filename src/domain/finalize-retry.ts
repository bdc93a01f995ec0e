/**
 * How long a batch whose finalization failed is left alone before a claim takes it again
 * (finalizeRetryDelayMs). Both adapters store the failure on the batch (finalize_failures,
 * finalize_retry_at_ms, finalize_error) in one statement, so concurrent failures count exactly;
 * the statement looks the delay up in FINALIZE_RETRY_DELAYS_MS by the failures before this one,
 * and computes nothing itself.
 *
 * Doubling keeps a batch that keeps failing from costing an attempt every pass (however many
 * batches fail, each costs at most one attempt per backoff), and the cap means a failure that
 * heals (a repaired row, a statement that timed out once) is retried within minutes.
 */
export const FINALIZE_RETRY_BASE_MS = 1000;
export const FINALIZE_RETRY_MAX_MS = 5 * 60 * 1000;
/** Doublings past which the delay is capped anyway (2^9 s > 5 min): the length of the table below. */
export const FINALIZE_RETRY_MAX_DOUBLINGS = 9;

/** The delay after a failure that follows `failuresBefore` others: doubling from the base, capped. */
export function finalizeRetryDelayMs(failuresBefore: number): number {
  return Math.min(FINALIZE_RETRY_MAX_MS, FINALIZE_RETRY_BASE_MS * 2 ** Math.min(failuresBefore, FINALIZE_RETRY_MAX_DOUBLINGS));
}

/**
 * finalizeRetryDelayMs(i) at index i, up to FINALIZE_RETRY_MAX_DOUBLINGS; past the end, the last
 * (the cap). What the adapters' SQL indexes with the failures before (capped at the last index).
 */
export const FINALIZE_RETRY_DELAYS_MS: readonly number[] = Array.from({ length: FINALIZE_RETRY_MAX_DOUBLINGS + 1 }, (_, failures) =>
  finalizeRetryDelayMs(failures),
);
/** Characters of the error message kept on the batch row for operators. */
export const FINALIZE_ERROR_MAX_CHARS = 500;

/** The error as stored on the failing batch: name and message, bounded. */
export function finalizeErrorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > FINALIZE_ERROR_MAX_CHARS ? `${text.slice(0, FINALIZE_ERROR_MAX_CHARS - 1)}…` : text;
}
