import { randomBytes } from "node:crypto";
import type { AddressKey } from "../../domain/address.js";
import { eventJson, type LedgerEvent, type StreamEventType } from "../../domain/events.js";
import type { AttemptRows, DeliveryPage, DeliveryQuery, EndpointRoom, WebhookBacklog } from "../ports/webhooks.js";
import { claimedOf, deliveryOf, endpointOf, ENDPOINT_COLUMNS } from "../webhook-rows.js";
import type { ClaimText, DeliveryText, EndpointText } from "../webhook-rows.js";
import {
  type ClaimableEndpoint,
  type DueCandidate,
  type EndpointSends,
  type ClaimedDelivery,
  type DeliveryAttempt,
  type DeliveryLease,
  type EndpointFields,
  fansOut,
  MAX_ATTEMPTS_KEPT,
  MAX_ENDPOINTS_WALKED_PER_CLAIM,
  newDeliveryId,
  type NewWebhookEndpoint,
  parseDeliveryPosition,
  subscribes,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../../domain/webhooks.js";
import { statement, toNullableNumber, toNumber, type SqliteDb } from "./db.js";

/**
 * Webhook endpoints and deliveries on SQLite: the webhooks port's primitives, run by the flows of
 * src/ledger/webhooks.ts inside their transaction or write pass (one IMMEDIATE transaction:
 * better-sqlite3 is synchronous, so a claim and its lease are taken without interleaving).
 */

interface EndpointRow extends EndpointText {
  types: string | null;
  disabled: bigint;
  created_at_ms: bigint;
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  const types = row.types === null ? null : (JSON.parse(row.types) as StreamEventType[]);
  return endpointOf(row, { types, disabled: row.disabled !== 0n, createdAtMs: toNumber(row.created_at_ms) });
}

/**
 * Fans `events` out to the deliveries of every endpoint that is enabled and subscribed to their
 * type (the fan-out rule: domain/webhooks.ts fansOut, subscribes), inside the caller's transaction
 * (the one appending the events), so a delivery exists if and only if its event does. Costs one
 * indexed lookup per stream when it has no endpoint.
 */
export function fanOutDeliveries(db: SqliteDb, events: readonly LedgerEvent[], nowMs: number): void {
  const byStream = new Map<string, LedgerEvent[]>();
  for (const event of events) {
    if (!fansOut(event)) continue;
    const list = byStream.get(event.stream) ?? [];
    list.push(event);
    byStream.set(event.stream, list);
  }
  for (const [stream, streamEvents] of byStream) {
    const endpoints = statement(db, "SELECT id, types FROM webhook_endpoints WHERE contract = ? AND disabled = 0").all(stream) as {
      id: string;
      types: string | null;
    }[];
    for (const endpoint of endpoints) {
      const types = endpoint.types === null ? null : (JSON.parse(endpoint.types) as string[]);
      for (const event of streamEvents) if (subscribes(types, event.type)) insertDelivery(db, newDeliveryId(), endpoint.id, event, nowMs);
    }
  }
}

export function insertDelivery(db: SqliteDb, id: string, endpointId: string, event: LedgerEvent, nowMs: number): void {
  statement(
    db,
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms)
     VALUES (?, ?, ?, ?, ?, 'PENDING', ?, ?) ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
  ).run(id, endpointId, event.id, event.type, JSON.stringify(eventJson(event)), nowMs, nowMs);
}

/** The IMMEDIATE transaction the flows run in already holds the writer: two creations cannot both count. */
export function lockAndCountEndpoints(db: SqliteDb, contract: AddressKey): number {
  return toNumber(statement(db, "SELECT count(*) FROM webhook_endpoints WHERE contract = ?").pluck(true).get(contract));
}

function typesText(types: EndpointFields["types"]): string | null {
  return types === null ? null : JSON.stringify(types);
}

export function insertEndpoint(db: SqliteDb, endpoint: NewWebhookEndpoint): void {
  statement(
    db,
    `INSERT INTO webhook_endpoints (id, contract, url, types, description, disabled, secret, created_at_ms)
     VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
  ).run(
    endpoint.id,
    endpoint.contract,
    endpoint.url,
    typesText(endpoint.types),
    endpoint.description,
    endpoint.secret,
    endpoint.createdAtMs,
  );
}

export function listEndpoints(db: SqliteDb, contract: AddressKey): WebhookEndpoint[] {
  const rows = statement(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = ? ORDER BY created_at_ms, id`).all(
    contract,
  ) as EndpointRow[];
  return rows.map(toEndpoint);
}

