import { checksumAddress } from "../domain/address.js";
import type { Batch, BatchWithTransfers } from "../domain/batch.js";
import { formatPoints } from "../domain/points.js";
import { availableOf, type Balance, type Balances } from "../store/store.js";

/** Domain objects → the JSON shapes of API.md. */

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}

export function batchJson(batch: Batch) {
  return {
    id: batch.batchId,
    contractAddress: checksumAddress(batch.contract),
    pointType: batch.pointType,
    status: batch.status,
    points: formatPoints(batch.total),
    transferCount: batch.transferCount,
    secondsToFinalize: batch.secondsToFinalize,
    createdAt: isoTime(batch.createdAtMs),
    finalizeAt: isoTime(batch.finalizeAtMs),
    updatedAt: isoOrNull(batch.updatedAtMs),
    finalizedAt: isoOrNull(batch.finalizedAtMs),
    cancelledAt: isoOrNull(batch.cancelledAtMs),
  };
}

export function batchWithTransfersJson(batch: BatchWithTransfers) {
  return {
    ...batchJson(batch),
    transfers: batch.transfers.map((t) => ({ toAddress: checksumAddress(t.toAddress), points: formatPoints(t.amount) })),
  };
}

function balanceJson(balance: Balance) {
  return {
    available: formatPoints(availableOf(balance)),
    pendingSent: formatPoints(balance.pendingSent),
    earnedCumulative: formatPoints(balance.earnedCumulative),
    receivedCumulative: formatPoints(balance.receivedCumulative),
    finalizedSentCumulative: formatPoints(balance.finalizedSentCumulative),
  };
}

export function balancesJson(balances: Balances) {
  return { PHASE2_POINTS: balanceJson(balances.PHASE2_POINTS), PHASE2_GOLD: balanceJson(balances.PHASE2_GOLD) };
}
