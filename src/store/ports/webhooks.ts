import type { AddressKey } from "../../domain/address.js";
import type { LedgerEvent } from "../../domain/events.js";
import type {
  AttemptOutcome,
  ClaimedDelivery,
  DeliveryLease,
  DeliveryStatus,
  EndpointOperation,
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointChange,
} from "../../domain/webhooks.js";

/**
 * The webhooks port (docs/api.md, Webhooks): endpoints, their secrets and deliveries. Adapters:
 * sqlite/webhooks.ts and postgres/webhooks.ts, each ending in `satisfies WebhooksStore`; deliveries
 * are fanned out by each adapter's fanOutDeliveries in the transaction that appends the events
 * (ports/events.ts). The endpoint and delivery types are the domain's (domain/webhooks.ts).
 */

export type {
  EndpointOperation,
  AttemptOutcome,
  ClaimedDelivery,
  DeliveryAttempt,
  DeliveryLease,
  DeliveryStatus,
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointChange,
} from "../../domain/webhooks.js";

export interface DeliveryClaim {
  nowMs: number;
  limit: number;
  /**
   * Sends in flight (live leases, every job's) to one endpoint at most after this claim: one
   * endpoint cannot take every slot. An endpoint whose last attempts timed out gets one.
   */
  perEndpointLimit: number;
  /** Sends in flight (live leases, every job's) to the endpoints of one contract at most: one tenant cannot take every slot. */
  perContractLimit: number;
  leaseMs: number;
  /** Endpoints this job already has enough sends in flight to. */
  excludeEndpointIds: readonly string[];
}

export interface DeliveryQuery {
  status?: DeliveryStatus;
  limit: number;
  /** Exclusive: the listing position of the previous page's last delivery (newest first). */
  before?: string;
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[];
  /** Position of the last delivery when more may follow, else null. */
  next: string | null;
}

export type EndpointCreateResult = { kind: "created"; endpoint: WebhookEndpoint } | { kind: "limit_reached" };

export interface WebhookBacklog {
  pending: number;
  oldestPendingCreatedAtMs: number | null;
}

export interface WebhooksStore {
  /** Refused (limit_reached) when the contract already has `maxPerContract` endpoints. */
  createWebhookEndpoint(endpoint: NewWebhookEndpoint, maxPerContract: number): Promise<EndpointCreateResult>;
  listWebhookEndpoints(contract: AddressKey): Promise<WebhookEndpoint[]>;
  getWebhookEndpoint(contract: AddressKey, endpointId: string): Promise<WebhookEndpoint | null>;
  /** Disabling fails the endpoint's PENDING deliveries (recover queues them again); enabling clears disabledReason. */
  updateWebhookEndpoint(
    contract: AddressKey,
    endpointId: string,
    change: WebhookEndpointChange,
    nowMs: number,
  ): Promise<WebhookEndpoint | null>;
  /** Deletes the endpoint and its deliveries; false when there was none. */
  deleteWebhookEndpoint(contract: AddressKey, endpointId: string): Promise<boolean>;
  /** The new secret signs from now on; the current one keeps signing beside it until nowMs + overlapMs. */
  rotateWebhookSecret(contract: AddressKey, endpointId: string, secret: string, nowMs: number, overlapMs: number): Promise<boolean>;
  /** A delivery of `event` (a webhook.test) to that endpoint only; the event is not on any stream. */
  createTestDelivery(contract: AddressKey, endpointId: string, event: LedgerEvent, nowMs: number): Promise<EndpointOperation<string>>;

  /**
   * Claims due deliveries (PENDING, nextAttemptAt ≤ now, no live lease) of enabled endpoints not
   * backed off, within the claim's per-endpoint and per-contract caps on sends in flight:
   * round-robin by endpoint, oldest due first, each leased until nowMs + leaseMs so no other job
   * sends the same attempt meanwhile (PostgreSQL: FOR UPDATE SKIP LOCKED); a lease that runs out
   * (its job died) makes the delivery due again.
   */
  claimDueDeliveries(claim: DeliveryClaim): Promise<ClaimedDelivery[]>;
  /**
   * Extends the leases still held (same claim token) to claimedUntilMs, while their attempts run;
   * returns the ids renewed (one missing lost its lease: another job may be sending it).
   */
  renewDeliveryLeases(leases: readonly DeliveryLease[], claimedUntilMs: number): Promise<string[]>;
  /** Stores the attempt's outcome if the claim is still this job's; false when it is not (the lease ran out). */
  recordDeliveryAttempt(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean>;
  /** Newest first; null when the endpoint is not the contract's. */
  listDeliveries(contract: AddressKey, endpointId: string, query: DeliveryQuery): Promise<DeliveryPage | null>;
  getDelivery(contract: AddressKey, endpointId: string, deliveryId: string): Promise<WebhookDelivery | null>;
  /** Makes the delivery due now (one more attempt for a FAILED one; a SUCCEEDED one is sent again). */
  retryDelivery(contract: AddressKey, endpointId: string, deliveryId: string, nowMs: number): Promise<EndpointOperation<WebhookDelivery>>;
  /** Queues again, with a fresh retry schedule, up to `limit` FAILED deliveries created at or after sinceMs; returns how many. */
  recoverDeliveries(
    contract: AddressKey,
    endpointId: string,
    sinceMs: number,
    nowMs: number,
    limit: number,
  ): Promise<EndpointOperation<number>>;
  /** Deletes up to `limit` SUCCEEDED or FAILED deliveries that finished before the time; returns how many. */
  purgeDeliveries(finishedBeforeMs: number, limit: number): Promise<number>;
  /** PENDING deliveries of the whole database and the creation time of the oldest (metrics). */
  webhookBacklog(): Promise<WebhookBacklog>;
}