export function readEndpoint(db: SqliteDb, contract: AddressKey, endpointId: string): WebhookEndpoint | null {
  const row = statement(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = ? AND id = ?`).get(contract, endpointId) as
    EndpointRow | undefined;
  return row ? toEndpoint(row) : null;
}

/** The flows' IMMEDIATE transaction already holds the writer: a read is as good as a lock. */
export const lockEndpoint = readEndpoint;

export function writeEndpoint(db: SqliteDb, endpointId: string, fields: EndpointFields): void {
  statement(db, "UPDATE webhook_endpoints SET url = ?, types = ?, description = ?, disabled = ?, disabled_reason = ? WHERE id = ?").run(
    fields.url,
    typesText(fields.types),
    fields.description,
    fields.disabled ? 1 : 0,
    fields.disabledReason,
    endpointId,
  );
}

export function failPending(db: SqliteDb, endpointId: string, nowMs: number): void {
  statement(
    db,
    `UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at_ms = NULL, claimed_until_ms = NULL, claim_token = NULL,
       finished_at_ms = ?
     WHERE endpoint_id = ? AND status = 'PENDING'`,
  ).run(nowMs, endpointId);
}

/** Its deliveries go with it, deleted here: the connection does not enforce the schema's ON DELETE CASCADE. */
export function deleteEndpoint(db: SqliteDb, contract: AddressKey, endpointId: string): boolean {
  if (!readEndpoint(db, contract, endpointId)) return false;
  statement(db, "DELETE FROM webhook_deliveries WHERE endpoint_id = ?").run(endpointId);
  return statement(db, "DELETE FROM webhook_endpoints WHERE contract = ? AND id = ?").run(contract, endpointId).changes > 0;
}

export function rotateSecret(db: SqliteDb, contract: AddressKey, endpointId: string, secret: string, previousExpiresAtMs: number): boolean {
  return (
    statement(
      db,
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at_ms = ?, secret = ?
       WHERE contract = ? AND id = ?`,
    ).run(previousExpiresAtMs, secret, contract, endpointId).changes > 0
  );
}

export function disableEndpoint(db: SqliteDb, endpointId: string, reason: string): void {
  statement(db, "UPDATE webhook_endpoints SET disabled = 1, disabled_reason = ? WHERE id = ? AND disabled = 0").run(reason, endpointId);
}

export function endBackoff(db: SqliteDb, endpointId: string): void {
  statement(db, "UPDATE webhook_endpoints SET backoff_until_ms = NULL WHERE id = ? AND backoff_until_ms IS NOT NULL").run(endpointId);
}

export function clearTimeouts(db: SqliteDb, endpointId: string): void {
  statement(db, "UPDATE webhook_endpoints SET timeouts_in_row = 0, backoff_until_ms = NULL WHERE id = ? AND timeouts_in_row > 0").run(
    endpointId,
  );
}

export function countTimeout(db: SqliteDb, endpointId: string): number | undefined {
  const count = statement(db, "UPDATE webhook_endpoints SET timeouts_in_row = timeouts_in_row + 1 WHERE id = ? RETURNING timeouts_in_row")
    .pluck(true)
    .get(endpointId) as bigint | undefined;
  return count === undefined ? undefined : toNumber(count);
}

export function holdBack(db: SqliteDb, endpointId: string, untilMs: number): void {
  statement(db, "UPDATE webhook_endpoints SET backoff_until_ms = max(coalesce(backoff_until_ms, 0), ?) WHERE id = ?").run(
    untilMs,
    endpointId,
  );
}

/** Enabled endpoints with PENDING deliveries, walked through the pending index one endpoint at a time (a skip scan). */
export function endpointsWithPending(db: SqliteDb): ClaimableEndpoint[] {
  const rows = statement(
    db,
    `WITH RECURSIVE pending(endpoint_id) AS (
       SELECT (SELECT min(endpoint_id) FROM webhook_deliveries WHERE status = 'PENDING')
       UNION ALL
       SELECT (SELECT min(d.endpoint_id) FROM webhook_deliveries d WHERE d.status = 'PENDING' AND d.endpoint_id > p.endpoint_id)
       FROM pending p WHERE p.endpoint_id IS NOT NULL
       LIMIT ${MAX_ENDPOINTS_WALKED_PER_CLAIM}
     )
     SELECT e.id, e.contract, e.timeouts_in_row, e.backoff_until_ms
     FROM pending p JOIN webhook_endpoints e ON e.id = p.endpoint_id WHERE e.disabled = 0`,
  ).all() as { id: string; contract: string; timeouts_in_row: bigint; backoff_until_ms: bigint | null }[];
  return rows.map((row) => ({
    id: row.id,
    contract: row.contract,
    timeoutsInRow: toNumber(row.timeouts_in_row),
    backoffUntilMs: toNullableNumber(row.backoff_until_ms),
  }));
}

