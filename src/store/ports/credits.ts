import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { Io, Out } from "./io.js";

/** The credits of one point type that named one asset: summed, and the highest block they named. */
export interface AssetEarnings {
  pointType: PointType;
  asset: string;
  earnedCumulative: bigint;
  /** 0 when none of them named a block. */
  earnedCumulativeBlock: number;
}

export interface NewCredit {
  address: AddressKey;
  creditId: string;
  pointType: PointType;
  amount: bigint;
  createdAtMs: number;
  /** What the points were earned on (feeds getAssetEarnings); absent or null: no asset. */
  asset?: string | null;
  /** Up to which block they were earned; absent or null: none. */
  block?: number | null;
}

export type CreditResult =
  | { kind: "credited" }
  | { kind: "exists"; matchesRequest: boolean }
  /** The credit would take the point type's supply (all its credits together) past MAX_SUPPLY_UNITS. */
  | { kind: "overflow" };

/** A credit as stored, to compare with a request that reuses its creditId. */
export interface StoredCredit {
  pointType: PointType;
  amount: bigint;
  asset: string | null;
  block: number | null;
}

/** The credits, point supply and asset earnings tables, as src/ledger/credit.ts uses them inside a transaction. */
export interface CreditsPort<Db, out M extends Io = Io> {
  /** Stores the credit unless (address, creditId) is taken; false when it is (a concurrent one waits, then sees it). */
  insertCredit(db: Db, credit: NewCredit): Out<M, boolean>;
  findCredit(db: Db, address: AddressKey, creditId: string): Out<M, StoredCredit | undefined>;
  /**
   * Units of the credit's point type issued by the credits before it (the credit itself already
   * inserted), held until the transaction ends, so credits of one point type are counted one at a time.
   */
  lockSupplyBefore(db: Db, credit: NewCredit): Out<M, bigint>;
  /** Records the supply after the credit, where the adapter keeps it rather than summing the credits. */
  writeSupply(db: Db, pointType: PointType, units: bigint): Out<M, void>;
  /** Adds a credit to its (address, point type, asset) aggregate and keeps the highest block. */
  addAssetEarnings(db: Db, credit: NewCredit & { asset: string }): Out<M, void>;
  /** AccountsStore.getAssetEarnings. */
  readAssetEarnings(db: Db, address: AddressKey): Out<M, AssetEarnings[]>;
}
