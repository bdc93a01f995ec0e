import { checksumAddress } from "./address.js";
import type { LedgerEvent } from "./events.js";
import { PUBLISH_BACKOFF_BASE_MS, PUBLISH_BACKOFF_MAX_MS } from "./limits.js";

/**
 * Publishers (API.md, Events to a message broker) as the domain sees them: the event log leaves
 * for a broker from a position stored in the database, after the commit, one publisher of a kind
 * at a time. No SQL and no broker here (store/<adapter>/publishers.ts, src/publishers/): the names,
 * the subjects and routing keys, the back-off, and the rules both adapters and the purge apply.
 */

export const PUBLISHER_KINDS = ["nats", "amqp"] as const;
export type PublisherKind = (typeof PUBLISHER_KINDS)[number];

/**
 * `ok`; `retrying`: the broker fails (unreachable, timed out, closed), published again on its
 * return; `stopped`: the broker refuses the configuration (a stream over other subjects, an
 * exchange of another type, refused credentials), retried slowly until someone fixes it.
 */
export const PUBLISHER_STATES = ["ok", "retrying", "stopped"] as const;
export type PublisherState = (typeof PUBLISHER_STATES)[number];

/** EVENTS_PUBLISH_FROM: a first start publishes the whole retained log (`start`) or from its end (`now`). */
export type PublishFrom = "start" | "now";

export interface NatsSettings {
  /** EVENTS_NATS_URL */
  url: string;
  /** EVENTS_NATS_STREAM */
  stream: string;
  /** EVENTS_NATS_SUBJECT_PREFIX */
  subjectPrefix: string;
  /** EVENTS_NATS_DUPLICATE_WINDOW_SECONDS: of a stream this adapter creates. */
  duplicateWindowSeconds: number;
}

export interface AmqpSettings {
  /** EVENTS_AMQP_URL */
  url: string;
  /** EVENTS_AMQP_EXCHANGE */
  exchange: string;
}

/** The publishers a deployment configured (config.ts): null where its URL is not set. */
export interface PublishersConfig {
  nats: NatsSettings | null;
  amqp: AmqpSettings | null;
  from: PublishFrom;
}

/** The kinds configured, in a fixed order. */
export function configuredKinds(config: PublishersConfig): PublisherKind[] {
  return PUBLISHER_KINDS.filter((kind) => config[kind] !== null);
}

/** A publisher's row, as the store reads it. */
export interface StoredPublisher {
  kind: PublisherKind;
  /** The event log position (ports/events.ts) of the last event the broker acknowledged. */
  position: string;
  lastEventId: string | null;
  state: PublisherState;
  lastError: string | null;
  /** When the position last moved. */
  publishedAtMs: number | null;
}

/** What GET /v1/admin/publishers and the gauges show of one publisher. */
export interface PublisherStatus extends StoredPublisher {
  /** occurredAt of the first event after the position (the oldest not yet published); null: caught up. */
  oldestUnpublishedAtMs: number | null;
}

/** A publisher's lease, taken by a claim and named by its advance: one holder at a time. */
export interface PublisherLease {
  kind: PublisherKind;
  token: string;
}

/** What one claim hands the job: the events to publish, oldest first, after the stored position. */
export interface PublishClaim {
  lease: PublisherLease;
  position: string;
  lastEventId: string | null;
  events: { position: string; event: LedgerEvent }[];
}

/** The admin stream's events (no contract) go to `admin` in subjects and routing keys. */
export const ADMIN_SUBJECT_TOKEN = "admin";

/** `<contractAddress>.<type>`, the address checksummed: the routing key, and a subject's tail after its prefix. */
export function routingKeyOf(event: LedgerEvent): string {
  return `${event.stream === null ? ADMIN_SUBJECT_TOKEN : checksumAddress(event.stream)}.${event.type}`;
}

/** The NATS subject of an event under EVENTS_NATS_SUBJECT_PREFIX. */
export function subjectOf(prefix: string, event: LedgerEvent): string {
  return `${prefix}.${routingKeyOf(event)}`;
}

/**
 * The wait after the `failuresInRow`-th failed step in a row: doubled from PUBLISH_BACKOFF_BASE_MS
 * up to PUBLISH_BACKOFF_MAX_MS, ±20 % (`random` in [0, 1)) so instances and restarts spread out.
 */
export function publishBackoffMs(failuresInRow: number, random: number): number {
  if (failuresInRow <= 0) return 0;
  const base = Math.min(PUBLISH_BACKOFF_MAX_MS, PUBLISH_BACKOFF_BASE_MS * 2 ** Math.min(failuresInRow - 1, 30));
  return Math.round(base * (0.8 + 0.4 * random));
}

/** lagSeconds: the age of the oldest event not yet published, 0 when caught up (never negative: clocks of instances differ). */
export function lagSecondsOf(status: Pick<PublisherStatus, "oldestUnpublishedAtMs">, nowMs: number): number {
  return status.oldestUnpublishedAtMs === null ? 0 : Math.max(0, nowMs - status.oldestUnpublishedAtMs) / 1000;
}

/**
 * How far the purge may go while publishers are configured: events that occurred before
 * `retentionCutoffMs`, but never the oldest event a publisher has not published (the purge stops
 * at the first event, in the log's order, at or past the cutoff it is given, so every event
 * before that one is published). Returns the cutoff and the publishers that hold it back.
 */
export function purgeCutoffOf(
  retentionCutoffMs: number,
  publishers: readonly Pick<PublisherStatus, "kind" | "oldestUnpublishedAtMs">[],
): { cutoffMs: number; waitingFor: PublisherKind[] } {
  let cutoffMs = retentionCutoffMs;
  const waitingFor: PublisherKind[] = [];
  for (const publisher of publishers) {
    const oldest = publisher.oldestUnpublishedAtMs;
    if (oldest === null || oldest >= retentionCutoffMs) continue;
    waitingFor.push(publisher.kind);
    cutoffMs = Math.min(cutoffMs, oldest);
  }
  return { cutoffMs, waitingFor };
}

/** A broker's address as shown (`target`): the URL without its user and password. */
export function targetOf(url: string): string {
  const parsed = new URL(url);
  parsed.username = "";
  parsed.password = "";
  return parsed.toString().replace(/\/$/, "");
}

/** A broker's error text as stored and shown: one line, bounded, never a credential-bearing URL. */
export function errorText(error: unknown, maxChars: number): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text
    .replace(/[a-z]+:\/\/[^@\s]*@/gi, "//***@")
    .replace(/\s+/g, " ")
    .slice(0, maxChars);
}
