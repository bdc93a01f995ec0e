import type { AddressKey } from "../domain/address.js";
import { assertInvariant } from "../domain/errors.js";
import type { LedgerEvent } from "../domain/events.js";
import {
  backoffUntilMs,
  changedEndpoint,
  chooseDue,
  deliveryAfterAttempt,
  endpointHealth,
  endpointLimitReached,
  endpointRoom,
  newDeliveryId,
  refusal,
  sendsInFlightOf,
  type AttemptOutcome,
  type ClaimedDelivery,
  type EndpointOperation,
  type NewWebhookEndpoint,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointChange,
} from "../domain/webhooks.js";
import type { LedgerDatabase } from "../store/ports/ledger.js";
import type {
  DeliveryClaim,
  DeliveryPage,
  DeliveryQuery,
  EndpointCreateResult,
  EndpointRoom,
  WebhooksPort,
  WebhooksStore,
} from "../store/ports/webhooks.js";
import { inTransaction, inWritePass, io, readWith, type Flow } from "./flow.js";

/**
 * Webhook endpoints and deliveries (WebhooksStore), each operation once for both databases over
 * the webhooks port's primitives (store/ports/webhooks.ts), deciding with domain/webhooks.ts:
 * which endpoint has room and which deliveries a claim takes, what an attempt leaves and what it
 * says of its endpoint's health. Written as ./submit.ts is: one generator flow, run synchronously
 * over SQLite and awaited over PostgreSQL (./flow.ts).
 */

function* createEndpoint<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  endpoint: NewWebhookEndpoint,
  maxPerContract: number,
): Flow<EndpointCreateResult> {
  const count = yield* io(port.lockAndCountEndpoints(db, endpoint.contract));
  if (endpointLimitReached(count, maxPerContract)) return { kind: "limit_reached" };
  yield* io(port.insertEndpoint(db, endpoint));
  const created = yield* io(port.readEndpoint(db, endpoint.contract, endpoint.id));
  assertInvariant(created !== null, `webhook endpoint ${endpoint.id} was inserted but cannot be read`);
  return { kind: "created", endpoint: created };
}

/** A disabled endpoint is sent nothing: its PENDING deliveries fail now, for recover to queue again once it is enabled. */
function* updateEndpoint<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  contract: AddressKey,
  endpointId: string,
  change: WebhookEndpointChange,
  nowMs: number,
): Flow<WebhookEndpoint | null> {
  const current = yield* io(port.lockEndpoint(db, contract, endpointId));
  if (!current) return null;
  const { fields, failsPending } = changedEndpoint(current, change);
  yield* io(port.writeEndpoint(db, endpointId, fields));
  if (failsPending) yield* io(port.failPending(db, endpointId, nowMs));
  return yield* io(port.readEndpoint(db, contract, endpointId));
}

/**
 * An operator's test is sent now, not after the endpoint's backoff (endBackoff); it still goes one
 * at a time while the endpoint times out (its timeouts in a row are kept).
 */
function* createTestDelivery<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  contract: AddressKey,
  endpointId: string,
  event: LedgerEvent,
  nowMs: number,
): Flow<EndpointOperation<string>> {
  const refused = refusal(yield* io(port.readEndpoint(db, contract, endpointId)));
  if (refused) return refused;
  yield* io(port.endBackoff(db, endpointId));
  const deliveryId = newDeliveryId();
  yield* io(port.insertDelivery(db, deliveryId, endpointId, event, nowMs));
  return { kind: "done", value: deliveryId };
}

/** A retry is sent now, as a test is; a delivery being sent right now (a live lease) is left to that attempt. */
function* retryDelivery<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  contract: AddressKey,
  endpointId: string,
  deliveryId: string,
  nowMs: number,
): Flow<EndpointOperation<WebhookDelivery>> {
  const delivery = yield* io(port.readDelivery(db, contract, endpointId, deliveryId));
  const refused = refusal(delivery && (yield* io(port.readEndpoint(db, contract, endpointId))));
  if (refused) return refused;
  yield* io(port.endBackoff(db, endpointId));
  yield* io(port.requeueDelivery(db, deliveryId, nowMs));
  const requeued = yield* io(port.readDelivery(db, contract, endpointId, deliveryId));
  assertInvariant(requeued !== null, `webhook delivery ${deliveryId} vanished inside its retry`);
  return { kind: "done", value: requeued };
}

