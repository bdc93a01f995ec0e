import { invalidCursor } from "../../domain/cursor.js";
import { storedActorText } from "../../domain/actors.js";
import type { LedgerEvent } from "../../domain/events.js";
import type { EventLogSql, EventPage, EventQuery, StoredEvent } from "../ports/events.js";
import { eventOfRow } from "../rows.js";
import { noteAppendedEvents, toNumber, type PgClient, type Queryable } from "./db.js";
import { fanOutDeliveries } from "./webhooks.js";

/**
 * The event log on PostgreSQL. Several processes append at once and a sequence number is taken
 * before its transaction commits, so seq order is not commit order: a reader at seq 7 could miss
 * a seq 6 that commits a moment later. Each event therefore records its transaction (xid8), and
 * a reader takes only events of transactions older than every transaction still running
 * (pg_snapshot_xmin of its snapshot): no such transaction can ever commit another event. Pages go
 * in (tx, seq) order, which only ever grows at its end, so paging with a position returns every
 * event exactly once. The price: a reader sees an event once every transaction that started
 * before its own has ended (statement timeouts bound that).
 *
 * A position is "<tx>.<seq>" ("0.0": before every event).
 */

const POSITION = /^(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,18})$/;
const BEGINNING = "0.0";
/** xid8 is unsigned 64-bit, seq a bigint: a larger part was never given out (and PostgreSQL refuses it). */
const MAX_TX = 2n ** 64n - 1n;
const MAX_SEQ = 2n ** 63n - 1n;

/**
 * Appends `events` inside the caller's transaction (the transition's own), in one statement, and
 * queues a webhook delivery for each endpoint enabled and subscribed at this moment (webhooks.ts).
 */
export async function appendEvents(db: PgClient, events: readonly LedgerEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.query({
    name: "pl-append-events",
    text: `INSERT INTO events (event_id, type, stream, occurred_at_ms, actor, data)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::jsonb[], $6::jsonb[])`,
    values: [
      events.map((event) => event.id),
      events.map((event) => event.type),
      events.map((event) => event.stream),
      events.map((event) => event.occurredAtMs),
      events.map((event) => storedActorText(event.actor)),
      events.map((event) => JSON.stringify(event.data)),
    ],
  });
  await fanOutDeliveries(db, events, events[0]!.occurredAtMs);
  noteAppendedEvents(db, events);
}

export interface EventRow {
  tx: string;
  seq: string;
  event_id: string;
  type: string;
  stream: string | null;
  occurred_at_ms: string;
  actor: unknown;
  data: LedgerEvent["data"];
  log_index: string | null;
}

/**
 * Which events a reader may read past (every reader of the log in order: the events API, the
 * transparency log, the purge, the publishers): those of transactions older than every one still
 * running, as the statement's own snapshot sees them. Written once, here.
 */
export const COMMITTED = "events.tx < pg_snapshot_xmin(pg_current_snapshot())";

/**
 * The committed events after the position ($1 tx, $2 seq), `filter` and `limit` (SQL text, a
 * parameter) applied, in the log's one order. The order is the xid8 column's: this subquery returns
 * `tx` as xid8, and a caller converts it to text outside it. A text alias named `tx` in the same
 * SELECT would be what `ORDER BY tx` sorts by (PostgreSQL resolves ORDER BY names to output columns
 * first): "10000" < "9971", so a reader whose transaction ids crossed a power of ten jumped past every
 * event in between and lost them (issue 37; on a new cluster xids cross 1,000 and 10,000 within minutes).
 */
function committedAfterSql(filter: string, limit: string): string {
  return `SELECT events.tx, events.seq, event_id, type, stream, occurred_at_ms, actor, data, log_index FROM events
          WHERE (events.tx, events.seq) > ($1::xid8, $2::bigint) AND ${COMMITTED} ${filter}
          ORDER BY events.tx, events.seq LIMIT ${limit}`;
}

/** Up to `limit` committed events after `position` ([tx, seq]) in the log's one order; `filter` may use $4 on. */
export async function committedEventsAfter(
  db: Queryable,
  name: string,
  position: readonly [string, string],
  limit: number,
  filter = "",
): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>({
    name,
    text: `SELECT e.tx::text AS tx, e.seq, e.event_id, e.type, e.stream, e.occurred_at_ms, e.actor, e.data, e.log_index
           FROM (${committedAfterSql(filter, "$3")}) AS e ORDER BY e.tx, e.seq`,
    values: [position[0], position[1], limit],
  });
  return rows;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return eventOfRow(row, `${row.tx}.${row.seq}`, row.data);
}

function parsePosition(after: string | null): [string, string] {
  const match = POSITION.exec(after ?? BEGINNING);
  if (!match || BigInt(match[1]!) > MAX_TX || BigInt(match[2]!) > MAX_SEQ) throw invalidCursor("after", after);
  return [match[1]!, match[2]!];
}

