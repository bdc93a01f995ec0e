import { invalidCursor } from "../../domain/cursor.js";
import { storedActorText } from "../../domain/actors.js";
import type { LedgerEvent } from "../../domain/events.js";
import type { EventLogSql, EventPage, EventQuery, StoredEvent } from "../ports/events.js";
import { eventOfRow } from "../rows.js";
import { statement, toNumber, type SqliteDb } from "./db.js";
import { fanOutDeliveries } from "./webhooks.js";

/**
 * The event log on SQLite. One process writes, and each transition's transaction appends its
 * events before it commits, so seq order is commit order: a position is the seq of the last
 * event a reader has seen ("0": none yet).
 */

const POSITION = /^(0|[1-9][0-9]{0,18})$/;
/** SQLite's INTEGER: a longer position was never given out (and binding it throws "too big"). */
const MAX_SEQ = 2n ** 63n - 1n;

/**
 * Appends `events` inside the caller's transaction (the transition's own), and queues a webhook
 * delivery for each endpoint enabled and subscribed at this moment (webhooks.ts).
 */
export function appendEvents(db: SqliteDb, events: readonly LedgerEvent[]): void {
  if (events.length === 0) return;
  const insert = statement(db, "INSERT INTO events (event_id, type, stream, occurred_at_ms, actor, data) VALUES (?, ?, ?, ?, ?, ?)");
  for (const event of events) {
    insert.run(event.id, event.type, event.stream, event.occurredAtMs, storedActorText(event.actor), JSON.stringify(event.data));
  }
  fanOutDeliveries(db, events, events[0]!.occurredAtMs);
  appended.set(db, [...(appended.get(db) ?? []), ...events]);
}

/**
 * Events appended by the operation in progress. better-sqlite3 is synchronous, so one store
 * operation runs alone: index.ts takes them when it has returned (committed) and drops them when
 * it threw (rolled back). A finalization savepoint that fails rolls back before its batch appends.
 */
const appended = new WeakMap<SqliteDb, LedgerEvent[]>();

export function takeAppendedEvents(db: SqliteDb): LedgerEvent[] {
  const events = appended.get(db) ?? [];
  appended.delete(db);
  return events;
}

export interface EventRow {
  seq: bigint;
  event_id: string;
  type: string;
  stream: string | null;
  occurred_at_ms: bigint;
  actor: string;
  data: string;
  log_index: bigint | null;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return eventOfRow(row, row.seq.toString(), JSON.parse(row.data) as LedgerEvent["data"]);
}

function parsePosition(after: string | null): bigint {
  if (after === null) return 0n;
  if (!POSITION.test(after) || BigInt(after) > MAX_SEQ) throw invalidCursor("after", after);
  return BigInt(after);
}

function purgedThrough(db: SqliteDb): bigint {
  const value = statement(db, "SELECT purged_through_seq FROM event_retention WHERE id = 1").pluck(true).get() as bigint | undefined;
  return value ?? 0n;
}

/** One page after `query.after`, in seq order; one more row than asked tells whether more are there. */
export function listEvents(db: SqliteDb, query: EventQuery): EventPage {
  const after = parsePosition(query.after);
  const purged = purgedThrough(db);
  if (query.after !== null && after < purged) return { kind: "expired" };
  const where = ["seq > ?"];
  const params: (string | bigint | number)[] = [after > purged ? after : purged];
  if (query.stream !== null) {
    where.push("stream = ?");
    params.push(query.stream);
  }
  if (query.types !== null) {
    where.push(`type IN (${query.types.map(() => "?").join(", ")})`);
    params.push(...query.types);
  }
  const rows = statement(db, `SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`).all(
    ...params,
    query.limit + 1,
  ) as EventRow[];
  const hasMore = rows.length > query.limit;
  const events = (hasMore ? rows.slice(0, query.limit) : rows).map(toStoredEvent);
  // A page that is not full read everything there is: the next call may start after the newest
  // event of all, so a reader of a quiet stream (or of a filter) moves on and its cursor never
  // falls behind the retained events. The caller runs this in one read transaction.
  const newest = hasMore ? null : (statement(db, "SELECT MAX(seq) FROM events").pluck(true).get() as bigint | null);
  // An unauthenticated (old-form) position past every event was never given out: it would hide
  // the events written until the log reached it.
  if (query.verifyAfter === true && !hasMore && after > (newest ?? purged)) throw invalidCursor("after", query.after);
  const position = newest !== null && newest > after ? newest.toString() : (events.at(-1)?.position ?? query.after ?? purged.toString());
  return { kind: "page", events, position, hasMore };
}

/**
 * Deletes up to `limit` of the oldest events, stopping at the first that occurred at or after
 * `beforeMs` (so what is retained is always a whole suffix of the log) or that the transparency
 * log has not read yet (its leaf is computed from the event), and remembers how far it went: a
 * cursor before that is expired, never silently short.
 */
export function purgeEvents(db: SqliteDb, beforeMs: number, limit: number): number {
  const oldest = statement(
    db,
    "SELECT seq, occurred_at_ms FROM events WHERE seq > ? AND seq <= (SELECT position_seq FROM log_state WHERE id = 1) ORDER BY seq LIMIT ?",
  )
    .raw(true)
    .all(purgedThrough(db), limit) as [bigint, bigint][];
  let last: bigint | null = null;
  for (const [seq, occurredAtMs] of oldest) {
    if (toNumber(occurredAtMs) >= beforeMs) break;
    last = seq;
  }
  if (last === null) return 0;
  const deleted = statement(db, "DELETE FROM events WHERE seq <= ?").run(last).changes;
  statement(
    db,
    `INSERT INTO event_retention (id, purged_through_seq) VALUES (1, ?)
     ON CONFLICT (id) DO UPDATE SET purged_through_seq = excluded.purged_through_seq`,
  ).run(last);
  return deleted;
}

/** This file's functions as the port names them: one missing or of another shape is a compile error. */
export const sqliteEventLog = { appendEvents, listEvents, purgeEvents } satisfies EventLogSql<"sync", SqliteDb>;
