import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { AssetEarnings } from "../ports/credits.js";
import type { NewCredit, StoredCredit } from "../ports/credits.js";
import { creditColumns } from "../rows.js";
import { toUnits, type Queryable } from "./db.js";

/**
 * Stores the credit unless (address, creditId) is taken; false when it is. A concurrent credit
 * with the same id waits on this one's row, then sees it.
 */
export async function insertCredit(db: Queryable, credit: NewCredit): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-insert-credit",
    text: `INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms, asset, block)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (address, credit_id) DO NOTHING`,
    values: creditColumns(credit),
  });
  return rowCount === 1;
}

/** Adds a credit to its (address, point type, asset) aggregate and keeps the highest block. */
export async function addAssetEarnings(
  db: Queryable,
  { address, pointType, asset, amount, block }: NewCredit & { asset: string },
): Promise<void> {
  await db.query({
    name: "pl-add-asset-earnings",
    text: `INSERT INTO asset_earnings AS e (address, point_type, asset, earned_units, max_block) VALUES ($1, $2, $3, $4::numeric, $5)
           ON CONFLICT (address, point_type, asset) DO UPDATE SET
             earned_units = e.earned_units + excluded.earned_units, max_block = greatest(e.max_block, excluded.max_block)`,
    values: [address, pointType, asset, amount.toString(), block ?? 0],
  });
}

export async function readAssetEarnings(db: Queryable, address: AddressKey): Promise<AssetEarnings[]> {
  const { rows } = await db.query<{ point_type: PointType; asset: string; earned_units: string; max_block: string }>({
    name: "pl-read-asset-earnings",
    text: "SELECT point_type, asset, earned_units, max_block FROM asset_earnings WHERE address = $1",
    values: [address],
  });
  return rows.map((row) => ({
    pointType: row.point_type,
    asset: row.asset,
    earnedCumulative: toUnits(row.earned_units),
    earnedCumulativeBlock: Number(row.max_block),
  }));
}

/**
 * Units of the credit's point type issued before it: all credits of the type minus this one,
 * which the transaction has just inserted. A transaction-scoped advisory lock serializes credits
 * of one point type, and under READ COMMITTED the sum, taken after the lock, sees every credit
 * committed before it. Credits are admin operations, so summing their table is cheap enough.
 */
export async function lockSupplyBefore(db: Queryable, credit: NewCredit): Promise<bigint> {
  await db.query({
    name: "pl-lock-supply",
    text: "SELECT pg_advisory_xact_lock(hashtext($1))",
    values: [`points-ledger supply ${credit.pointType}`],
  });
  const { rows } = await db.query<{ issued: string }>({
    name: "pl-sum-supply",
    text: "SELECT coalesce(sum(amount_units), 0)::text AS issued FROM credits WHERE point_type = $1",
    values: [credit.pointType],
  });
  return toUnits(rows[0]?.issued ?? "0") - credit.amount;
}

/** The supply is the sum of the credits (lockSupplyBefore), so there is nothing else to record. */
export async function writeSupply(): Promise<void> {}

export async function findCredit(db: Queryable, address: AddressKey, creditId: string): Promise<StoredCredit | undefined> {
  const { rows } = await db.query<{ point_type: PointType; amount_units: string; asset: string | null; block: string | null }>({
    name: "pl-find-credit",
    text: "SELECT point_type, amount_units, asset, block FROM credits WHERE address = $1 AND credit_id = $2",
    values: [address, creditId],
  });
  const row = rows[0];
  if (!row) return undefined;
  return {
    pointType: row.point_type,
    amount: toUnits(row.amount_units),
    asset: row.asset,
    block: row.block === null ? null : Number(row.block),
  };
}
