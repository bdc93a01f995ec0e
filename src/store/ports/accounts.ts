import type { Actor } from "../../domain/api-keys.js";
import type { AddressKey } from "../../domain/address.js";
import type { Balance } from "../../domain/balance.js";
import type { DefaultPointType, PointType } from "../../domain/batch.js";
import type { BalanceChange } from "../../domain/transitions.js";
import type { Io, Out } from "./io.js";
import type { StoredBatch } from "./batches.js";
import type { AssetEarnings, CreditResult, NewCredit } from "./credits.js";

/** One balance per point type asked for (getBalances). */
export type Balances<T extends PointType = DefaultPointType> = Record<T, Balance>;

/** Credits and balances as the HTTP layer reads and writes them (accounts.ts, credits.ts, point-types.ts of each adapter). */
export interface AccountsStore {
  /** Idempotent by (address, creditId): a reuse says whether pointType, amount, asset and block all match. */
  /** `actor`: who credits (the admin, from the API or the CLI); absent, the service itself. */
  credit(credit: NewCredit, actor?: Actor): Promise<CreditResult>;
  /**
   * One balance per point type in `pointTypes` (the configured ones; omitted, the default
   * POINT_TYPES), all zero for a type the address holds nothing of. One indexed read.
   */
  getBalances<T extends PointType = DefaultPointType>(address: AddressKey, pointTypes?: readonly T[]): Promise<Balances<T>>;
  /**
   * The address's credits that named an asset, one entry per (pointType, asset), from an
   * aggregate kept in each credit's transaction: one indexed read, however many credits.
   */
  getAssetEarnings(address: AddressKey): Promise<AssetEarnings[]>;
  /**
   * Every point type the database holds balances, batches or credits of (start-up refuses a
   * configuration that drops one: src/store/point-types.ts). Cheap: index lookups, not scans.
   */
  pointTypesInUse(): Promise<PointType[]>;
}

/** A change the flow has decided and checked: `after` is applyChange(before, change) of the balance it read. */
export interface BalanceWrite {
  change: BalanceChange;
  after: Balance;
}

/**
 * The accounts table, as the ledger flows (src/ledger/) use it inside a transaction `db`.
 * Nothing here decides: every change arrives checked by the domain's applyChange.
 */
export interface AccountsPort<Db, out M extends Io = Io> {
  /**
   * The account as it is (zero when it has no row), its row locked until the transaction ends
   * where the database has row locks, so the change decided from it applies to what was read.
   */
  lockBalance(db: Db, address: AddressKey, pointType: PointType): Out<M, Balance>;
  /** The account without a lock (finalization: settleBatch takes its locks in address order). */
  readBalance(db: Db, address: AddressKey, pointType: PointType): Out<M, Balance>;
  /** Stores a checked change to one account (an adapter may store `after`, or add `change`: they agree under the lock). */
  writeBalance(db: Db, address: AddressKey, pointType: PointType, write: BalanceWrite): Out<M, void>;
  /**
   * Applies a finalized batch: the sender's checked change, and each stored transfer added to its
   * recipient's receivedCumulative. Returns how many accounts it changed (sender included).
   */
  settleBatch(db: Db, batch: StoredBatch, sender: BalanceWrite): Out<M, number>;
  /** AccountsStore.getBalances, one indexed read outside any flow. */
  readBalances<T extends PointType = DefaultPointType>(db: Db, address: AddressKey, pointTypes?: readonly T[]): Out<M, Balances<T>>;
}
