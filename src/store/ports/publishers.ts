import type { PublishClaim, PublisherKind, PublisherLease, PublisherState, PublisherStatus, PublishFrom } from "../../domain/publishers.js";
import type { StoredEvent } from "./events.js";
import type { Io, Out } from "./io.js";

/**
 * The publishers' port (API.md, Events to a message broker; src/ledger/publishers.ts): one row per
 * broker kind holding the position of the last event its broker acknowledged, the lease that lets
 * one instance publish at a time, and the state the holder last saw. Publishers are projections
 * of the event log: they read it after the commit and move their position only after the
 * broker's acknowledgement; nothing here runs inside a transition's transaction.
 */

/** The table primitives each adapter's publishers.ts gives (`satisfies` this). */
export interface PublishersPort<Db, out M extends Io = Io> {
  /** Makes the kind's row if it has none: at the log's beginning, or (`now`) after its newest visible event. */
  ensurePublisher(db: Db, kind: PublisherKind, from: PublishFrom): Out<M, void>;
  /**
   * Takes or renews the kind's lease for `leaseMs` by the database's clock, when it ran out or is
   * `token`'s already; returns the stored position and last event id, or null while another holds it.
   */
  takeLease(db: Db, lease: PublisherLease, leaseMs: number): Out<M, { position: string; lastEventId: string | null } | null>;
  /** The stored position while `lease` names this holder (its time is the holder's to keep); null: another took it. */
  readHeld(db: Db, lease: PublisherLease): Out<M, { position: string; lastEventId: string | null } | null>;
  /** Up to `limit` events after `position` in the event log's one order, of finished transactions only (PostgreSQL: older than every one running). */
  eventsToPublish(db: Db, position: string, limit: number): Out<M, StoredEvent[]>;
  /** Moves the position (and renews the lease) while `lease` holds it; false: the lease was lost, nothing changed. */
  advancePublisher(db: Db, lease: PublisherLease, position: string, lastEventId: string, leaseMs: number): Out<M, boolean>;
  /** Records what the holder saw of its broker (nothing when `lease` no longer holds it). */
  recordPublisherState(db: Db, lease: PublisherLease, state: PublisherState, error: string | null): Out<M, void>;
  /** Each kind's row and the occurredAt of its oldest unpublished event; a kind without a row reads as at the beginning. */
  publisherStatuses(db: Db, kinds: readonly PublisherKind[]): Out<M, PublisherStatus[]>;
}

/** What the publish job, the purge and the admin route ask of the publishers. */
export interface PublishersStore {
  ensurePublisher(kind: PublisherKind, from: PublishFrom): Promise<void>;
  /**
   * Up to `limit` events to publish after the stored position; null while another instance holds
   * the lease. `leaseMs`: the lease is taken or renewed first (one transaction); null: the holder
   * knows its lease has time left, and only checks it is still its own (reads only).
   */
  claimPublish(lease: PublisherLease, limit: number, leaseMs: number | null): Promise<PublishClaim | null>;
  advancePublisher(lease: PublisherLease, position: string, lastEventId: string, leaseMs: number): Promise<boolean>;
  recordPublisherState(lease: PublisherLease, state: PublisherState, error: string | null): Promise<void>;
  publisherStatuses(kinds: readonly PublisherKind[]): Promise<PublisherStatus[]>;
}
