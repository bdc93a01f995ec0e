import type { Actor } from "../domain/api-keys.js";
import { assertInvariant } from "../domain/errors.js";
import { creditTransition } from "../domain/transitions.js";
import type { CreditResult, NewCredit, StoredCredit } from "../store/ports/credits.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import { changeBalance } from "./balance.js";
import { inTransaction, io, type Flow } from "./flow.js";

/**
 * credit (domain/transitions.ts creditTransition) in one transaction that commits only a
 * credited one: idempotent by (address, creditId), and refused when it would take the point
 * type's supply past MAX_SUPPLY_UNITS, so no balance or batch can pass it.
 */
export function credit<Db>(database: LedgerDatabase<Db>, credit: NewCredit, actor: Actor): CreditResult | Promise<CreditResult> {
  return inTransaction(database, (ports, db) => creditFlow(ports, db, credit, actor), { commitIf: (result) => result.kind === "credited" });
}

function* creditFlow<Db>(ports: LedgerPorts<Db>, db: Db, credit: NewCredit, actor: Actor): Flow<CreditResult> {
  if (!(yield* io(ports.credits.insertCredit(db, credit)))) {
    const stored = yield* io(ports.credits.findCredit(db, credit.address, credit.creditId));
    assertInvariant(stored !== undefined, `credit ${credit.creditId} conflicted but cannot be read`);
    return { kind: "exists", matchesRequest: sameCredit(stored, credit) };
  }
  const supplyBefore = yield* io(ports.credits.lockSupplyBefore(db, credit));
  const transition = creditTransition(credit, supplyBefore, credit.createdAtMs, actor);
  if (transition.kind === "overflow") return transition;
  yield* io(ports.credits.writeSupply(db, credit.pointType, transition.supplyAfter));
  yield* changeBalance(ports, db, credit.address, credit.pointType, transition.change);
  const asset = credit.asset ?? null;
  if (asset !== null) yield* io(ports.credits.addAssetEarnings(db, { ...credit, asset }));
  yield* io(ports.events.appendEvents(db, transition.events));
  return { kind: "credited" };
}

function sameCredit(stored: StoredCredit, credit: NewCredit): boolean {
  return (
    stored.pointType === credit.pointType &&
    stored.amount === credit.amount &&
    stored.asset === (credit.asset ?? null) &&
    stored.block === (credit.block ?? null)
  );
}
