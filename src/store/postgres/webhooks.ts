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
  type NewWebhookEndpoint,
  parseDeliveryPosition,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../../domain/webhooks.js";
import { toNullableNumber, toNumber, type PgClient, type Queryable } from "./db.js";

/**
 * Webhook endpoints and deliveries on PostgreSQL: the webhooks port's primitives, run by the flows
 * of src/ledger/webhooks.ts in their transaction (a pooled client) or write pass (the pool, each
 * statement alone: the lease re-checks its rows under their locks, SKIP LOCKED, so several
 * instances share the deliveries).
 */

/**
 * Fans `events` out to the deliveries of every endpoint that is enabled and subscribed to their
 * type, in the caller's transaction (the one appending the events): one statement for all of
 * them, an index probe per event on webhook_endpoints (contract) when the contract has none. The
 * events are chosen by the fan-out rule (domain/webhooks.ts fansOut); the join states its second
 * half (subscribes: types null, or naming the event's).
 */
export async function fanOutDeliveries(client: PgClient, events: readonly LedgerEvent[], nowMs: number): Promise<void> {
  const eligible = events.filter(fansOut);
  if (eligible.length === 0) return;
  await client.query({
    name: "pl-webhook-fan-out",
    text: `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms)
           SELECT 'wd_' || replace(gen_random_uuid()::text, '-', ''), e.id, ev.event_id, ev.event_type, ev.payload, 'PENDING', $5, $5
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS ev(stream, event_id, event_type, payload)
           JOIN webhook_endpoints e ON e.contract = ev.stream AND NOT e.disabled AND (e.types IS NULL OR ev.event_type = ANY (e.types))
           ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
    values: [
      eligible.map((event) => event.stream),
      eligible.map((event) => event.id),
      eligible.map((event) => event.type),
      eligible.map((event) => JSON.stringify(eventJson(event))),
      nowMs,
    ],
  });
}

interface EndpointRow extends EndpointText {
  types: StreamEventType[] | null;
  disabled: boolean;
  created_at_ms: string;
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return endpointOf(row, { types: row.types, disabled: row.disabled, createdAtMs: toNumber(row.created_at_ms) });
}

/** A transaction-scoped advisory lock per contract orders concurrent creations, so two cannot both pass the limit. */
export async function lockAndCountEndpoints(db: Queryable, contract: AddressKey): Promise<number> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints:' || $1))", [contract]);
  const { rows } = await db.query<{ count: string }>("SELECT count(*) AS count FROM webhook_endpoints WHERE contract = $1", [contract]);
  return Number(rows[0]!.count);
}

export async function insertEndpoint(db: Queryable, endpoint: NewWebhookEndpoint): Promise<void> {
  await db.query(
    `INSERT INTO webhook_endpoints (id, contract, url, types, description, disabled, secret, created_at_ms)
     VALUES ($1, $2, $3, $4, $5, false, $6, $7)`,
    [endpoint.id, endpoint.contract, endpoint.url, endpoint.types, endpoint.description, endpoint.secret, endpoint.createdAtMs],
  );
}

export async function listEndpoints(db: Queryable, contract: AddressKey): Promise<WebhookEndpoint[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = $1 ORDER BY created_at_ms, id`,
    [contract],
  );
  return rows.map(toEndpoint);
}

async function selectEndpoint(db: Queryable, contract: AddressKey, endpointId: string, lock: boolean): Promise<WebhookEndpoint | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = $1 AND id = $2${lock ? " FOR UPDATE" : ""}`,
    [contract, endpointId],
  );
  return rows[0] ? toEndpoint(rows[0]) : null;
}

export async function readEndpoint(db: Queryable, contract: AddressKey, endpointId: string): Promise<WebhookEndpoint | null> {
  return selectEndpoint(db, contract, endpointId, false);
}

/** Its row locked FOR UPDATE until the transaction ends: the flow decides from it and writes it. */
export async function lockEndpoint(db: Queryable, contract: AddressKey, endpointId: string): Promise<WebhookEndpoint | null> {
  return selectEndpoint(db, contract, endpointId, true);
}

export async function writeEndpoint(db: Queryable, endpointId: string, fields: EndpointFields): Promise<void> {
  await db.query("UPDATE webhook_endpoints SET url = $1, types = $2, description = $3, disabled = $4, disabled_reason = $5 WHERE id = $6", [
    fields.url,
    fields.types,
    fields.description,
    fields.disabled,
    fields.disabledReason,
    endpointId,
  ]);
}

export async function failPending(db: Queryable, endpointId: string, nowMs: number): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at_ms = NULL, claimed_until_ms = NULL, claim_token = NULL, finished_at_ms = $2
     WHERE endpoint_id = $1 AND status = 'PENDING'`,
    [endpointId, nowMs],
  );
}

