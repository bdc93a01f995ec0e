import { randomBytes } from "node:crypto";
import { validationFailed } from "../domain/errors.js";

/** Limits and identifiers the two adapters' webhooks.ts share (as finalize-retry.ts is for batches). */

/** Attempts a delivery keeps in its `attempts` list (the latest ones): a delivery retried by hand for ever stays bounded. */
export const MAX_ATTEMPTS_KEPT = 50;

/** Endpoints with pending deliveries one claim walks at most: bounds the claim's work however many endpoints exist. */
export const MAX_ENDPOINTS_WALKED_PER_CLAIM = 10_000;

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

const POSITION = /^[1-9][0-9]{0,18}$/;

/** A deliveries listing position (the seq of the previous page's last delivery); anything else is 400. */
export function parseDeliveryPosition(position: string): string {
  if (!POSITION.test(position) || BigInt(position) > 2n ** 63n - 1n) {
    throw validationFailed([{ path: "cursor", message: "is not a cursor returned by this service" }]);
  }
  return position;
}
