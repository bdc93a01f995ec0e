import { unavailable } from "../domain/errors.js";
import { PROJECTION_BEHIND_RETRY_AFTER_SECONDS } from "../domain/limits.js";
import { projectionBehindMessage } from "../domain/messages.js";
import type { LeaderboardsStore } from "./ports/leaderboards.js";

/**
 * A snapshot as of a time reads received_daily page by page, which holds the batches the
 * projection has applied (src/ledger/projection.ts). asOf is at least SNAPSHOT_AS_OF_MIN_AGE_MS
 * old, so every batch finalized by then has committed (domain/limits.ts): when none of them is
 * still queued, received_daily holds them all, whatever the projection's through (an idle service,
 * or one whose jobs run elsewhere). The projection stands within a second of the finalizations
 * under normal load; under a backlog longer than that the snapshot answers 503 with Retry-After
 * rather than a tree that misses receipts. (A single address's balance asOf adds the queued
 * batches instead: src/store/<adapter>/history.ts.)
 */
export async function requireProjectedThrough(store: Pick<LeaderboardsStore, "projectionState">, asOfMs: number): Promise<void> {
  const { throughMs, queued, oldestQueuedMs } = await store.projectionState();
  if (oldestQueuedMs !== null && oldestQueuedMs <= asOfMs) {
    throw unavailable(projectionBehindMessage(throughMs, queued), PROJECTION_BEHIND_RETRY_AFTER_SECONDS);
  }
}
