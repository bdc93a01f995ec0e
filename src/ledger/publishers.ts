import { assertInvariant } from "../domain/errors.js";
import type { PublishClaim } from "../domain/publishers.js";
import type { LedgerDatabase } from "../store/ports/ledger.js";
import type { PublishersPort, PublishersStore } from "../store/ports/publishers.js";
import { inTransaction, inWritePass, io, readWith, type Flow } from "./flow.js";

/**
 * Publishers (API.md, Events to a message broker), each operation once for both databases over
 * the publishers port's primitives (store/ports/publishers.ts). A claim takes the kind's lease
 * and reads the events after its position in one transaction; the broker is sent to outside any
 * transaction (src/publishers/publish-job.ts), and the position moves only once the broker
 * acknowledged every event of the claim, and only while the lease is still this holder's.
 */

function* claimPublish<Db>(
  port: PublishersPort<Db>,
  db: Db,
  lease: PublishClaim["lease"],
  limit: number,
  leaseMs: number | null,
): Flow<PublishClaim | null> {
  const taken = yield* io(leaseMs === null ? port.readHeld(db, lease) : port.takeLease(db, lease, leaseMs));
  if (taken === null) return null;
  const events = yield* io(port.eventsToPublish(db, taken.position, limit));
  assertInvariant(events.length <= limit, `a publisher read ${events.length} events for a step of ${limit}`);
  return { lease, position: taken.position, lastEventId: taken.lastEventId, events };
}

export function publisherOperations<Db>(database: LedgerDatabase<Db>): PublishersStore {
  const pass = <R>(flow: (port: PublishersPort<Db>, db: Db) => Flow<R>) =>
    Promise.resolve(inWritePass(database, (ports, db) => flow(ports.publishers, db)));
  return {
    ensurePublisher: (kind, from) => pass((port, db) => io(port.ensurePublisher(db, kind, from))),
    // A renewal writes (one short transaction, the lease then the read); a step inside a held
    // lease only reads, so a publisher that keeps up adds one write per step (its advance).
    claimPublish: (lease, limit, leaseMs) =>
      Promise.resolve(
        leaseMs === null
          ? readWith(database, (ports, db) => claimPublish(ports.publishers, db, lease, limit, null))
          : inTransaction(database, (ports, db) => claimPublish(ports.publishers, db, lease, limit, leaseMs)),
      ),
    advancePublisher: (lease, position, lastEventId, leaseMs) =>
      pass((port, db) => io(port.advancePublisher(db, lease, position, lastEventId, leaseMs))),
    recordPublisherState: (lease, state, error) => pass((port, db) => io(port.recordPublisherState(db, lease, state, error))),
    publisherStatuses: (kinds) => Promise.resolve(readWith(database, (ports, db) => io(ports.publishers.publisherStatuses(db, kinds)))),
  };
}
