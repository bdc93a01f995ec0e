import type { AddressKey } from "../domain/address.js";
import type { Balance } from "../domain/balance.js";
import type { PointType } from "../domain/batch.js";
import { applyChange, type BalanceChange } from "../domain/transitions.js";
import type { BalanceWrite } from "../store/ports/accounts.js";
import type { LedgerPorts } from "../store/ports/ledger.js";
import { io, type Flow } from "./flow.js";

/**
 * The domain's balance check, on every database: the change is applied to the balance read in
 * this transaction (applyChange refuses a counter or `available` below zero) before the adapter
 * stores it. PostgreSQL used to add SQL deltas unchecked; now both refuse the same change.
 */
export function checkedWrite(before: Balance, change: BalanceChange): BalanceWrite {
  return { change, after: applyChange(before, change) };
}

/** Reads one account (locked where rows lock), checks the change against it, stores it. */
export function* changeBalance<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  address: AddressKey,
  pointType: PointType,
  change: BalanceChange,
): Flow<void> {
  const before = yield* io(ports.accounts.lockBalance(db, address, pointType));
  yield* io(ports.accounts.writeBalance(db, address, pointType, checkedWrite(before, change)));
}
