import { randomBytes } from "node:crypto";
import { DELIVERY_SEQ_PART, checkedParts, invalidCursor } from "./cursor.js";

/** Limits and identifiers the two adapters' webhooks.ts share (as finalize-retry.ts is for batches). */

/** Attempts a delivery keeps in its `attempts` list (the latest ones): a delivery retried by hand for ever stays bounded. */
export const MAX_ATTEMPTS_KEPT = 50;

/** Endpoints with pending deliveries one claim walks at most: bounds the claim's work however many endpoints exist. */
export const MAX_ENDPOINTS_WALKED_PER_CLAIM = 10_000;

/** The first timeout of an endpoint holds its deliveries back this long; each further one in a row doubles it. */
export const ENDPOINT_BACKOFF_BASE_MS = 1000;
/** The longest an endpoint that keeps timing out is held back between attempts. */
export const ENDPOINT_BACKOFF_MAX_MS = 60_000;

/**
 * How long an endpoint is held back after its `timeoutsInRow`-th attempt in a row without an
 * answer: a receiver that holds connections open is tried less and less often (and one send at a
 * time), so its sends stop filling the job's slots; the first answer ends it.
 */
export function endpointBackoffMs(timeoutsInRow: number): number {
  if (timeoutsInRow <= 0) return 0;
  return Math.min(ENDPOINT_BACKOFF_MAX_MS, ENDPOINT_BACKOFF_BASE_MS * 2 ** Math.min(timeoutsInRow - 1, 30));
}

/** `we_` + 24 hex digits. */
export const ENDPOINT_ID_PATTERN = "^we_[0-9a-f]{24}$";
/** `wd_` + 32 hex digits. */
export const DELIVERY_ID_PATTERN = "^wd_[0-9a-f]{32}$";

export function newEndpointId(): string {
  return `we_${randomBytes(12).toString("hex")}`;
}

export function newDeliveryId(): string {
  return `wd_${randomBytes(16).toString("hex")}`;
}

/** A deliveries listing position (the seq of the previous page's last delivery), by the deliveries cursor's part schema; anything else is 400. */
export function parseDeliveryPosition(position: string): string {
  if (checkedParts(position, [DELIVERY_SEQ_PART]) === null || position.startsWith("0")) throw invalidCursor("cursor", position);
  return position;
}
