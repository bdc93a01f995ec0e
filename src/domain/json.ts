import { checksumAddress } from "./address.js";
import { actorJson } from "./actors.js";
import type { ApiKey } from "./api-keys.js";
import type { Batch } from "./batch.js";
import { formatPoints } from "./points.js";

/**
 * Domain objects → the JSON shapes of docs/api.md, shared by HTTP answers and stored events (an
 * event's `data.batch` is exactly what GET …/batches/{id} shows, without transfers).
 */

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}

export type BatchJson = ReturnType<typeof batchJson>;

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
    submittedBy: actorJson(batch.submittedBy),
    cancelledBy: batch.cancelledBy === null ? null : actorJson(batch.cancelledBy),
  };
}

export type ApiKeyJson = ReturnType<typeof apiKeyJson>;

/** The ApiKey object of API.md ("API keys (backends)"); never a secret, which is not stored. */
export function apiKeyJson(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    scopes: [...key.scopes],
    prefix: key.prefix,
    createdAt: isoTime(key.createdAtMs),
    createdBy: actorJson(key.createdBy),
    expiresAt: isoOrNull(key.expiresAtMs),
    lastUsedAt: isoOrNull(key.lastUsedAtMs),
    revokedAt: isoOrNull(key.revokedAtMs),
    revokedReason: key.revokedReason,
  };
}
