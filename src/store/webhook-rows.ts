import type { AddressKey } from "../domain/address.js";
import type { EventType, StreamEventType } from "../domain/events.js";
import {
  liveSecrets,
  type ClaimedDelivery,
  type DeliveryAttempt,
  type DeliveryStatus,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../domain/webhooks.js";

/**
 * The webhook rows both adapters read, translated once: each adapter's webhooks.ts reads the
 * columns its driver returns in a type of its own (a BIGINT is a bigint in better-sqlite3, a string
 * in pg; types are JSON text in SQLite, text[] in PostgreSQL) and passes them here converted.
 */

export const ENDPOINT_COLUMNS = "id, contract, url, types, description, disabled, disabled_reason, created_at_ms";

/** The text columns of webhook_endpoints, the same in both databases. */
export interface EndpointText {
  id: string;
  contract: string;
  url: string;
  description: string | null;
  disabled_reason: string | null;
}

export function endpointOf(
  row: EndpointText,
  converted: { types: readonly StreamEventType[] | null; disabled: boolean; createdAtMs: number },
): WebhookEndpoint {
  return {
    ...converted,
    id: row.id,
    contract: row.contract as AddressKey,
    url: row.url,
    description: row.description,
    disabledReason: row.disabled_reason,
  };
}

/** The text columns of webhook_deliveries a listing reads. */
export interface DeliveryText {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: string;
}

export function deliveryOf(
  row: DeliveryText,
  converted: { attempts: DeliveryAttempt[]; nextAttemptAtMs: number | null; createdAtMs: number },
): WebhookDelivery {
  return {
    ...converted,
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type as EventType,
    status: row.status as DeliveryStatus,
  };
}

/** The text columns a claim reads of a delivery and its endpoint. */
export interface ClaimText {
  id: string;
  endpoint_id: string;
  url: string;
  event_id: string;
  payload: string;
  secret: string;
  previous_secret: string | null;
}

export function claimedOf(
  row: ClaimText,
  converted: { tries: number; previousSecretExpiresAtMs: number | null; claimToken: string; claimedUntilMs: number; nowMs: number },
): ClaimedDelivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    url: row.url,
    eventId: row.event_id,
    payload: row.payload,
    tries: converted.tries,
    secrets: liveSecrets(row.secret, row.previous_secret, converted.previousSecretExpiresAtMs, converted.nowMs),
    claimToken: converted.claimToken,
    claimedUntilMs: converted.claimedUntilMs,
  };
}
