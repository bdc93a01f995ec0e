import type { Actor } from "../domain/api-keys.js";
import type { AddressKey } from "../domain/address.js";
import { operatorTransition } from "../domain/transitions.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { revokeOperatorKeysFlow } from "./api-keys.js";
import { inTransaction, io, type Flow } from "./flow.js";

/** operator change (domain/transitions.ts operatorTransition) in one transaction: a change revokes the contract's tokens, and the API keys the previous operator created. */
export function setOperator<Db>(
  database: LedgerDatabase<Db>,
  contract: AddressKey,
  operator: AddressKey,
  nowMs: number,
  actor: Actor,
): void | Promise<void> {
  return inTransaction(database, (ports, db) => operatorFlow(ports, db, contract, operator, nowMs, actor));
}

function* operatorFlow<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  contract: AddressKey,
  operator: AddressKey,
  nowMs: number,
  actor: Actor,
): Flow<void> {
  const current = yield* io(ports.auth.lockOperator(db, contract));
  const transition = operatorTransition(contract, current, operator, nowMs, actor);
  if (transition.kind === "unchanged") return;
  // Two first registrations racing: the later upsert changes nothing, and its transition (decided
  // before the other's row existed) is dropped with its event.
  if (!(yield* io(ports.auth.upsertOperator(db, contract, operator, nowMs)))) return;
  if (transition.revokeTokens) yield* io(ports.auth.deleteTokens(db, contract));
  const revokedKeys = yield* revokeOperatorKeysFlow(ports, db, contract, current, nowMs, actor);
  yield* io(ports.events.appendEvents(db, [...transition.events, ...revokedKeys]));
}
