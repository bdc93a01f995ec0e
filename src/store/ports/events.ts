import type { Io, Out } from "./io.js";
import type { AddressKey } from "../../domain/address.js";
import type { EventType, LedgerEvent } from "../../domain/events.js";
import type { CommittedEventsListener } from "../committed-events.js";

/**
 * The event log's port (docs/api.md, Events): what readers ask of it (EventsStore) and the SQL
 * each adapter's events.ts gives for it (EventLogSql, which that file `satisfies`).
 */

export type { CommittedEventsListener } from "../committed-events.js";

/** What GET …/events and the admin listing ask the store (docs/api.md Events). */
export interface EventQuery {
  /** The contract (or credited address) whose stream to read; null: every event, admin ones too. */
  stream: AddressKey | null;
  /** A position the store returned earlier; null: from the oldest retained event. */
  after: string | null;
  /** Only these types; null: all. */
  types: readonly EventType[] | null;
  limit: number;
  /**
   * `after` came from an unauthenticated cursor (the old `ev1:` form): refuse one past the newest
   * event (VALIDATION_FAILED), which the service never gave out and which would hide events.
   */
  verifyAfter?: boolean;
}

export interface StoredEvent {
  /** Where a reader that has seen this event continues (opaque, adapter-specific, ordered). */
  position: string;
  event: LedgerEvent;
}

export type EventPage =
  /** `position`: where the next call starts (the last event's, or `after` when none came). */
  | { kind: "page"; events: StoredEvent[]; position: string; hasMore: boolean }
  /** `after` lies before the retained events: purged ones would be skipped (410 CURSOR_EXPIRED). */
  | { kind: "expired" };

/**
 * The event log. Events are appended by the adapters inside each transition's transaction (an
 * outbox: an event exists iff its change committed). Paging with `after` returns every event
 * exactly once and in one order, also while several processes write: an event that commits late
 * is never skipped (PostgreSQL orders by transaction, see postgres/events.ts).
 */
export interface EventsStore {
  /**
   * Calls `listener` with the events of each transaction this process commits, right after the
   * commit (never for a rolled-back one); returns the unsubscribe function.
   */
  onCommittedEvents(listener: CommittedEventsListener): () => void;
  /** Throws VALIDATION_FAILED (path `after`) for a position this adapter never gave out. */
  listEvents(query: EventQuery): Promise<EventPage>;
  /** Deletes events that occurred before `beforeMs`, oldest first, at most `limit`; returns how many. */
  purgeEvents(beforeMs: number, limit: number): Promise<number>;
}

/**
 * The SQL each adapter's events.ts provides (the file ends in `satisfies` this): `Tx` is a
 * connection inside the caller's transaction, `Db` one a read or a purge may run on.
 */
export interface EventLogSql<Mode extends Io, Tx, Db = Tx> {
  /** Appends in the change's own transaction and fans the events out to their deliveries (ports/webhooks.ts). */
  appendEvents(tx: Tx, events: readonly LedgerEvent[]): Out<Mode, void>;
  listEvents(db: Db, query: EventQuery): Out<Mode, EventPage>;
  purgeEvents(db: Db, beforeMs: number, limit: number): Out<Mode, number>;
}
