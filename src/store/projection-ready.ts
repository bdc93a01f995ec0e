import { unavailable } from "../domain/errors.js";
import { HISTORY_BUILDING_RETRY_AFTER_SECONDS } from "../domain/limits.js";
import { historyBuildingMessage } from "../domain/messages.js";
import type { LeaderboardsStore } from "./ports/leaderboards.js";

/**
 * Leaderboards, `asOf` balances and `asOf` snapshots read the history tables, which the history
 * job fills for the batches finalized before they existed (history_backfill). Until it is done
 * they would answer wrong figures, so they answer 503 instead. Once the backfill is seen empty it
 * never fills again (only the migration writes it), so that is remembered per store and costs no
 * further read.
 */
const built = new WeakSet<object>();

/** Resolves when history is complete; throws 503 UNAVAILABLE with Retry-After while batches remain to add. */
export async function requireHistory(store: Pick<LeaderboardsStore, "historyBackfillRemaining">): Promise<void> {
  if (built.has(store)) return;
  const remaining = await store.historyBackfillRemaining();
  if (remaining > 0) throw unavailable(historyBuildingMessage(remaining), HISTORY_BUILDING_RETRY_AFTER_SECONDS);
  built.add(store);
}
