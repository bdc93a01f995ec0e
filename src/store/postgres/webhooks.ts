import type { AddressKey } from "../../domain/address.js";
import { eventJson, type LedgerEvent, type StreamEventType } from "../../domain/events.js";
import type { DeliveryClaim, DeliveryPage, DeliveryQuery, EndpointCreateResult, WebhookBacklog, WebhooksStore } from "../ports/webhooks.js";
import { claimedOf, deliveryOf, endpointOf, ENDPOINT_COLUMNS } from "../webhook-rows.js";
import type { ClaimText, DeliveryText, EndpointText } from "../webhook-rows.js";
import {
  type AttemptOutcome,
  backoffUntilMs,
  changedEndpoint,
  type ClaimedDelivery,
  deliveryAfterAttempt,
  type EndpointOperation,
  type DeliveryAttempt,
  type DeliveryLease,
  endpointHealth,
  fansOut,
  MAX_ATTEMPTS_KEPT,
  MAX_ENDPOINTS_WALKED_PER_CLAIM,
  newDeliveryId,
  type NewWebhookEndpoint,
  parseDeliveryPosition,
  refusal,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointChange,
} from "../../domain/webhooks.js";
import { toNullableNumber, toNumber, transaction, type PgClient, type PgPool, type Queryable } from "./db.js";

