import { checksumAddress, type AddressKey } from "./address.js";
import { actorJson } from "./actors.js";
import { SYSTEM_ACTOR, type Actor, type ApiKey } from "./api-keys.js";
import type { Batch, PointType } from "./batch.js";
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
  /** `banned` only under operators from the chain (API.md, Operators on chain); a ban has no operator. */
  "operator.changed": { operatorAddress: string | null; previousOperatorAddress: string | null; banned?: boolean };
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
  /** Who caused it (API.md Events): stored beside the event, in the change's transaction. */
  actor: Actor;
  data: EventDataByType[T];
  /** Its place in the transparency log (src/ledger/transparency-log.ts), once logged after its commit; null or absent before. */
  logIndex?: number | null;
}

/** `evt_` + 32 hex digits: unique, never reused; also the `webhook-id` of its deliveries. */
export function newEventId(): string {
  return `evt_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
}

function event<T extends EventType>(
  type: T,
  stream: AddressKey | null,
  occurredAtMs: number,
  actor: Actor,
  data: EventDataByType[T],
): LedgerEvent<T> {
  return { id: newEventId(), type, stream, occurredAtMs, actor, data };
}

/** batch.accepted, batch.cancelled or batch.finalized: the batch as it is after the change, on its contract's stream. */
export function batchEvent(
  type: "batch.accepted" | "batch.cancelled" | "batch.finalized",
  batch: Batch,
  occurredAtMs: number,
  actor: Actor,
): LedgerEvent {
  return event(type, batch.contract, occurredAtMs, actor, { batch: batchJson(batch) });
}

export interface CreditFacts {
  address: AddressKey;
  creditId: string;
  pointType: PointType;
  amount: bigint;
  asset?: string | null;
  block?: number | null;
}

export function creditCreated(credit: CreditFacts, occurredAtMs: number, actor: Actor): LedgerEvent<"credit.created"> {
  return event("credit.created", credit.address, occurredAtMs, actor, {
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
  actor: Actor,
): LedgerEvent<"operator.changed"> {
  return event("operator.changed", contract, occurredAtMs, actor, {
    operatorAddress: checksumAddress(operator),
    previousOperatorAddress: previous === null ? null : checksumAddress(previous),
  });
}

/** operator.changed read from the chain: a ban or no operator is `operatorAddress: null`; `banned` says which. */
export function chainOperatorChanged(
  contract: AddressKey,
  operator: AddressKey | null,
  previous: AddressKey | null,
  banned: boolean,
  occurredAtMs: number,
  actor: Actor,
): LedgerEvent<"operator.changed"> {
  return event("operator.changed", contract, occurredAtMs, actor, {
    operatorAddress: operator === null ? null : checksumAddress(operator),
    previousOperatorAddress: previous === null ? null : checksumAddress(previous),
    banned,
  });
}

export function webhookTest(contract: AddressKey, endpointId: string, occurredAtMs: number, actor: Actor): LedgerEvent<"webhook.test"> {
  return event("webhook.test", contract, occurredAtMs, actor, { endpointId });
}

/** snapshot.created: on the admin stream only (stream null), appended in the transaction that stores the snapshot. */
export function snapshotCreated(snapshot: Record<string, unknown>, occurredAtMs: number, actor: Actor): LedgerEvent<"snapshot.created"> {
  return event("snapshot.created", null, occurredAtMs, actor, { snapshot });
}

/** api_key.created or api_key.revoked: the key as it is after the change (never a secret), on its contract's stream. */
export function apiKeyEvent(type: "api_key.created" | "api_key.revoked", key: ApiKey, occurredAtMs: number, actor: Actor): LedgerEvent {
  return event(type, key.contract, occurredAtMs, actor, { apiKey: apiKeyJson(key) });
}

/**
 * The Event object of API.md: `{id, type, contractAddress, occurredAt, actor, data, logIndex}`.
 * Less its logIndex, it is the event's transparency-log leaf (domain/log-event.ts): a change here
 * changes every leaf a reader recomputes, so it must never change for an event already logged.
 */
export function eventJson(stored: LedgerEvent) {
  return {
    id: stored.id,
    type: stored.type,
    contractAddress: stored.stream === null ? null : checksumAddress(stored.stream),
    occurredAt: isoTime(stored.occurredAtMs),
    actor: actorJson(stored.actor),
    data: stored.data,
    logIndex: stored.logIndex ?? null,
  };
}

/**
 * A stored event's data as readers get it. The Batch object of a batch event written before
 * actors were recorded (SQLite schema 12, PostgreSQL 10) has no submittedBy / cancelledBy: it
 * gets what those migrations gave its batch, the system actor (cancelledBy only once cancelled),
 * here at reading rather than by rewriting every retained event in the migration.
 */
export function upgradedEventData(type: EventType, data: LedgerEvent["data"]): LedgerEvent["data"] {
  if (type !== "batch.accepted" && type !== "batch.cancelled" && type !== "batch.finalized") return data;
  const batch = (data as EventDataByType["batch.accepted"]).batch;
  if (batch.submittedBy !== undefined) return data;
  const system = actorJson(SYSTEM_ACTOR);
  return { batch: { ...batch, submittedBy: system, cancelledBy: batch.status === "CANCELLED" ? system : null } };
}