/** Through webhook_deliveries_leased (domain/webhooks.ts leaseIsLive). */
export function sendsInFlight(db: SqliteDb, nowMs: number): EndpointSends[] {
  const rows = statement(
    db,
    `SELECT d.endpoint_id, e.contract, count(*) AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.claim_token IS NOT NULL AND d.claimed_until_ms > ? AND d.status = 'PENDING' GROUP BY d.endpoint_id`,
  ).all(nowMs) as { endpoint_id: string; contract: string; n: bigint }[];
  return rows.map((row) => ({ endpointId: row.endpoint_id, contract: row.contract, sends: toNumber(row.n) }));
}

/** One indexed range read per endpoint: domain/webhooks.ts isDue, in dueOrder. */
export function dueDeliveries(db: SqliteDb, rooms: readonly EndpointRoom[], nowMs: number): DueCandidate[] {
  const due = statement(
    db,
    `SELECT seq, next_attempt_at_ms FROM webhook_deliveries
     WHERE endpoint_id = ? AND status = 'PENDING' AND next_attempt_at_ms <= ? AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)
     ORDER BY next_attempt_at_ms, seq LIMIT ?`,
  );
  return rooms.flatMap(({ endpoint, room }) =>
    (due.all(endpoint.id, nowMs, nowMs, room) as { seq: bigint; next_attempt_at_ms: bigint }[]).map((row, turn) => ({
      seq: row.seq,
      contract: endpoint.contract,
      turn,
      dueAtMs: toNumber(row.next_attempt_at_ms),
    })),
  );
}

interface ClaimRow extends ClaimText {
  tries: bigint;
  previous_secret_expires_at_ms: bigint | null;
}

/** The writer is held since the rows were read (one IMMEDIATE transaction), so each is still due. */
export function leaseDeliveries(db: SqliteDb, seqs: readonly bigint[], nowMs: number, claimedUntilMs: number): ClaimedDelivery[] {
  const take = statement(db, "UPDATE webhook_deliveries SET claimed_until_ms = ?, claim_token = ? WHERE seq = ?");
  const read = statement(
    db,
    `SELECT d.id, d.endpoint_id, e.url, d.event_id, d.payload, d.tries, e.secret, e.previous_secret, e.previous_secret_expires_at_ms
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.seq = ?`,
  );
  return seqs.map((seq) => {
    const claimToken = randomBytes(12).toString("hex");
    take.run(claimedUntilMs, claimToken, seq);
    const row = read.get(seq) as ClaimRow;
    const previousSecretExpiresAtMs = toNullableNumber(row.previous_secret_expires_at_ms);
    return claimedOf(row, { tries: toNumber(row.tries), previousSecretExpiresAtMs, claimToken, claimedUntilMs, nowMs });
  });
}

export function renewLeases(db: SqliteDb, leases: readonly DeliveryLease[], claimedUntilMs: number): string[] {
  const renew = statement(db, "UPDATE webhook_deliveries SET claimed_until_ms = ? WHERE id = ? AND claim_token = ? AND status = 'PENDING'");
  return leases.filter((held) => renew.run(claimedUntilMs, held.id, held.claimToken).changes > 0).map((held) => held.id);
}

export function claimHeld(db: SqliteDb, lease: DeliveryLease): boolean {
  return statement(db, "SELECT 1 FROM webhook_deliveries WHERE id = ? AND claim_token = ?").get(lease.id, lease.claimToken) !== undefined;
}