/**
 * Webhook endpoints and deliveries on PostgreSQL. Functions taking a PgClient run inside the
 * caller's transaction (index.ts opens it); the claim is one statement whose row locks
 * (SKIP LOCKED) and lease let several instances share the deliveries.
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
export async function createEndpoint(
  client: PgClient,
  endpoint: NewWebhookEndpoint,
  maxPerContract: number,
): Promise<EndpointCreateResult> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints:' || $1))", [endpoint.contract]);
  const { rows } = await client.query<{ count: string }>("SELECT count(*) AS count FROM webhook_endpoints WHERE contract = $1", [
    endpoint.contract,
  ]);
  if (Number(rows[0]!.count) >= maxPerContract) return { kind: "limit_reached" };
  const inserted = await client.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, contract, url, types, description, disabled, secret, created_at_ms)
     VALUES ($1, $2, $3, $4, $5, false, $6, $7) RETURNING ${ENDPOINT_COLUMNS}`,
    [endpoint.id, endpoint.contract, endpoint.url, endpoint.types, endpoint.description, endpoint.secret, endpoint.createdAtMs],
  );
  return { kind: "created", endpoint: toEndpoint(inserted.rows[0]!) };
}

export async function listEndpoints(db: Queryable, contract: AddressKey): Promise<WebhookEndpoint[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = $1 ORDER BY created_at_ms, id`,
    [contract],
  );
  return rows.map(toEndpoint);
}

export async function readEndpoint(db: Queryable, contract: AddressKey, endpointId: string, lock = false): Promise<WebhookEndpoint | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE contract = $1 AND id = $2${lock ? " FOR UPDATE" : ""}`,
    [contract, endpointId],
  );
  return rows[0] ? toEndpoint(rows[0]) : null;
}

export async function updateEndpoint(
  client: PgClient,
  contract: AddressKey,
  endpointId: string,
  change: WebhookEndpointChange,
  nowMs: number,
): Promise<WebhookEndpoint | null> {
  const current = await readEndpoint(client, contract, endpointId, true);
  if (!current) return null;
  const { fields, failsPending } = changedEndpoint(current, change);
  const { rows } = await client.query<EndpointRow>(
    `UPDATE webhook_endpoints SET url = $1, types = $2, description = $3, disabled = $4, disabled_reason = $5 WHERE id = $6
     RETURNING ${ENDPOINT_COLUMNS}`,
    [fields.url, fields.types, fields.description, fields.disabled, fields.disabledReason, endpointId],
  );
  if (failsPending) await failPending(client, endpointId, nowMs);
  return toEndpoint(rows[0]!);
}

/** A disabled endpoint is sent nothing: its queue is failed, for recover to take up again once it is enabled. */
async function failPending(db: Queryable, endpointId: string, nowMs: number): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at_ms = NULL, claimed_until_ms = NULL, claim_token = NULL, finished_at_ms = $2
     WHERE endpoint_id = $1 AND status = 'PENDING'`,
    [endpointId, nowMs],
  );
}

export async function deleteEndpoint(db: Queryable, contract: AddressKey, endpointId: string): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM webhook_endpoints WHERE contract = $1 AND id = $2", [contract, endpointId]);
  return (rowCount ?? 0) > 0;
}

export async function rotateSecret(
  db: Queryable,
  contract: AddressKey,
  endpointId: string,
  secret: string,
  nowMs: number,
  overlapMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at_ms = $1, secret = $2 WHERE contract = $3 AND id = $4`,
    [nowMs + overlapMs, secret, contract, endpointId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * An operator's test or retry is sent now, not after the endpoint's backoff; it still goes one at
 * a time while the endpoint times out (timeouts_in_row is kept).
 */
async function endBackoff(client: PgClient, endpointId: string): Promise<void> {
  await client.query("UPDATE webhook_endpoints SET backoff_until_ms = NULL WHERE id = $1 AND backoff_until_ms IS NOT NULL", [endpointId]);
}

export async function createTestDelivery(
  client: PgClient,
  contract: AddressKey,
  endpointId: string,
  event: LedgerEvent,
  nowMs: number,
): Promise<EndpointOperation<string>> {
  const refused = refusal(await readEndpoint(client, contract, endpointId));
  if (refused) return refused;
  await endBackoff(client, endpointId);
  const id = newDeliveryId();
  await client.query(
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms)
     VALUES ($1, $2, $3, $4, $5, 'PENDING', $6, $6)`,
    [id, endpointId, event.id, event.type, JSON.stringify(eventJson(event)), nowMs],
  );
  return { kind: "done", value: id };
}

interface ClaimRow extends ClaimText {
  tries: number;
  previous_secret_expires_at_ms: string | null;
  claim_token: string;
}

/** $1 now, $2 limit, $3 per-endpoint cap, $4 excluded endpoints, $5 lease end, $6 per-contract cap (claimDue). */
const CLAIM_SQL = `WITH RECURSIVE pending(endpoint_id) AS (
    (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'PENDING' ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status = 'PENDING' AND d.endpoint_id > p.endpoint_id
            ORDER BY d.endpoint_id LIMIT 1)
    FROM pending p WHERE p.endpoint_id IS NOT NULL
  ),
  walked AS (SELECT endpoint_id FROM pending WHERE endpoint_id IS NOT NULL LIMIT ${MAX_ENDPOINTS_WALKED_PER_CLAIM}),
  leased AS (
    SELECT endpoint_id, count(*)::int AS sends FROM webhook_deliveries
    WHERE claim_token IS NOT NULL AND claimed_until_ms > $1 AND status = 'PENDING'
    GROUP BY endpoint_id
  ),
  contract_leased AS (
    SELECT e.contract, sum(l.sends)::int AS sends FROM leased l JOIN webhook_endpoints e ON e.id = l.endpoint_id GROUP BY e.contract
  ),
  open_endpoints AS (
    SELECT w.endpoint_id, e.contract,
      GREATEST((CASE WHEN e.timeouts_in_row > 0 THEN 1 ELSE $3::int END) - COALESCE(l.sends, 0), 0) AS room
    FROM walked w
    JOIN webhook_endpoints e ON e.id = w.endpoint_id AND NOT e.disabled
      AND (e.backoff_until_ms IS NULL OR e.backoff_until_ms <= $1)
    LEFT JOIN leased l ON l.endpoint_id = w.endpoint_id
    WHERE w.endpoint_id <> ALL ($4::text[])
  ),
  candidates AS (
    SELECT c.seq, o.contract, c.turn, c.next_attempt_at_ms FROM open_endpoints o
    CROSS JOIN LATERAL (
      SELECT seq, next_attempt_at_ms, row_number() OVER (ORDER BY next_attempt_at_ms, seq) AS turn FROM (
        SELECT seq, next_attempt_at_ms FROM webhook_deliveries
        WHERE endpoint_id = o.endpoint_id AND status = 'PENDING' AND next_attempt_at_ms <= $1
          AND (claimed_until_ms IS NULL OR claimed_until_ms <= $1)
        ORDER BY next_attempt_at_ms, seq LIMIT o.room) due) c
  ),
  chosen AS (
    SELECT ranked.seq FROM (
      SELECT c.seq, c.turn, c.next_attempt_at_ms,
        row_number() OVER (PARTITION BY c.contract ORDER BY c.turn, c.next_attempt_at_ms, c.seq) AS place,
        $6::int - COALESCE(cl.sends, 0) AS contract_room
      FROM candidates c LEFT JOIN contract_leased cl ON cl.contract = c.contract
    ) ranked
    WHERE ranked.place <= ranked.contract_room
    ORDER BY ranked.turn, ranked.next_attempt_at_ms LIMIT $2
  ),
  locked AS (
    SELECT d.seq FROM webhook_deliveries d JOIN chosen USING (seq)
    WHERE d.status = 'PENDING' AND d.next_attempt_at_ms <= $1 AND (d.claimed_until_ms IS NULL OR d.claimed_until_ms <= $1)
    FOR UPDATE OF d SKIP LOCKED
  )
  UPDATE webhook_deliveries d SET claimed_until_ms = $5, claim_token = gen_random_uuid()::text
  FROM locked, webhook_endpoints e
  WHERE d.seq = locked.seq AND e.id = d.endpoint_id
  RETURNING d.id, d.endpoint_id, e.url, d.event_id, d.payload, d.tries, e.secret, e.previous_secret,
    e.previous_secret_expires_at_ms, d.claim_token`;

/**
 * The claim rule of domain/webhooks.ts (endpointRoom, chooseDue), as one statement: walk the endpoints with PENDING deliveries through the pending index (a skip
 * scan), count the sends in flight (live leases, every instance's) per endpoint and per contract
 * through the leased index, take each open endpoint's oldest due deliveries up to its room (one
 * while it times out, none while backed off), keep each contract within its room, deal them out
 * round-robin (every endpoint's first turn before any second), lock them SKIP LOCKED (so
 * instances claiming at once take different rows; a locked row is re-checked against its latest
 * version) and lease them. Instances claiming at the same moment count the same leases, so
 * together they may pass a cap for that moment; the next claims see it and wait.
 */
export async function claimDue(db: Queryable, claim: DeliveryClaim): Promise<ClaimedDelivery[]> {
  const claimedUntilMs = claim.nowMs + claim.leaseMs;
  const { rows } = await db.query<ClaimRow>({
    name: "pl-webhook-claim",
    text: CLAIM_SQL,
    values: [claim.nowMs, claim.limit, claim.perEndpointLimit, claim.excludeEndpointIds, claimedUntilMs, claim.perContractLimit],
  });
  return rows.map((row) =>
    claimedOf(row, {
      tries: row.tries,
      previousSecretExpiresAtMs: toNullableNumber(row.previous_secret_expires_at_ms),
      claimToken: row.claim_token,
      claimedUntilMs,
      nowMs: claim.nowMs,
    }),
  );
}

export async function renewLeases(db: Queryable, leases: readonly DeliveryLease[], claimedUntilMs: number): Promise<string[]> {
  if (leases.length === 0) return [];
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

/** Stores what the attempt says of the endpoint's health (domain/webhooks.ts endpointHealth, backoffUntilMs). */
async function recordEndpointHealth(client: PgClient, endpointId: string, outcome: AttemptOutcome): Promise<void> {
  const health = endpointHealth(outcome);
  if (health === "answered") {
    await client.query({
      name: "pl-webhook-endpoint-answered",
      text: "UPDATE webhook_endpoints SET timeouts_in_row = 0, backoff_until_ms = NULL WHERE id = $1 AND timeouts_in_row > 0",
      values: [endpointId],
    });
  } else if (health === "timed_out") {
    const { rows } = await client.query<{ timeouts_in_row: number }>({
      name: "pl-webhook-endpoint-timed-out",
      text: "UPDATE webhook_endpoints SET timeouts_in_row = timeouts_in_row + 1 WHERE id = $1 RETURNING timeouts_in_row",
      values: [endpointId],
    });
    if (!rows[0]) return;
    await client.query("UPDATE webhook_endpoints SET backoff_until_ms = GREATEST(COALESCE(backoff_until_ms, 0), $2) WHERE id = $1", [
      endpointId,
      backoffUntilMs(outcome.attempt, rows[0].timeouts_in_row),
    ]);
  }
}

/**
 * Stores the attempt if the claim is still ours (the endpoint's health with it). A retry for an
 * endpoint that was disabled meanwhile fails instead (nothing is sent to a disabled endpoint); a
 * 410 disables it here.
 */
export async function recordAttempt(client: PgClient, delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
  // Not locked here: the endpoint's row is locked first (as updateEndpoint does, then its
  // deliveries), so the two cannot deadlock; the update below checks the claim again.
  const { rows: held } = await client.query({
    name: "pl-webhook-claim-held",
    text: "SELECT 1 FROM webhook_deliveries WHERE id = $1 AND claim_token = $2",
    values: [delivery.id, delivery.claimToken],
  });
  if (held.length === 0) return false;
  await recordEndpointHealth(client, delivery.endpointId, outcome);
  if (outcome.disableEndpoint !== null) {
    await client.query("UPDATE webhook_endpoints SET disabled = true, disabled_reason = $1 WHERE id = $2 AND NOT disabled", [
      outcome.disableEndpoint,
      delivery.endpointId,
    ]);
  }
  // The row becomes what domain/webhooks.ts decides for the endpoint as this statement reads it:
  // one statement, so the endpoint cannot change between the read and the write.
  const enabled = deliveryAfterAttempt(outcome, false);
  const disabled = deliveryAfterAttempt(outcome, true);
  const { rows } = await client.query<{ endpoint_disabled: boolean | null }>({
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
      delivery.id,
      delivery.endpointId,
      delivery.claimToken,
      enabled.status,
      disabled.status,
      enabled.nextAttemptAtMs,
      disabled.nextAttemptAtMs,
      enabled.finishedAtMs,
      disabled.finishedAtMs,
      MAX_ATTEMPTS_KEPT,
      JSON.stringify(outcome.attempt),
    ],
  });
  if (rows[0]?.endpoint_disabled) await failPending(client, delivery.endpointId, outcome.attempt.atMs);
  return rows.length > 0;
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

export async function listDeliveries(
  db: Queryable,
  contract: AddressKey,
  endpointId: string,
  query: DeliveryQuery,
): Promise<DeliveryPage | null> {
  if (!(await readEndpoint(db, contract, endpointId))) return null;
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

export async function retryDelivery(
  client: PgClient,
  contract: AddressKey,
  endpointId: string,
  deliveryId: string,
  nowMs: number,
): Promise<EndpointOperation<WebhookDelivery>> {
  const refused = refusal(
    (await readDelivery(client, contract, endpointId, deliveryId)) && (await readEndpoint(client, contract, endpointId)),
  );
  if (refused) return refused;
  await endBackoff(client, endpointId);
  // A delivery being sent right now (a live lease) is left to that attempt.
  await client.query(
    `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at_ms = $1, finished_at_ms = NULL
     WHERE id = $2 AND (status <> 'PENDING' OR claimed_until_ms IS NULL OR claimed_until_ms <= $1)`,
    [nowMs, deliveryId],
  );
  return { kind: "done", value: (await readDelivery(client, contract, endpointId, deliveryId))! };
}

export async function recoverDeliveries(
  client: PgClient,
  contract: AddressKey,
  endpointId: string,
  sinceMs: number,
  nowMs: number,
  limit: number,
): Promise<EndpointOperation<number>> {
  const refused = refusal(await readEndpoint(client, contract, endpointId));
  if (refused) return refused;
  const { rowCount } = await client.query(
    `UPDATE webhook_deliveries SET status = 'PENDING', tries = 0, next_attempt_at_ms = $1, finished_at_ms = NULL
     WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE endpoint_id = $2 AND status = 'FAILED' AND created_at_ms >= $3
                   ORDER BY seq LIMIT $4 FOR UPDATE)`,
    [nowMs, endpointId, sinceMs, limit],
  );
  return { kind: "done", value: rowCount ?? 0 };
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

/** The WebhooksStore operations; `run` is the adapter's guard (bounded wait, errors translated). */
export function webhookOperations(pool: PgPool, run: <T>(work: () => Promise<T>) => Promise<T>) {
  const inTransaction = <T>(work: (client: PgClient) => Promise<T>) => run(() => transaction(pool, work));
  return {
    createWebhookEndpoint: (endpoint, max) => inTransaction((client) => createEndpoint(client, endpoint, max)),
    listWebhookEndpoints: (contract) => run(() => listEndpoints(pool, contract)),
    getWebhookEndpoint: (contract, id) => run(() => readEndpoint(pool, contract, id)),
    updateWebhookEndpoint: (contract, id, change, nowMs) => inTransaction((client) => updateEndpoint(client, contract, id, change, nowMs)),
    deleteWebhookEndpoint: (contract, id) => run(() => deleteEndpoint(pool, contract, id)),
    rotateWebhookSecret: (contract, id, secret, nowMs, overlapMs) => run(() => rotateSecret(pool, contract, id, secret, nowMs, overlapMs)),
    createTestDelivery: (contract, id, event, nowMs) => inTransaction((client) => createTestDelivery(client, contract, id, event, nowMs)),
    claimDueDeliveries: (claim) => run(() => claimDue(pool, claim)),
    renewDeliveryLeases: (leases, claimedUntilMs) => run(() => renewLeases(pool, leases, claimedUntilMs)),
    recordDeliveryAttempt: (delivery, outcome) => inTransaction((client) => recordAttempt(client, delivery, outcome)),
    listDeliveries: (contract, id, query) => run(() => listDeliveries(pool, contract, id, query)),
    getDelivery: (contract, id, deliveryId) => run(() => readDelivery(pool, contract, id, deliveryId)),
    retryDelivery: (contract, id, deliveryId, nowMs) => inTransaction((client) => retryDelivery(client, contract, id, deliveryId, nowMs)),
    recoverDeliveries: (contract, id, sinceMs, nowMs, limit) =>
      inTransaction((client) => recoverDeliveries(client, contract, id, sinceMs, nowMs, limit)),
    purgeDeliveries: (beforeMs, limit) => run(() => purgeDeliveries(pool, beforeMs, limit)),
    webhookBacklog: () => run(() => webhookBacklog(pool)),
  } satisfies WebhooksStore;
}