async function purgedThrough(db: Queryable): Promise<[string, string]> {
  const { rows } = await db.query<{ tx: string; seq: string }>({
    name: "pl-event-retention",
    text: "SELECT purged_through_tx::text AS tx, purged_through_seq AS seq FROM event_retention WHERE id = 1",
  });
  return rows[0] ? [rows[0].tx, rows[0].seq] : ["0", "0"];
}

function before(a: [string, string], b: [string, string]): boolean {
  const [txA, seqA] = a.map(BigInt) as [bigint, bigint];
  const [txB, seqB] = b.map(BigInt) as [bigint, bigint];
  return txA < txB || (txA === txB && seqA < seqB);
}

/** One page after `query.after` in (tx, seq) order, of finished transactions only; one more row than asked tells whether more are there. */
export async function listEvents(db: Queryable, query: EventQuery): Promise<EventPage> {
  const after = parsePosition(query.after);
  const purged = await purgedThrough(db);
  if (query.after !== null && before(after, purged)) return { kind: "expired" };
  const start = before(after, purged) ? purged : after;
  // One statement, so one snapshot (pg_current_snapshot() is the statement's): the page, and the newest visible position of all (one row
  // even when the page is empty). A page that is not full read everything there is, so the next
  // call may start at that newest position: a reader of a quiet stream (or of a filter) moves on,
  // and its cursor never falls behind the retained events. Anything that becomes visible later
  // has a transaction at or past this snapshot's xmin, so it sorts after that position.
  const { rows } = await db.query<Partial<EventRow> & { newest: string | null }>({
    name: "pl-list-events",
    text: `WITH page AS (${committedAfterSql("AND ($3::text IS NULL OR stream = $3) AND ($4::text[] IS NULL OR type = ANY($4))", "$5")}),
           newest AS (
             SELECT tx::text || '.' || seq AS position FROM events
             WHERE ${COMMITTED} ORDER BY events.tx DESC, events.seq DESC LIMIT 1)
           SELECT page.tx::text AS tx, page.seq, page.event_id, page.type, page.stream, page.occurred_at_ms, page.actor, page.data, page.log_index,
                  (SELECT position FROM newest) AS newest
           FROM (SELECT 1) AS one LEFT JOIN page ON true
           ORDER BY page.tx, page.seq`,
    values: [start[0], start[1], query.stream, query.types, query.limit + 1],
  });
  const found = rows.filter((row) => row.event_id !== null && row.event_id !== undefined) as EventRow[];
  const hasMore = found.length > query.limit;
  const events = (hasMore ? found.slice(0, query.limit) : found).map(toStoredEvent);
  let position = events.at(-1)?.position ?? query.after ?? `${purged[0]}.${purged[1]}`;
  const newest = rows[0]?.newest ?? null;
  // An unauthenticated (old-form) position past every visible event was never given out: it
  // would hide the events written until the log reached it.
  if (query.verifyAfter === true && !hasMore && before(newest === null ? purged : parsePosition(newest), after))
    throw invalidCursor("after", query.after);
  if (!hasMore && newest !== null && before(parsePosition(position), parsePosition(newest))) position = newest;
  return { kind: "page", events, position, hasMore };
}

/**
 * Deletes up to `limit` of the oldest events (in reading order), stopping at the first that
 * occurred at or after `beforeMs` or that the transparency log has not read yet (its leaf is
 * computed from the event), and records how far it went, in one transaction: a cursor before that
 * is expired, never silently short.
 */
export async function purgeEvents(db: Queryable, beforeMs: number, limit: number): Promise<number> {
  const purged = await purgedThrough(db);
  const rows = await committedEventsAfter(
    db,
    "pl-oldest-events",
    purged,
    limit,
    "AND (tx, seq) <= (SELECT position_tx, position_seq FROM log_state WHERE id = 1)",
  );
  let last: EventRow | undefined;
  for (const row of rows) {
    if (toNumber(row.occurred_at_ms) >= beforeMs) break;
    last = row as EventRow;
  }
  if (!last) return 0;
  const { rowCount } = await db.query({
    name: "pl-purge-events",
    text: `DELETE FROM events WHERE (tx, seq) <= ($1::xid8, $2::bigint) AND ${COMMITTED}`,
    values: [last.tx, last.seq],
  });
  await db.query({
    name: "pl-record-retention",
    text: `INSERT INTO event_retention (id, purged_through_tx, purged_through_seq) VALUES (1, $1::xid8, $2)
           ON CONFLICT (id) DO UPDATE SET purged_through_tx = excluded.purged_through_tx, purged_through_seq = excluded.purged_through_seq`,
    values: [last.tx, last.seq],
  });
  return rowCount ?? 0;
}

/** This file's functions as the port names them: one missing or of another shape is a compile error. */
export const postgresEventLog = { appendEvents, listEvents, purgeEvents } satisfies EventLogSql<"async", PgClient, Queryable>;
