import type { PublisherKind, PublisherLease, PublisherState, PublisherStatus, PublishFrom } from "../../domain/publishers.js";
import type { StoredEvent } from "../ports/events.js";
import type { PublishersPort } from "../ports/publishers.js";
import { toNumber, toNullableNumber, type Queryable } from "./db.js";
import { COMMITTED, committedEventsAfter, toStoredEvent } from "./events.js";

/**
 * Publishers on PostgreSQL (ports/publishers.ts). Several instances run the publish job; the
 * lease in the kind's row lets one publish at a time. It is counted by the database's clock, so
 * instances whose clocks differ agree on when it ran out, and the holder stops sending well before
 * (PUBLISH_STEP_TIMEOUT_MS after its claim, against PUBLISHER_LEASE_MS counted from the claim's
 * statement). Events are read as the event log reads them (events.ts): in (tx, seq) order, only
 * those of transactions older than every one still running; a position is "<tx>.<seq>".
 *
 * The ORDER BY names the xid8 columns (events.tx): `tx::text AS tx` followed by `ORDER BY tx`
 * would sort by the text alias, out of order once xids cross a power of ten. eventsToPublish reads
 * through events.ts's committedEventsAfter, the one rule every reader of the log follows.
 */

/** The database's clock in epoch milliseconds (clock_timestamp: the statement's moment, not the transaction's start). */
const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

function positionParts(position: string): [string, string] {
  const [tx, seq] = position.split(".");
  return [tx!, seq!];
}

async function ensurePublisher(db: Queryable, kind: PublisherKind, from: PublishFrom): Promise<void> {
  await db.query({
    name: "pl-publisher-ensure",
    text: `INSERT INTO publishers (kind, position_tx, position_seq, last_event_id, state)
           SELECT $1, COALESCE(newest.tx, '0'::xid8), COALESCE(newest.seq, 0), newest.event_id, 'ok'
           FROM (SELECT 1) AS one
           LEFT JOIN (SELECT events.tx, events.seq, events.event_id FROM events
                      WHERE $2 = 'now' AND ${COMMITTED}
                      ORDER BY events.tx DESC, events.seq DESC LIMIT 1) AS newest ON true
           ON CONFLICT (kind) DO NOTHING`,
    values: [kind, from],
  });
}

async function takeLease(db: Queryable, lease: PublisherLease, leaseMs: number) {
  const { rows } = await db.query<{ position_tx: string; position_seq: string; last_event_id: string | null }>({
    name: "pl-publisher-take-lease",
    text: `UPDATE publishers SET lease_token = $2, lease_until_ms = ${NOW_MS} + $3
           WHERE kind = $1 AND (lease_token IS NULL OR lease_token = $2 OR lease_until_ms <= ${NOW_MS})
           RETURNING position_tx::text AS position_tx, position_seq, last_event_id`,
    values: [lease.kind, lease.token, leaseMs],
  });
  const row = rows[0];
  return row === undefined ? null : { position: `${row.position_tx}.${row.position_seq}`, lastEventId: row.last_event_id };
}

async function readHeld(db: Queryable, lease: PublisherLease) {
  const { rows } = await db.query<{ position_tx: string; position_seq: string; last_event_id: string | null }>({
    name: "pl-publisher-read-held",
    text: "SELECT position_tx::text AS position_tx, position_seq, last_event_id FROM publishers WHERE kind = $1 AND lease_token = $2",
    values: [lease.kind, lease.token],
  });
  const row = rows[0];
  return row === undefined ? null : { position: `${row.position_tx}.${row.position_seq}`, lastEventId: row.last_event_id };
}

async function eventsToPublish(db: Queryable, position: string, limit: number): Promise<StoredEvent[]> {
  return (await committedEventsAfter(db, "pl-publisher-events", positionParts(position), limit)).map(toStoredEvent);
}

async function advancePublisher(db: Queryable, lease: PublisherLease, position: string, lastEventId: string, leaseMs: number) {
  const [tx, seq] = positionParts(position);
  const { rowCount } = await db.query({
    name: "pl-publisher-advance",
    text: `UPDATE publishers SET position_tx = $3::xid8, position_seq = $4, last_event_id = $5, published_at_ms = ${NOW_MS},
             state = 'ok', last_error = NULL, lease_until_ms = ${NOW_MS} + $6
           WHERE kind = $1 AND lease_token = $2`,
    values: [lease.kind, lease.token, tx, seq, lastEventId, leaseMs],
  });
  return rowCount === 1;
}

async function recordPublisherState(db: Queryable, lease: PublisherLease, state: PublisherState, error: string | null): Promise<void> {
  await db.query({
    name: "pl-publisher-state",
    text: "UPDATE publishers SET state = $3, last_error = $4 WHERE kind = $1 AND lease_token = $2",
    values: [lease.kind, lease.token, state, error],
  });
}

interface StatusRow {
  kind: PublisherKind;
  position_tx: string | null;
  position_seq: string | null;
  last_event_id: string | null;
  state: PublisherState | null;
  last_error: string | null;
  published_at_ms: string | null;
  oldest_at_ms: string | null;
}

/** One statement for every kind: its row (none: at the beginning) and the first visible event after its position. */
async function publisherStatuses(db: Queryable, kinds: readonly PublisherKind[]): Promise<PublisherStatus[]> {
  const { rows } = await db.query<StatusRow>({
    name: "pl-publisher-statuses",
    text: `SELECT k.kind, p.position_tx::text AS position_tx, p.position_seq, p.last_event_id, p.state, p.last_error, p.published_at_ms,
             (SELECT events.occurred_at_ms FROM events
              WHERE (events.tx, events.seq) > (COALESCE(p.position_tx, '0'::xid8), COALESCE(p.position_seq, 0))
                AND ${COMMITTED}
              ORDER BY events.tx, events.seq LIMIT 1) AS oldest_at_ms
           FROM unnest($1::text[]) WITH ORDINALITY AS k(kind, n) LEFT JOIN publishers p ON p.kind = k.kind
           ORDER BY k.n`,
    values: [kinds],
  });
  return rows.map((row) => ({
    kind: row.kind,
    position: `${row.position_tx ?? "0"}.${row.position_seq ?? "0"}`,
    lastEventId: row.last_event_id,
    state: row.state ?? "ok",
    lastError: row.last_error,
    publishedAtMs: toNullableNumber(row.published_at_ms),
    oldestUnpublishedAtMs: row.oldest_at_ms === null ? null : toNumber(row.oldest_at_ms),
  }));
}

export const postgresPublishers = {
  ensurePublisher,
  takeLease,
  readHeld,
  eventsToPublish,
  advancePublisher,
  recordPublisherState,
  publisherStatuses,
} satisfies PublishersPort<Queryable, "async">;
