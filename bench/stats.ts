/** Small numeric helpers for the benchmark; latencies are kept as plain millisecond samples. */

/** The q-quantile (0 ≤ q ≤ 1) of `samples` by nearest rank; NaN when there are none. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Rounds for the summary: figures are noisy well above 0.1 ms or 1 transfer/s. */
export function round(value: number, decimals = 0): number {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined, or throws
 * once `deadlineMs` (epoch) has passed: every wait in the bench has a bound.
 */
export async function pollUntil<T>(what: string, check: () => Promise<T | undefined>, intervalMs: number, deadlineMs: number): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}
