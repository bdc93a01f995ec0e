import { unavailable, validationFailed } from "../domain/errors.js";
import { zonedTimeMessage } from "../domain/messages.js";
import { zonedTimeMs } from "../domain/times.js";
import type { LeaderboardsStore } from "../store/ports/leaderboards.js";

/**
 * Leaderboards and `asOf` balances read the history tables, which the history job fills for the
 * batches finalized before they existed (history_backfill). Until it is done they would answer
 * wrong figures, so they answer 503 instead. Once the backfill is seen empty it never fills again
 * (only the migration writes it), so that is remembered per store and costs no further read.
 */

/** How long a client waits before asking again while history is being built. */
export const HISTORY_BUILDING_RETRY_AFTER_SECONDS = 10;

export const HISTORY_BUILDING_MESSAGE =
  "history is being built (batches finalized before this version are being added to the leaderboards and balance history); retry shortly";

const built = new WeakSet<object>();

/** Resolves when history is complete; throws 503 UNAVAILABLE with Retry-After while batches remain to add. */
export async function requireHistory(store: Pick<LeaderboardsStore, "historyBackfillRemaining">): Promise<void> {
  if (built.has(store)) return;
  const remaining = await store.historyBackfillRemaining();
  if (remaining > 0) throw unavailable(`${HISTORY_BUILDING_MESSAGE} (${remaining} batch(es) left)`, HISTORY_BUILDING_RETRY_AFTER_SECONDS);
  built.add(store);
}

/**
 * The `asOf` of a balances read (API.md "Leaderboards and history") in epoch ms: a time with its
 * zone that names a real moment, not after `nowMs` (a balance of the future is not known yet).
 */
export function asOfMsOf(asOf: string, nowMs: number): number {
  const ms = zonedTimeMs(asOf);
  if (ms === null) throw validationFailed([{ path: "asOf", message: zonedTimeMessage(asOf) }]);
  if (ms > nowMs) throw validationFailed([{ path: "asOf", message: `${asOf} is in the future: balances are known up to now` }]);
  return ms;
}
