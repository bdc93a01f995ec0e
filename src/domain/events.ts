import { checksumAddress, type AddressKey } from "./address.js";
import type { Batch, PointType } from "./batch.js";
import type { ApiKey } from "./api-keys.js";
import { apiKeyJson, batchJson, isoTime, type ApiKeyJson, type BatchJson } from "./json.js";
import { formatPoints } from "./points.js";

/**
 * Ledger events (docs/api.md, Events): every change of the ledger is one, written by the store in the
 * same transaction as the change (an outbox), so an event exists if and only if its change
 * committed. They are built here, once, by the transitions of ./transitions.ts.
 */

export const EVENT_TYPES = [
  "batch.accepted",
  "batch.cancelled",
  "batch.finalized",
  "credit.created",
  "operator.changed",
  "webhook.test",
  "snapshot.created",
  "api_key.created",
  "api_key.revoked",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Types a contract's stream (and a webhook endpoint's `types`) can name; webhook.test goes to one endpoint, snapshot.created to the admin stream. */
export const STREAM_EVENT_TYPES = [
  "batch.accepted",
  "batch.cancelled",
  "batch.finalized",
  "credit.created",
  "operator.changed",
  "api_key.created",
  "api_key.revoked",
] as const;
export type StreamEventType = (typeof STREAM_EVENT_TYPES)[number];

export interface EventDataByType {
  "batch.accepted": { batch: BatchJson };
  "batch.cancelled": { batch: BatchJson };
  "batch.finalized": { batch: BatchJson };
  "credit.created": { creditId: string; pointType: PointType; points: string; asset: string | null; block: number | null };
  "operator.changed": { operatorAddress: string; previousOperatorAddress: string | null };
  "webhook.test": { endpointId: string };
  "snapshot.created": { snapshot: Record<string, unknown> };
  "api_key.created": { apiKey: ApiKeyJson };
  "api_key.revoked": { apiKey: ApiKeyJson };
}

/** An event as the store appends it; `stream` is the address whose stream it is on, null for admin-only events. */
export interface LedgerEvent<T extends EventType = EventType> {
  id: string;
  type: T;
  stream: AddressKey | null;
  occurredAtMs: number;
  data: EventDataByType[T];
}

/** `evt_` + 32 hex digits: unique, never reused; also the `webhook-id` of its deliveries. */
export function newEventId(): string {
  return `evt_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
}

function event<T extends EventType>(type: T, stream: AddressKey | null, occurredAtMs: number, data: EventDataByType[T]): LedgerEvent<T> {
  return { id: newEventId(), type, stream, occurredAtMs, data };
}

/** batch.accepted, batch.cancelled or batch.finalized: the batch as it is after the change, on its contract's stream. */
export function batchEvent(
  type: "batch.accepted" | "batch.cancelled" | "batch.finalized",
  batch: Batch,
  occurredAtMs: number,
): LedgerEvent {
  return event(type, batch.contract, occurredAtMs, { batch: batchJson(batch) });
}

export interface CreditFacts {
  address: AddressKey;
  creditId: string;
  pointType: PointType;
  amount: bigint;
  asset?: string | null;
  block?: number | null;
}

export function creditCreated(credit: CreditFacts, occurredAtMs: number): LedgerEvent<"credit.created"> {
  return event("credit.created", credit.address, occurredAtMs, {
    creditId: credit.creditId,
    pointType: credit.pointType,
    points: formatPoints(credit.amount),
    asset: credit.asset ?? null,
    block: credit.block ?? null,
  });
}

export function operatorChanged(
  contract: AddressKey,
  operator: AddressKey,
  previous: AddressKey | null,
  occurredAtMs: number,
): LedgerEvent<"operator.changed"> {
  return event("operator.changed", contract, occurredAtMs, {
    operatorAddress: checksumAddress(operator),
    previousOperatorAddress: previous === null ? null : checksumAddress(previous),
  });
}

export function webhookTest(contract: AddressKey, endpointId: string, occurredAtMs: number): LedgerEvent<"webhook.test"> {
  return event("webhook.test", contract, occurredAtMs, { endpointId });
}

/** snapshot.created: on the admin stream only (stream null), appended in the transaction that stores the snapshot. */
export function snapshotCreated(snapshot: Record<string, unknown>, occurredAtMs: number): LedgerEvent<"snapshot.created"> {
  return event("snapshot.created", null, occurredAtMs, { snapshot });
}

/** api_key.created or api_key.revoked: the key as it is after the change (never a secret), on its contract's stream. */
export function apiKeyEvent(type: "api_key.created" | "api_key.revoked", key: ApiKey, occurredAtMs: number): LedgerEvent {
  return event(type, key.contract, occurredAtMs, { apiKey: apiKeyJson(key) });
}

/** The Event object of docs/api.md: `{id, type, contractAddress, occurredAt, data}`. */
export function eventJson(stored: LedgerEvent) {
  return {
    id: stored.id,
    type: stored.type,
    contractAddress: stored.stream === null ? null : checksumAddress(stored.stream),
    occurredAt: isoTime(stored.occurredAtMs),
    data: stored.data,
  };
}