function* recoverDeliveries<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  contract: AddressKey,
  endpointId: string,
  sinceMs: number,
  nowMs: number,
  limit: number,
): Flow<EndpointOperation<number>> {
  const refused = refusal(yield* io(port.readEndpoint(db, contract, endpointId)));
  if (refused) return refused;
  return { kind: "done", value: yield* io(port.requeueFailed(db, endpointId, sinceMs, nowMs, limit)) };
}

function* listDeliveries<Db>(
  port: WebhooksPort<Db>,
  db: Db,
  contract: AddressKey,
  endpointId: string,
  query: DeliveryQuery,
): Flow<DeliveryPage | null> {
  if (!(yield* io(port.readEndpoint(db, contract, endpointId)))) return null;
  return yield* io(port.listDeliveries(db, endpointId, query));
}

/**
 * The claim (WebhooksStore.claimDueDeliveries), decided by domain/webhooks.ts: each open endpoint's
 * room (endpointRoom: none while excluded or backed off, one while it times out), its oldest due
 * deliveries up to that room, dealt out round-robin within each contract's room (chooseDue), then
 * leased. An idle service (no PENDING delivery) costs one statement. On PostgreSQL the statements
 * stand alone: the lease re-checks each chosen row under its lock (SKIP LOCKED), so jobs claiming
 * at once take different rows; they count the same leases, so together they may pass a cap for that
 * moment, and the next claims see it and wait.
 */
function* claimDue<Db>(port: WebhooksPort<Db>, db: Db, claim: DeliveryClaim): Flow<ClaimedDelivery[]> {
  const endpoints = yield* io(port.endpointsWithPending(db));
  if (endpoints.length === 0) return [];
  const inFlight = sendsInFlightOf(yield* io(port.sendsInFlight(db, claim.nowMs)));
  const rooms: EndpointRoom[] = [];
  for (const endpoint of endpoints) {
    const room = endpointRoom(endpoint, inFlight.byEndpoint.get(endpoint.id) ?? 0, claim);
    if (room > 0) rooms.push({ endpoint, room });
  }
  if (rooms.length === 0) return [];
  const due = yield* io(port.dueDeliveries(db, rooms, claim.nowMs));
  const chosen = chooseDue(due, inFlight.byContract, claim);
  if (chosen.length === 0) return [];
  const seqs = chosen.map((delivery) => delivery.seq);
  return yield* io(port.leaseDeliveries(db, seqs, claim.nowMs, claim.nowMs + claim.leaseMs));
}

/** Stores what the attempt says of its endpoint's health (domain/webhooks.ts endpointHealth, backoffUntilMs). */
function* recordEndpointHealth<Db>(port: WebhooksPort<Db>, db: Db, endpointId: string, outcome: AttemptOutcome): Flow<void> {
  const health = endpointHealth(outcome);
  if (health === "answered") {
    yield* io(port.clearTimeouts(db, endpointId));
  } else if (health === "timed_out") {
    const timeoutsInRow = yield* io(port.countTimeout(db, endpointId));
    if (timeoutsInRow !== undefined) yield* io(port.holdBack(db, endpointId, backoffUntilMs(outcome.attempt, timeoutsInRow)));
  }
}

/**
 * Stores the attempt if the claim is still this job's, with its endpoint's health. A retry for an
 * endpoint disabled meanwhile (by an operator, or by this attempt's 410, which disables it here)
 * fails instead, and so does the rest of its queue: nothing is sent to a disabled endpoint. The
 * delivery's row is decided for the endpoint as the write reads it (storeAttempt), so a disable
 * committed in between cannot be missed.
 */
