import type { AddressKey } from "../domain/address.js";
import { creatingOperatorOf, type Actor, type ApiKey } from "../domain/api-keys.js";
import { apiKeyEvent, type LedgerEvent } from "../domain/events.js";
import { MAX_API_KEYS } from "../domain/limits.js";
import type { ApiKeyCreation, NewApiKey } from "../store/ports/api-keys.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { inTransaction, io, type Flow } from "./flow.js";

/**
 * API key creation in one transaction with its api_key.created event (API.md "API keys"):
 * refused past MAX_API_KEYS unrevoked keys, and refused when the operator creating it has just
 * been replaced (the operator row is locked first, so a change either precedes the create, which
 * then refuses, or follows it, and revokes the new key with the others).
 */
export function createApiKey<Db>(database: LedgerDatabase<Db>, apiKey: NewApiKey): ApiKeyCreation | Promise<ApiKeyCreation> {
  return inTransaction(database, (ports, db) => createFlow(ports, db, apiKey));
}

function* createFlow<Db>(ports: LedgerPorts<Db>, db: Db, apiKey: NewApiKey): Flow<ApiKeyCreation> {
  const { key } = apiKey;
  const creator = creatingOperatorOf(key.createdBy);
  if (creator !== null && (yield* io(ports.auth.lockOperator(db, key.contract))) !== creator) return { kind: "operator_changed" };
  if ((yield* io(ports.apiKeys.lockAndCountUnrevoked(db, key.contract))) >= MAX_API_KEYS) return { kind: "limit" };
  yield* io(ports.apiKeys.insertApiKey(db, apiKey));
  yield* io(ports.events.appendEvents(db, [apiKeyEvent("api_key.created", key, key.createdAtMs, key.createdBy)]));
  return { kind: "created", apiKey: key };
}

/**
 * Revokes a key with its api_key.revoked event; idempotent: a key already revoked is answered as
 * it is (its first revokedAt kept, no second event). Null when the contract has no such key.
 */
export function revokeApiKey<Db>(
  database: LedgerDatabase<Db>,
  contract: AddressKey,
  id: string,
  nowMs: number,
  actor: Actor,
): ApiKey | null | Promise<ApiKey | null> {
  return inTransaction(database, (ports, db) => revokeFlow(ports, db, contract, id, nowMs, actor));
}

function* revokeFlow<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  contract: AddressKey,
  id: string,
  nowMs: number,
  actor: Actor,
): Flow<ApiKey | null> {
  const revoked = yield* io(ports.apiKeys.revokeKey(db, contract, id, nowMs));
  if (revoked === null) return yield* io(ports.apiKeys.readApiKey(db, contract, id));
  yield* io(ports.events.appendEvents(db, [apiKeyEvent("api_key.revoked", revoked, nowMs, actor)]));
  return revoked;
}

/**
 * Inside an operator change: revokes the keys the previous operator created (they may have been
 * made with a stolen key); keys the admin created stay. The api_key.revoked events, to append,
 * caused by whoever changed the operator (API.md: the admin).
 */
export function* revokeOperatorKeysFlow<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  contract: AddressKey,
  previous: AddressKey | null,
  nowMs: number,
  actor: Actor,
): Flow<LedgerEvent[]> {
  if (previous === null) return [];
  const revoked = yield* io(ports.apiKeys.revokeOperatorKeys(db, contract, previous, nowMs));
  return revoked.map((key) => apiKeyEvent("api_key.revoked", key, nowMs, actor));
}