/** Its deliveries go with it (ON DELETE CASCADE). */
export async function deleteEndpoint(db: Queryable, contract: AddressKey, endpointId: string): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM webhook_endpoints WHERE contract = $1 AND id = $2", [contract, endpointId]);
  return (rowCount ?? 0) > 0;
}

export async function rotateSecret(
  db: Queryable,
  contract: AddressKey,
  endpointId: string,
  secret: string,
  previousExpiresAtMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at_ms = $1, secret = $2 WHERE contract = $3 AND id = $4`,
    [previousExpiresAtMs, secret, contract, endpointId],
  );
  return (rowCount ?? 0) > 0;
}

export async function disableEndpoint(db: Queryable, endpointId: string, reason: string): Promise<void> {
  await db.query("UPDATE webhook_endpoints SET disabled = true, disabled_reason = $1 WHERE id = $2 AND NOT disabled", [reason, endpointId]);
}

export async function endBackoff(db: Queryable, endpointId: string): Promise<void> {
  await db.query("UPDATE webhook_endpoints SET backoff_until_ms = NULL WHERE id = $1 AND backoff_until_ms IS NOT NULL", [endpointId]);
}

export async function clearTimeouts(db: Queryable, endpointId: string): Promise<void> {
  await db.query({
    name: "pl-webhook-endpoint-answered",
    text: "UPDATE webhook_endpoints SET timeouts_in_row = 0, backoff_until_ms = NULL WHERE id = $1 AND timeouts_in_row > 0",
    values: [endpointId],
  });
}

export async function countTimeout(db: Queryable, endpointId: string): Promise<number | undefined> {
  const { rows } = await db.query<{ timeouts_in_row: number }>({
    name: "pl-webhook-endpoint-timed-out",
    text: "UPDATE webhook_endpoints SET timeouts_in_row = timeouts_in_row + 1 WHERE id = $1 RETURNING timeouts_in_row",
    values: [endpointId],
  });
  return rows[0]?.timeouts_in_row;
}

export async function holdBack(db: Queryable, endpointId: string, untilMs: number): Promise<void> {
  await db.query("UPDATE webhook_endpoints SET backoff_until_ms = GREATEST(COALESCE(backoff_until_ms, 0), $2) WHERE id = $1", [
    endpointId,
    untilMs,
  ]);
}

export async function insertDelivery(
  db: Queryable,
  deliveryId: string,
  endpointId: string,
  event: LedgerEvent,
  nowMs: number,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms)
     VALUES ($1, $2, $3, $4, $5, 'PENDING', $6, $6) ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
    [deliveryId, endpointId, event.id, event.type, JSON.stringify(eventJson(event)), nowMs],
  );
}

/** Enabled endpoints with PENDING deliveries, walked through the pending index one endpoint at a time (a skip scan). */
export async function endpointsWithPending(db: Queryable): Promise<ClaimableEndpoint[]> {
  const { rows } = await db.query<{ id: string; contract: string; timeouts_in_row: number; backoff_until_ms: string | null }>({
    name: "pl-webhook-endpoints-pending",
    text: `WITH RECURSIVE pending(endpoint_id) AS (
             (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'PENDING' ORDER BY endpoint_id LIMIT 1)
             UNION ALL
             SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status = 'PENDING' AND d.endpoint_id > p.endpoint_id
                     ORDER BY d.endpoint_id LIMIT 1)
             FROM pending p WHERE p.endpoint_id IS NOT NULL
           ),
           walked AS (SELECT endpoint_id FROM pending WHERE endpoint_id IS NOT NULL LIMIT ${MAX_ENDPOINTS_WALKED_PER_CLAIM})
           SELECT e.id, e.contract, e.timeouts_in_row, e.backoff_until_ms
           FROM walked w JOIN webhook_endpoints e ON e.id = w.endpoint_id WHERE NOT e.disabled`,
  });
  return rows.map((row) => ({
    id: row.id,
    contract: row.contract,
    timeoutsInRow: row.timeouts_in_row,
    backoffUntilMs: toNullableNumber(row.backoff_until_ms),
  }));
}

/** Through webhook_deliveries_leased (domain/webhooks.ts leaseIsLive). */
export async function sendsInFlight(db: Queryable, nowMs: number): Promise<EndpointSends[]> {
  const { rows } = await db.query<{ endpoint_id: string; contract: string; sends: number }>({
    name: "pl-webhook-sends-in-flight",
    text: `SELECT d.endpoint_id, e.contract, count(*)::int AS sends FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
           WHERE d.claim_token IS NOT NULL AND d.claimed_until_ms > $1 AND d.status = 'PENDING' GROUP BY d.endpoint_id, e.contract`,
    values: [nowMs],
  });
  return rows.map((row) => ({ endpointId: row.endpoint_id, contract: row.contract, sends: row.sends }));
}

/** One statement for every endpoint, an indexed range read each: domain/webhooks.ts isDue, in dueOrder. */
export async function dueDeliveries(db: Queryable, rooms: readonly EndpointRoom[], nowMs: number): Promise<DueCandidate[]> {
  const { rows } = await db.query<{ seq: string; contract: string; turn: number; next_attempt_at_ms: string }>({
    name: "pl-webhook-due",
    text: `SELECT due.seq, o.contract, (due.turn - 1)::int AS turn, due.next_attempt_at_ms
           FROM unnest($1::text[], $2::text[], $3::int[]) AS o(endpoint_id, contract, room)
           CROSS JOIN LATERAL (
             SELECT seq, next_attempt_at_ms, row_number() OVER (ORDER BY next_attempt_at_ms, seq) AS turn FROM (
               SELECT seq, next_attempt_at_ms FROM webhook_deliveries
               WHERE endpoint_id = o.endpoint_id AND status = 'PENDING' AND next_attempt_at_ms <= $4
                 AND (claimed_until_ms IS NULL OR claimed_until_ms <= $4)
               ORDER BY next_attempt_at_ms, seq LIMIT o.room) taken) due`,
    values: [rooms.map((r) => r.endpoint.id), rooms.map((r) => r.endpoint.contract), rooms.map((r) => r.room), nowMs],
  });
  return rows.map((row) => ({ seq: BigInt(row.seq), contract: row.contract, turn: row.turn, dueAtMs: toNumber(row.next_attempt_at_ms) }));
}

interface ClaimRow extends ClaimText {
  seq: string;
  tries: number;
  previous_secret_expires_at_ms: string | null;
  claim_token: string;
}

/**
 * One statement: each chosen row locked SKIP LOCKED (instances claiming at once take different
 * rows) and re-checked as due against its latest version (another may have leased it since it was
 * read), then leased.
 */
export async function leaseDeliveries(
  db: Queryable,
  seqs: readonly bigint[],
  nowMs: number,
  claimedUntilMs: number,
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimRow>({
    name: "pl-webhook-lease",
    text: `WITH locked AS (
             SELECT d.seq FROM webhook_deliveries d
             WHERE d.seq = ANY ($1::bigint[]) AND d.status = 'PENDING' AND d.next_attempt_at_ms <= $2
               AND (d.claimed_until_ms IS NULL OR d.claimed_until_ms <= $2)
             FOR UPDATE OF d SKIP LOCKED
           )
           UPDATE webhook_deliveries d SET claimed_until_ms = $3, claim_token = gen_random_uuid()::text
           FROM locked, webhook_endpoints e
           WHERE d.seq = locked.seq AND e.id = d.endpoint_id
           RETURNING d.seq, d.id, d.endpoint_id, e.url, d.event_id, d.payload, d.tries, e.secret, e.previous_secret,
             e.previous_secret_expires_at_ms, d.claim_token`,
    values: [seqs.map(String), nowMs, claimedUntilMs],
  });
  // In the order chosen (the job sends them in that order).
  const place = new Map(seqs.map((seq, index) => [seq.toString(), index]));
  return rows
    .sort((a, b) => place.get(a.seq)! - place.get(b.seq)!)
    .map((row) =>
      claimedOf(row, {
        tries: row.tries,
        previousSecretExpiresAtMs: toNullableNumber(row.previous_secret_expires_at_ms),
        claimToken: row.claim_token,
        claimedUntilMs,
        nowMs,
      }),
    );
}

export async function renewLeases(db: Queryable, leases: readonly DeliveryLease[], claimedUntilMs: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: "pl-webhook-renew-leases",
    text: `UPDATE webhook_deliveries d SET claimed_until_ms = $3
           FROM unnest($1::text[], $2::text[]) AS held(id, claim_token)
           WHERE d.id = held.id AND d.claim_token = held.claim_token AND d.status = 'PENDING'
           RETURNING d.id`,
    values: [leases.map((held) => held.id), leases.map((held) => held.claimToken), claimedUntilMs],
  });
  return rows.map((row) => row.id);
}

/** Not locked: the endpoint's row is written first (recordAttempt's order); storeAttempt checks the claim again. */
export async function claimHeld(db: Queryable, lease: DeliveryLease): Promise<boolean> {
  const { rows } = await db.query({
    name: "pl-webhook-claim-held",
    text: "SELECT 1 FROM webhook_deliveries WHERE id = $1 AND claim_token = $2",
    values: [lease.id, lease.claimToken],
  });
  return rows.length > 0;
}

/** One statement reads the endpoint and writes the row it decides, so the endpoint cannot change in between. */
export async function storeAttempt(
  db: Queryable,
  lease: DeliveryLease & { endpointId: string },
  attempt: DeliveryAttempt,
  rows: AttemptRows,
): Promise<{ endpointDisabled: boolean } | null> {
  const stored = await db.query<{ endpoint_disabled: boolean }>({
    name: "pl-webhook-record-attempt",
    text: `WITH endpoint AS (SELECT coalesce((SELECT disabled FROM webhook_endpoints WHERE id = $2), false) AS disabled)
           UPDATE webhook_deliveries SET
             status = CASE WHEN endpoint.disabled THEN $5 ELSE $4 END,
             tries = tries + 1,
             attempts = CASE WHEN jsonb_array_length(attempts) >= $10 THEN attempts - 0 ELSE attempts END || jsonb_build_array($11::jsonb),
             next_attempt_at_ms = CASE WHEN endpoint.disabled THEN $7::bigint ELSE $6::bigint END,
             claimed_until_ms = NULL, claim_token = NULL,
             finished_at_ms = CASE WHEN endpoint.disabled THEN $9::bigint ELSE $8::bigint END
           FROM endpoint
           WHERE id = $1 AND claim_token = $3
           RETURNING endpoint.disabled AS endpoint_disabled`,
    values: [
      lease.id,
      lease.endpointId,
      lease.claimToken,
      rows.enabled.status,
      rows.disabled.status,
      rows.enabled.nextAttemptAtMs,
      rows.disabled.nextAttemptAtMs,
      rows.enabled.finishedAtMs,
      rows.disabled.finishedAtMs,
      MAX_ATTEMPTS_KEPT,
      JSON.stringify(attempt),
    ],
  });
  return stored.rows[0] ? { endpointDisabled: stored.rows[0].endpoint_disabled } : null;
}

interface DeliveryRow extends DeliveryText {
  seq: string;
  attempts: DeliveryAttempt[];
  next_attempt_at_ms: string | null;
  created_at_ms: string;
}

const DELIVERY_COLUMNS =
  "d.seq, d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at_ms, d.created_at_ms";

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return deliveryOf(row, {
    attempts: row.attempts,
    nextAttemptAtMs: toNullableNumber(row.next_attempt_at_ms),
    createdAtMs: toNumber(row.created_at_ms),
  });
}

export async function listDeliveries(db: Queryable, endpointId: string, query: DeliveryQuery): Promise<DeliveryPage> {
  const before = query.before === undefined ? null : parseDeliveryPosition(query.before);
  const { rows } = await db.query<DeliveryRow>({
    name: "pl-webhook-list-deliveries",
    text: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
           WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::bigint IS NULL OR d.seq < $3)
           ORDER BY d.seq DESC LIMIT $4`,
    values: [endpointId, query.status ?? null, before, query.limit + 1],
  });
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { deliveries: page.map(toDelivery), next: more ? page[page.length - 1]!.seq : null };
}

