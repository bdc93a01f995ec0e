import { randomBytes } from "node:crypto";
import type { AddressKey } from "../../domain/address.js";
import { eventJson, type LedgerEvent, type StreamEventType } from "../../domain/events.js";
import type { DeliveryClaim, DeliveryPage, DeliveryQuery, EndpointCreateResult, WebhookBacklog, WebhooksStore } from "../ports/webhooks.js";
import { claimedOf, deliveryOf, endpointOf, ENDPOINT_COLUMNS } from "../webhook-rows.js";
import type { ClaimText, DeliveryText, EndpointText } from "../webhook-rows.js";
import {
  type AttemptOutcome,
  backoffUntilMs,
  changedEndpoint,
  chooseDue,
  type ClaimableEndpoint,
  type ClaimedDelivery,
  deliveryAfterAttempt,
  type EndpointOperation,
  type DeliveryAttempt,
  type DeliveryLease,
  endpointHealth,
  endpointRoom,
  fansOut,
  MAX_ATTEMPTS_KEPT,
  MAX_ENDPOINTS_WALKED_PER_CLAIM,
  newDeliveryId,
  type NewWebhookEndpoint,
  parseDeliveryPosition,
  refusal,
  subscribes,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointChange,
} from "../../domain/webhooks.js";
import { statement, toNullableNumber, toNumber, type SqliteDb } from "./db.js";

