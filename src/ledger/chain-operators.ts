import type { AddressKey } from "../domain/address.js";
import { chainOperatorTransition, chainReadActor, type ChainObservation } from "../domain/chain.js";
import { chainOperatorChanged } from "../domain/events.js";
import type { ChainApplied, ChainStore } from "../store/ports/chain.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { revokeOperatorKeysFlow } from "./api-keys.js";
import { inTransaction, inWritePass, io, readWith, type Flow } from "./flow.js";

/**
 * Operators on chain (API.md), each operation once for both databases over the chain port
 * (store/ports/chain.ts). An observation of the registry is stored first (its row locked, and
 * refused when older than the stored one), then the ledger's operator follows it as an
 * administrator's change does (src/ledger/operator.ts): the tokens deleted, the keys the previous
 * operator created revoked (revokeOperatorKeysFlow, the same flow), the events appended, in one
 * transaction. A ban or no operator leaves the contract without an operator row, so no token of
 * it is valid (the token lookup joins the operator).
 */
function* observationFlow<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  contract: AddressKey,
  observation: ChainObservation,
  chainId: number,
  nowMs: number,
  force: boolean,
): Flow<ChainApplied> {
  if (!(yield* io(ports.chain.observe(db, contract, observation, nowMs, force)))) return "stale";
  const current = yield* io(ports.auth.lockOperator(db, contract));
  const transition = chainOperatorTransition(current, observation);
  if (transition.kind === "unchanged") return "unchanged";
  if (transition.operator === null) yield* io(ports.auth.deleteOperator(db, contract, current!));
  else yield* io(ports.auth.upsertOperator(db, contract, transition.operator, nowMs));
  yield* io(ports.auth.deleteTokens(db, contract));
  const actor = chainReadActor(chainId, observation.block.number);
  const revokedKeys = yield* revokeOperatorKeysFlow(ports, db, contract, current, nowMs, actor);
  const changed = chainOperatorChanged(contract, transition.operator, current, transition.banned, nowMs, actor);
  yield* io(ports.events.appendEvents(db, [changed, ...revokedKeys]));
  return "changed";
}

export function chainOperations<Db>(database: LedgerDatabase<Db>): ChainStore {
  return {
    applyChainObservation: (contract, observation, chainId, nowMs, force) =>
      Promise.resolve(inTransaction(database, (ports, db) => observationFlow(ports, db, contract, observation, chainId, nowMs, force))),
    chainFollowedPage: (after, limit) =>
      Promise.resolve(readWith(database, (ports, db) => io(ports.chain.followedContracts(db, after, limit)))),
    claimChainFollow: (token, nowMs, leaseMs) =>
      Promise.resolve(inWritePass(database, (ports, db) => io(ports.chain.takeFollowLease(db, token, nowMs, leaseMs)))),
    advanceChainFollow: (token, block, nowMs) =>
      Promise.resolve(inWritePass(database, (ports, db) => io(ports.chain.advanceFollow(db, token, block, nowMs)))),
  };
}