function* recordAttempt<Db>(port: WebhooksPort<Db>, db: Db, delivery: ClaimedDelivery, outcome: AttemptOutcome): Flow<boolean> {
  // The endpoint's row is written before the delivery's (as updateEndpoint locks the endpoint, then
  // its deliveries), so the two cannot deadlock; storeAttempt checks the claim again.
  if (!(yield* io(port.claimHeld(db, delivery)))) return false;
  yield* recordEndpointHealth(port, db, delivery.endpointId, outcome);
  if (outcome.disableEndpoint !== null) yield* io(port.disableEndpoint(db, delivery.endpointId, outcome.disableEndpoint));
  const rows = { enabled: deliveryAfterAttempt(outcome, false), disabled: deliveryAfterAttempt(outcome, true) };
  const stored = yield* io(port.storeAttempt(db, delivery, outcome.attempt, rows));
  if (stored === null) return false;
  if (stored.endpointDisabled) yield* io(port.failPending(db, delivery.endpointId, outcome.attempt.atMs));
  return true;
}

/**
 * The WebhooksStore over one database, each operation a flow above (several statements: one
 * transaction) or a single primitive. Single writes need no transaction of their own on
 * PostgreSQL and run in a write pass (ports/ledger.ts); reads run outside any transaction.
 */
export function webhookOperations<Db>(database: LedgerDatabase<Db>): WebhooksStore {
  const transact = <R>(flow: (port: WebhooksPort<Db>, db: Db) => Flow<R>) =>
    Promise.resolve(inTransaction(database, (ports, db) => flow(ports.webhooks, db)));
  const pass = <R>(flow: (port: WebhooksPort<Db>, db: Db) => Flow<R>) =>
    Promise.resolve(inWritePass(database, (ports, db) => flow(ports.webhooks, db)));
  const read = <R>(flow: (port: WebhooksPort<Db>, db: Db) => Flow<R>) =>
    Promise.resolve(readWith(database, (ports, db) => flow(ports.webhooks, db)));
  return {
    createWebhookEndpoint: (endpoint, max) => transact((port, db) => createEndpoint(port, db, endpoint, max)),
    listWebhookEndpoints: (contract) => read((port, db) => io(port.listEndpoints(db, contract))),
    getWebhookEndpoint: (contract, id) => read((port, db) => io(port.readEndpoint(db, contract, id))),
    updateWebhookEndpoint: (contract, id, change, nowMs) => transact((port, db) => updateEndpoint(port, db, contract, id, change, nowMs)),
    deleteWebhookEndpoint: (contract, id) => pass((port, db) => io(port.deleteEndpoint(db, contract, id))),
    rotateWebhookSecret: (contract, id, secret, nowMs, overlapMs) =>
      pass((port, db) => io(port.rotateSecret(db, contract, id, secret, nowMs + overlapMs))),
    createTestDelivery: (contract, id, event, nowMs) => transact((port, db) => createTestDelivery(port, db, contract, id, event, nowMs)),
    claimDueDeliveries: (claim) => pass((port, db) => claimDue(port, db, claim)),
    renewDeliveryLeases: async (leases, claimedUntilMs) =>
      leases.length === 0 ? [] : pass((port, db) => io(port.renewLeases(db, leases, claimedUntilMs))),
    recordDeliveryAttempt: (delivery, outcome) => transact((port, db) => recordAttempt(port, db, delivery, outcome)),
    listDeliveries: (contract, id, query) => read((port, db) => listDeliveries(port, db, contract, id, query)),
    getDelivery: (contract, id, deliveryId) => read((port, db) => io(port.readDelivery(db, contract, id, deliveryId))),
    retryDelivery: (contract, id, deliveryId, nowMs) => transact((port, db) => retryDelivery(port, db, contract, id, deliveryId, nowMs)),
    recoverDeliveries: (contract, id, sinceMs, nowMs, limit) =>
      transact((port, db) => recoverDeliveries(port, db, contract, id, sinceMs, nowMs, limit)),
    purgeDeliveries: (beforeMs, limit) => pass((port, db) => io(port.purgeDeliveries(db, beforeMs, limit))),
    webhookBacklog: () => read((port, db) => io(port.webhookBacklog(db))),
  };
}