/**
 * Webhook endpoints and deliveries on SQLite. Every function runs inside the caller's
 * transaction (index.ts opens it); better-sqlite3 is synchronous, so a claim and its lease
 * are taken without interleaving.
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
      for (const event of streamEvents) if (subscribes(types, event.type)) insertDelivery(db, endpoint.id, event, nowMs);
    }
  }
}

function insertDelivery(db: SqliteDb, endpointId: string, event: LedgerEvent, nowMs: number): string {
  const id = newDeliveryId();
  statement(
    db,
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms)
     VALUES (?, ?, ?, ?, ?, 'PENDING', ?, ?) ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
  ).run(id, endpointId, event.id, event.type, JSON.stringify(eventJson(event)), nowMs, nowMs);
  return id;
}

export function createEndpoint(db: SqliteDb, endpoint: NewWebhookEndpoint, maxPerContract: number): EndpointCreateResult {
  const count = toNumber(statement(db, "SELECT count(*) FROM webhook_endpoints WHERE contract = ?").pluck(true).get(endpoint.contract));
  if (count >= maxPerContract) return { kind: "limit_reached" };
  statement(
    db,
    `INSERT INTO webhook_endpoints (id, contract, url, types, description, disabled, secret, created_at_ms)
     VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
  ).run(
    endpoint.id,
    endpoint.contract,
    endpoint.url,
    endpoint.types === null ? null : JSON.stringify(endpoint.types),
    endpoint.description,
    endpoint.secret,
    endpoint.createdAtMs,
  );
  return { kind: "created", endpoint: readEndpoint(db, endpoint.contract, endpoint.id)! };
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

export function updateEndpoint(
  db: SqliteDb,
  contract: AddressKey,
  endpointId: string,
  change: WebhookEndpointChange,
  nowMs: number,
): WebhookEndpoint | null {
  const current = readEndpoint(db, contract, endpointId);
  if (!current) return null;
  const { fields, failsPending } = changedEndpoint(current, change);
  statement(db, "UPDATE webhook_endpoints SET url = ?, types = ?, description = ?, disabled = ?, disabled_reason = ? WHERE id = ?").run(
    fields.url,
    fields.types === null ? null : JSON.stringify(fields.types),
    fields.description,
    fields.disabled ? 1 : 0,
    fields.disabledReason,
    endpointId,
  );
  if (failsPending) failPending(db, endpointId, nowMs);
  return readEndpoint(db, contract, endpointId);
}

/** A disabled endpoint is sent nothing: its queue is failed, for recover to take up again once it is enabled. */
function failPending(db: SqliteDb, endpointId: string, nowMs: number): void {
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

export function rotateSecret(
  db: SqliteDb,
  contract: AddressKey,
  endpointId: string,
  secret: string,
  nowMs: number,
  overlapMs: number,
): boolean {
  return (
    statement(
      db,
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at_ms = ?, secret = ?
       WHERE contract = ? AND id = ?`,
    ).run(nowMs + overlapMs, secret, contract, endpointId).changes > 0
  );
}

/**
 * An operator's test or retry is sent now, not after the endpoint's backoff; it still goes one at
 * a time while the endpoint times out (timeouts_in_row is kept).
 */
function endBackoff(db: SqliteDb, endpointId: string): void {
  statement(db, "UPDATE webhook_endpoints SET backoff_until_ms = NULL WHERE id = ? AND backoff_until_ms IS NOT NULL").run(endpointId);
}

export function createTestDelivery(
  db: SqliteDb,
  contract: AddressKey,
  endpointId: string,
  event: LedgerEvent,
  nowMs: number,
): EndpointOperation<string> {
  const refused = refusal(readEndpoint(db, contract, endpointId));
  if (refused) return refused;
  endBackoff(db, endpointId);
  return { kind: "done", value: insertDelivery(db, endpointId, event, nowMs) };
}

/** Enabled endpoints with PENDING deliveries, walked through the pending index one endpoint at a time (a skip scan). */
function endpointsWithPending(db: SqliteDb): ClaimableEndpoint[] {
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

/** Live leases (sends in flight, every job's) per endpoint and per contract, through webhook_deliveries_leased. */
function sendsInFlight(db: SqliteDb, nowMs: number): { byEndpoint: Map<string, number>; byContract: Map<string, number> } {
  const rows = statement(
    db,
    `SELECT d.endpoint_id, e.contract, count(*) AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.claim_token IS NOT NULL AND d.claimed_until_ms > ? AND d.status = 'PENDING' GROUP BY d.endpoint_id`,
  ).all(nowMs) as { endpoint_id: string; contract: string; n: bigint }[];
  const byEndpoint = new Map<string, number>();
  const byContract = new Map<string, number>();
  for (const row of rows) {
    byEndpoint.set(row.endpoint_id, toNumber(row.n));
    byContract.set(row.contract, (byContract.get(row.contract) ?? 0) + toNumber(row.n));
  }
  return { byEndpoint, byContract };
}

interface DueRow {
  seq: bigint;
  next_attempt_at_ms: bigint;
}

/** The due deliveries of each open endpoint, up to its room, dealt out by the claim rule (domain/webhooks.ts endpointRoom, chooseDue). */
export function claimDue(db: SqliteDb, claim: DeliveryClaim): ClaimedDelivery[] {
  const inFlight = sendsInFlight(db, claim.nowMs);
  const candidates: { seq: bigint; contract: string; turn: number; dueAtMs: number }[] = [];
  const due = statement(
    db,
    `SELECT seq, next_attempt_at_ms FROM webhook_deliveries
     WHERE endpoint_id = ? AND status = 'PENDING' AND next_attempt_at_ms <= ? AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)
     ORDER BY next_attempt_at_ms, seq LIMIT ?`,
  );
  for (const endpoint of endpointsWithPending(db)) {
    const room = endpointRoom(endpoint, inFlight.byEndpoint.get(endpoint.id) ?? 0, claim);
    if (room <= 0) continue;
    const rows = due.all(endpoint.id, claim.nowMs, claim.nowMs, room) as DueRow[];
    rows.forEach((row, turn) =>
      candidates.push({ seq: row.seq, contract: endpoint.contract, turn, dueAtMs: toNumber(row.next_attempt_at_ms) }),
    );
  }
  const claimedUntilMs = claim.nowMs + claim.leaseMs;
  return chooseDue(candidates, inFlight.byContract, claim).map((chosen) => lease(db, chosen.seq, claimedUntilMs, claim.nowMs));
}

interface ClaimRow extends ClaimText {
  tries: bigint;
  previous_secret_expires_at_ms: bigint | null;
}

function lease(db: SqliteDb, seq: bigint, claimedUntilMs: number, nowMs: number): ClaimedDelivery {
  const claimToken = randomBytes(12).toString("hex");
  statement(db, "UPDATE webhook_deliveries SET claimed_until_ms = ?, claim_token = ? WHERE seq = ?").run(claimedUntilMs, claimToken, seq);
  const row = statement(
    db,
    `SELECT d.id, d.endpoint_id, e.url, d.event_id, d.payload, d.tries, e.secret, e.previous_secret, e.previous_secret_expires_at_ms
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.seq = ?`,
  ).get(seq) as ClaimRow;
  const previousSecretExpiresAtMs = toNullableNumber(row.previous_secret_expires_at_ms);
  return claimedOf(row, { tries: toNumber(row.tries), previousSecretExpiresAtMs, claimToken, claimedUntilMs, nowMs });
}

export function renewLeases(db: SqliteDb, leases: readonly DeliveryLease[], claimedUntilMs: number): string[] {
  const renew = statement(db, "UPDATE webhook_deliveries SET claimed_until_ms = ? WHERE id = ? AND claim_token = ? AND status = 'PENDING'");
  return leases.filter((held) => renew.run(claimedUntilMs, held.id, held.claimToken).changes > 0).map((held) => held.id);
}

/** Stores what the attempt says of the endpoint's health (domain/webhooks.ts endpointHealth, backoffUntilMs). */
function recordEndpointHealth(db: SqliteDb, endpointId: string, outcome: AttemptOutcome): void {
  const health = endpointHealth(outcome);
  if (health === "answered") {
    statement(db, "UPDATE webhook_endpoints SET timeouts_in_row = 0, backoff_until_ms = NULL WHERE id = ? AND timeouts_in_row > 0").run(
      endpointId,
    );
  } else if (health === "timed_out") {
    const timeouts = toNumber(
      statement(db, "UPDATE webhook_endpoints SET timeouts_in_row = timeouts_in_row + 1 WHERE id = ? RETURNING timeouts_in_row")
        .pluck(true)
        .get(endpointId),
    );
    statement(db, "UPDATE webhook_endpoints SET backoff_until_ms = max(coalesce(backoff_until_ms, 0), ?) WHERE id = ?").run(
      backoffUntilMs(outcome.attempt, timeouts),
      endpointId,
    );
  }
}

/**
 * Stores the attempt if the claim is still ours. A retry of an endpoint that was disabled
 * meanwhile fails instead (nothing is sent to a disabled endpoint); a 410 disables it here.
 */
export function recordAttempt(db: SqliteDb, delivery: ClaimedDelivery, outcome: AttemptOutcome): boolean {
  const row = statement(db, "SELECT attempts FROM webhook_deliveries WHERE id = ? AND claim_token = ?").get(
    delivery.id,
    delivery.claimToken,
  ) as { attempts: string } | undefined;
  if (!row) return false;
  recordEndpointHealth(db, delivery.endpointId, outcome);
  if (outcome.disableEndpoint !== null) {
    statement(db, "UPDATE webhook_endpoints SET disabled = 1, disabled_reason = ? WHERE id = ? AND disabled = 0").run(
      outcome.disableEndpoint,
      delivery.endpointId,
    );
  }
  const endpointDisabled =
    toNumber(statement(db, "SELECT disabled FROM webhook_endpoints WHERE id = ?").pluck(true).get(delivery.endpointId)) !== 0;
  const after = deliveryAfterAttempt(outcome, endpointDisabled);
  const attempts = [...(JSON.parse(row.attempts) as DeliveryAttempt[]), outcome.attempt].slice(-MAX_ATTEMPTS_KEPT);
  statement(
    db,
    `UPDATE webhook_deliveries SET status = ?, tries = tries + 1, attempts = ?, next_attempt_at_ms = ?, claimed_until_ms = NULL,
       claim_token = NULL, finished_at_ms = ? WHERE id = ?`,
  ).run(after.status, JSON.stringify(attempts), after.nextAttemptAtMs, after.finishedAtMs, delivery.id);
  if (endpointDisabled) failPending(db, delivery.endpointId, outcome.attempt.atMs);
  return true;
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

export function listDeliveries(db: SqliteDb, contract: AddressKey, endpointId: string, query: DeliveryQuery): DeliveryPage | null {
  if (!readEndpoint(db, contract, endpointId)) return null;
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

export function retryDelivery(
  db: SqliteDb,
  contract: AddressKey,
  endpointId: string,
  deliveryId: string,
  nowMs: number,
): EndpointOperation<WebhookDelivery> {
  const refused = refusal(readDelivery(db, contract, endpointId, deliveryId) && readEndpoint(db, contract, endpointId));
  if (refused) return refused;
  endBackoff(db, endpointId);
  statement(
    db,
    `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at_ms = ?, finished_at_ms = NULL
     WHERE id = ? AND (status <> 'PENDING' OR claimed_until_ms IS NULL OR claimed_until_ms <= ?)`,
  ).run(nowMs, deliveryId, nowMs);
  return { kind: "done", value: readDelivery(db, contract, endpointId, deliveryId)! };
}

export function recoverDeliveries(
  db: SqliteDb,
  contract: AddressKey,
  endpointId: string,
  sinceMs: number,
  nowMs: number,
  limit: number,
): EndpointOperation<number> {
  const refused = refusal(readEndpoint(db, contract, endpointId));
  if (refused) return refused;
  const { changes } = statement(
    db,
    `UPDATE webhook_deliveries SET status = 'PENDING', tries = 0, next_attempt_at_ms = ?, finished_at_ms = NULL
     WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'FAILED' AND created_at_ms >= ? ORDER BY seq LIMIT ?)`,
  ).run(nowMs, endpointId, sinceMs, limit);
  return { kind: "done", value: changes };
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

/** The WebhooksStore operations, each one transaction; `current` gives the connection in use (index.ts may reopen it). */
export function webhookOperations(current: () => SqliteDb) {
  const write = <T>(work: (db: SqliteDb) => T): Promise<T> => {
    const db = current();
    return Promise.resolve(db.transaction(() => work(db)).immediate());
  };
  const read = <T>(work: (db: SqliteDb) => T): Promise<T> => {
    const db = current();
    return Promise.resolve(db.transaction(() => work(db))());
  };
  return {
    createWebhookEndpoint: (endpoint, max) => write((db) => createEndpoint(db, endpoint, max)),
    listWebhookEndpoints: (contract) => read((db) => listEndpoints(db, contract)),
    getWebhookEndpoint: (contract, id) => read((db) => readEndpoint(db, contract, id)),
    updateWebhookEndpoint: (contract, id, change, nowMs) => write((db) => updateEndpoint(db, contract, id, change, nowMs)),
    deleteWebhookEndpoint: (contract, id) => write((db) => deleteEndpoint(db, contract, id)),
    rotateWebhookSecret: (contract, id, secret, nowMs, overlapMs) =>
      write((db) => rotateSecret(db, contract, id, secret, nowMs, overlapMs)),
    createTestDelivery: (contract, id, event, nowMs) => write((db) => createTestDelivery(db, contract, id, event, nowMs)),
    claimDueDeliveries: (claim) => write((db) => claimDue(db, claim)),
    renewDeliveryLeases: (leases, claimedUntilMs) => write((db) => renewLeases(db, leases, claimedUntilMs)),
    recordDeliveryAttempt: (delivery, outcome) => write((db) => recordAttempt(db, delivery, outcome)),
    listDeliveries: (contract, id, query) => read((db) => listDeliveries(db, contract, id, query)),
    getDelivery: (contract, id, deliveryId) => read((db) => readDelivery(db, contract, id, deliveryId)),
    retryDelivery: (contract, id, deliveryId, nowMs) => write((db) => retryDelivery(db, contract, id, deliveryId, nowMs)),
    recoverDeliveries: (contract, id, sinceMs, nowMs, limit) => write((db) => recoverDeliveries(db, contract, id, sinceMs, nowMs, limit)),
    purgeDeliveries: (beforeMs, limit) => write((db) => purgeDeliveries(db, beforeMs, limit)),
    webhookBacklog: () => read((db) => webhookBacklog(db)),
  } satisfies WebhooksStore;
}