export async function readDelivery(
  db: Queryable,
  contract: AddressKey,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDelivery | null> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.id = $1 AND d.endpoint_id = $2 AND e.contract = $3`,
    [deliveryId, endpointId, contract],
  );
  return rows[0] ? toDelivery(rows[0]) : null;
}

export async function requeueDelivery(db: Queryable, deliveryId: string, nowMs: number): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at_ms = $1, finished_at_ms = NULL
     WHERE id = $2 AND (status <> 'PENDING' OR claimed_until_ms IS NULL OR claimed_until_ms <= $1)`,
    [nowMs, deliveryId],
  );
}

export async function requeueFailed(db: Queryable, endpointId: string, sinceMs: number, nowMs: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE webhook_deliveries SET status = 'PENDING', tries = 0, next_attempt_at_ms = $1, finished_at_ms = NULL
     WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE endpoint_id = $2 AND status = 'FAILED' AND created_at_ms >= $3
                   ORDER BY seq LIMIT $4 FOR UPDATE)`,
    [nowMs, endpointId, sinceMs, limit],
  );
  return rowCount ?? 0;
}

export async function purgeDeliveries(db: Queryable, finishedBeforeMs: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_deliveries WHERE seq IN (
       SELECT seq FROM webhook_deliveries WHERE status <> 'PENDING' AND finished_at_ms < $1 ORDER BY finished_at_ms LIMIT $2
       FOR UPDATE SKIP LOCKED)`,
    [finishedBeforeMs, limit],
  );
  return rowCount ?? 0;
}

export async function webhookBacklog(db: Queryable): Promise<WebhookBacklog> {
  const { rows } = await db.query<{ pending: string; oldest: string | null }>(
    "SELECT count(*) AS pending, min(created_at_ms) AS oldest FROM webhook_deliveries WHERE status = 'PENDING'",
  );
  return { pending: Number(rows[0]!.pending), oldestPendingCreatedAtMs: toNullableNumber(rows[0]!.oldest) };
}
