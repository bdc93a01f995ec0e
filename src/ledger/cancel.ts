import type { Actor } from "../domain/api-keys.js";
import type { AddressKey } from "../domain/address.js";
import { assertInvariant } from "../domain/errors.js";
import { cancelTransition } from "../domain/transitions.js";
import type { CancelResult } from "../store/ports/batches.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { changeBalance } from "./balance.js";
import { inTransaction, io, type Flow } from "./flow.js";

/**
 * cancel (domain/transitions.ts cancelTransition) in one transaction. The batch's row lock orders
 * a cancel against a finalization of the same batch: one wins, and the status guard asserts it.
 */
export function cancelBatch<Db>(
  database: LedgerDatabase<Db>,
  contract: AddressKey,
  batchId: string,
  nowMs: number,
  cancelledBy: Actor,
): CancelResult | Promise<CancelResult> {
  return inTransaction(database, (ports, db) => cancelFlow(ports, db, contract, batchId, nowMs, cancelledBy));
}

function* cancelFlow<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  contract: AddressKey,
  batchId: string,
  nowMs: number,
  cancelledBy: Actor,
): Flow<CancelResult> {
  const stored = yield* io(ports.batches.lockBatch(db, contract, batchId));
  if (!stored) return { kind: "not_found" };
  const { seq, ...batch } = stored;
  const transition = cancelTransition(batch, nowMs, cancelledBy);
  if (transition.kind === "already_cancelled") return { kind: "cancelled", batch, changed: false };
  if (transition.kind === "not_cancellable") return { kind: "not_cancellable", batch };
  const changed = yield* io(ports.batches.setStatus(db, seq, "PENDING", "CANCELLED", nowMs, cancelledBy));
  assertInvariant(changed, `batch ${batchId} changed under its lock`);
  yield* changeBalance(ports, db, contract, batch.pointType, transition.senderChange);
  yield* io(ports.events.appendEvents(db, transition.events));
  return { kind: "cancelled", batch: transition.batch, changed: true };
}