/** Read, then written, inside the flow's IMMEDIATE transaction: the endpoint cannot change in between. */
export function storeAttempt(
  db: SqliteDb,
  lease: DeliveryLease & { endpointId: string },
  attempt: DeliveryAttempt,
  rows: AttemptRows,
): { endpointDisabled: boolean } | null {
  const held = statement(db, "SELECT attempts FROM webhook_deliveries WHERE id = ? AND claim_token = ?")
    .pluck(true)
    .get(lease.id, lease.claimToken) as string | undefined;
  if (held === undefined) return null;
  const disabled = statement(db, "SELECT disabled FROM webhook_endpoints WHERE id = ?").pluck(true).get(lease.endpointId) as
    bigint | undefined;
  const endpointDisabled = disabled !== undefined && disabled !== 0n;
  const after = endpointDisabled ? rows.disabled : rows.enabled;
  const attempts = [...(JSON.parse(held) as DeliveryAttempt[]), attempt].slice(-MAX_ATTEMPTS_KEPT);
  statement(
    db,
    `UPDATE webhook_deliveries SET status = ?, tries = tries + 1, attempts = ?, next_attempt_at_ms = ?, claimed_until_ms = NULL,
       claim_token = NULL, finished_at_ms = ? WHERE id = ?`,
  ).run(after.status, JSON.stringify(attempts), after.nextAttemptAtMs, after.finishedAtMs, lease.id);
  return { endpointDisabled };
}

interface DeliveryRow extends DeliveryText {
  seq: bigint;
  attempts: string;
  next_attempt_at_ms: bigint | null;
  created_at_ms: bigint;
}

const DELIVERY_COLUMNS = "seq, id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at_ms, created_at_ms";

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return deliveryOf(row, {
    attempts: JSON.parse(row.attempts) as DeliveryAttempt[],
    nextAttemptAtMs: toNullableNumber(row.next_attempt_at_ms),
    createdAtMs: toNumber(row.created_at_ms),
  });
}

export function listDeliveries(db: SqliteDb, endpointId: string, query: DeliveryQuery): DeliveryPage {
  const before = query.before === undefined ? null : BigInt(parseDeliveryPosition(query.before));
  const rows = statement(
    db,
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
     WHERE endpoint_id = ? AND (? IS NULL OR status = ?) AND (? IS NULL OR seq < ?)
     ORDER BY seq DESC LIMIT ?`,
  ).all(endpointId, query.status ?? null, query.status ?? null, before, before, query.limit + 1) as DeliveryRow[];
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { deliveries: page.map(toDelivery), next: more ? page[page.length - 1]!.seq.toString() : null };
}

export function readDelivery(db: SqliteDb, contract: AddressKey, endpointId: string, deliveryId: string): WebhookDelivery | null {
  const row = statement(
    db,
    `SELECT ${DELIVERY_COLUMNS.split(", ")
      .map((column) => `d.${column}`)
      .join(", ")}
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.id = ? AND d.endpoint_id = ? AND e.contract = ?`,
  ).get(deliveryId, endpointId, contract) as DeliveryRow | undefined;
  return row ? toDelivery(row) : null;
}

export function requeueDelivery(db: SqliteDb, deliveryId: string, nowMs: number): void {
  statement(
    db,
    `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at_ms = ?, finished_at_ms = NULL
     WHERE id = ? AND (status <> 'PENDING' OR claimed_until_ms IS NULL OR claimed_until_ms <= ?)`,
  ).run(nowMs, deliveryId, nowMs);
}

export function requeueFailed(db: SqliteDb, endpointId: string, sinceMs: number, nowMs: number, limit: number): number {
  return statement(
    db,
    `UPDATE webhook_deliveries SET status = 'PENDING', tries = 0, next_attempt_at_ms = ?, finished_at_ms = NULL
     WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'FAILED' AND created_at_ms >= ? ORDER BY seq LIMIT ?)`,
  ).run(nowMs, endpointId, sinceMs, limit).changes;
}

export function purgeDeliveries(db: SqliteDb, finishedBeforeMs: number, limit: number): number {
  return statement(
    db,
    `DELETE FROM webhook_deliveries WHERE seq IN (
       SELECT seq FROM webhook_deliveries WHERE status <> 'PENDING' AND finished_at_ms < ? ORDER BY finished_at_ms LIMIT ?)`,
  ).run(finishedBeforeMs, limit).changes;
}

export function webhookBacklog(db: SqliteDb): WebhookBacklog {
  const row = statement(
    db,
    "SELECT count(*) AS pending, min(created_at_ms) AS oldest FROM webhook_deliveries WHERE status = 'PENDING'",
  ).get() as {
    pending: bigint;
    oldest: bigint | null;
  };
  return { pending: toNumber(row.pending), oldestPendingCreatedAtMs: toNullableNumber(row.oldest) };
}
