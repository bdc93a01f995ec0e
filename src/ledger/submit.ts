import type { Actor } from "../domain/api-keys.js";
import { batchMatchesRequest, type NewBatch } from "../domain/batch.js";
import { assertInvariant } from "../domain/errors.js";
import { acceptedBatch, submitTransition } from "../domain/transitions.js";
import type { SubmitResult } from "../store/ports/batches.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { checkedWrite } from "./balance.js";
import { inTransaction, io, type Flow } from "./flow.js";

/**
 * submit (domain/transitions.ts submitTransition) in one transaction, committed only when the
 * batch is accepted. The batchId is claimed first (a concurrent submission of it waits, then sees
 * it), the transfers stored, and only then the sender's account read and locked: it is held for
 * the reservation and the commit, not for the bulk insert.
 */
export function submitBatch<Db>(database: LedgerDatabase<Db>, batch: NewBatch, submittedBy: Actor): SubmitResult | Promise<SubmitResult> {
  return inTransaction(database, (ports, db) => submitFlow(ports, db, batch, submittedBy), {
    commitIf: (result) => result.kind === "accepted",
  });
}

function* submitFlow<Db>(ports: LedgerPorts<Db>, db: Db, batch: NewBatch, submittedBy: Actor): Flow<SubmitResult> {
  const seq = yield* io(ports.batches.insertBatch(db, batch, acceptedBatch(batch, submittedBy).finalizeAtMs, submittedBy));
  if (seq === undefined) return yield* existingBatch(ports, db, batch);
  yield* io(ports.batches.insertTransfers(db, seq, batch.transfers));
  const sender = yield* io(ports.accounts.lockBalance(db, batch.contract, batch.pointType));
  const transition = submitTransition(batch, sender, submittedBy);
  if (transition.kind === "insufficient") return transition;
  yield* io(ports.accounts.writeBalance(db, batch.contract, batch.pointType, checkedWrite(sender, transition.senderChange)));
  yield* io(ports.events.appendEvents(db, transition.events));
  return { kind: "accepted", batch: transition.batch };
}

function* existingBatch<Db>(ports: LedgerPorts<Db>, db: Db, batch: NewBatch): Flow<SubmitResult> {
  const existing = yield* io(ports.batches.findBatch(db, batch.contract, batch.batchId));
  assertInvariant(existing !== undefined, `batch ${batch.batchId} conflicted but cannot be read`);
  const transfers = yield* io(ports.batches.readTransfers(db, existing.seq));
  return { kind: "exists", status: existing.status, matchesRequest: batchMatchesRequest({ ...existing, transfers }, batch) };
}
