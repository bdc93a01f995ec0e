import type { PublisherKind, PublisherLease, PublisherState, PublisherStatus, PublishFrom } from "../../domain/publishers.js";
import type { PublishersPort } from "../ports/publishers.js";
import { statement, toNumber, type SqliteDb } from "./db.js";
import { toStoredEvent, type EventRow } from "./events.js";

/**
 * Publishers on SQLite (ports/publishers.ts). One process writes, so seq order is commit order
 * and a position is the seq of the last event the broker acknowledged. The lease still matters:
 * `serve` and `points-ledger worker` may share one database file. It is counted by SQLite's
 * clock (the machine's), as PostgreSQL's adapter counts by the database's.
 */

/** The database's clock in epoch milliseconds. */
const NOW_MS = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

interface PublisherRow {
  kind: PublisherKind;
  position_seq: bigint;
  last_event_id: string | null;
  state: PublisherState;
  last_error: string | null;
  published_at_ms: bigint | null;
}

function ensurePublisher(db: SqliteDb, kind: PublisherKind, from: PublishFrom): void {
  statement(
    db,
    `INSERT INTO publishers (kind, position_seq, last_event_id, state)
     SELECT ?, CASE WHEN ? = 'now' THEN COALESCE((SELECT MAX(seq) FROM events), 0) ELSE 0 END,
            CASE WHEN ? = 'now' THEN (SELECT event_id FROM events ORDER BY seq DESC LIMIT 1) END, 'ok'
     WHERE true ON CONFLICT (kind) DO NOTHING`,
  ).run(kind, from, from);
}

function takeLease(db: SqliteDb, lease: PublisherLease, leaseMs: number) {
  const row = statement(
    db,
    `UPDATE publishers SET lease_token = ?, lease_until_ms = ${NOW_MS} + ?
     WHERE kind = ? AND (lease_token IS NULL OR lease_token = ? OR lease_until_ms <= ${NOW_MS})
     RETURNING position_seq, last_event_id`,
  ).get(lease.token, leaseMs, lease.kind, lease.token) as { position_seq: bigint; last_event_id: string | null } | undefined;
  return row === undefined ? null : { position: row.position_seq.toString(), lastEventId: row.last_event_id };
}

function readHeld(db: SqliteDb, lease: PublisherLease) {
  const row = statement(db, "SELECT position_seq, last_event_id FROM publishers WHERE kind = ? AND lease_token = ?").get(
    lease.kind,
    lease.token,
  ) as { position_seq: bigint; last_event_id: string | null } | undefined;
  return row === undefined ? null : { position: row.position_seq.toString(), lastEventId: row.last_event_id };
}

function eventsToPublish(db: SqliteDb, position: string, limit: number) {
  const rows = statement(db, "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?").all(BigInt(position), limit) as EventRow[];
  return rows.map(toStoredEvent);
}

function advancePublisher(db: SqliteDb, lease: PublisherLease, position: string, lastEventId: string, leaseMs: number): boolean {
  const { changes } = statement(
    db,
    `UPDATE publishers SET position_seq = ?, last_event_id = ?, published_at_ms = ${NOW_MS}, state = 'ok', last_error = NULL,
       lease_until_ms = ${NOW_MS} + ?
     WHERE kind = ? AND lease_token = ?`,
  ).run(BigInt(position), lastEventId, leaseMs, lease.kind, lease.token);
  return changes === 1;
}

function recordPublisherState(db: SqliteDb, lease: PublisherLease, state: PublisherState, error: string | null): void {
  statement(db, "UPDATE publishers SET state = ?, last_error = ? WHERE kind = ? AND lease_token = ?").run(
    state,
    error,
    lease.kind,
    lease.token,
  );
}

function publisherStatuses(db: SqliteDb, kinds: readonly PublisherKind[]): PublisherStatus[] {
  const read = statement(db, `SELECT kind, position_seq, last_event_id, state, last_error, published_at_ms FROM publishers WHERE kind = ?`);
  const oldest = statement(db, "SELECT occurred_at_ms FROM events WHERE seq > ? ORDER BY seq LIMIT 1").pluck(true);
  return kinds.map((kind) => {
    const row = read.get(kind) as PublisherRow | undefined;
    const position = row?.position_seq ?? 0n;
    const oldestAtMs = oldest.get(position) as bigint | undefined;
    return {
      kind,
      position: position.toString(),
      lastEventId: row?.last_event_id ?? null,
      state: row?.state ?? "ok",
      lastError: row?.last_error ?? null,
      publishedAtMs: row?.published_at_ms == null ? null : toNumber(row.published_at_ms),
      oldestUnpublishedAtMs: oldestAtMs === undefined ? null : toNumber(oldestAtMs),
    };
  });
}

export const sqlitePublishers = {
  ensurePublisher,
  takeLease,
  readHeld,
  eventsToPublish,
  advancePublisher,
  recordPublisherState,
  publisherStatuses,
} satisfies PublishersPort<SqliteDb, "sync">;
