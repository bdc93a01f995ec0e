import type { PointType } from "../../domain/batch.js";
import type { AddressKey } from "../../domain/address.js";
import type { AssetEarnings } from "../ports/credits.js";
import type { CreditsPort, NewCredit, StoredCredit } from "../ports/credits.js";
import { creditColumns } from "../rows.js";
import { fromPair, statement, toNullableNumber, toNumber, toPair, type SqliteDb } from "./db.js";

/** Stores the credit unless (address, creditId) is taken; false when it is. */
function insertCredit(db: SqliteDb, credit: NewCredit): boolean {
  const { changes } = statement(
    db,
    `INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms, asset, block) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (address, credit_id) DO NOTHING`,
  ).run(creditColumns(credit));
  return changes === 1;
}

function findCredit(db: SqliteDb, address: AddressKey, creditId: string): StoredCredit | undefined {
  const row = statement(db, "SELECT point_type, amount_units, asset, block FROM credits WHERE address = ? AND credit_id = ?").get(
    address,
    creditId,
  ) as { point_type: PointType; amount_units: string; asset: string | null; block: bigint | null } | undefined;
  if (!row) return undefined;
  return { pointType: row.point_type, amount: BigInt(row.amount_units), asset: row.asset, block: toNullableNumber(row.block) };
}

/**
 * Adds a credit to its (address, point type, asset) aggregate: the pair is added with a carry
 * (the sum stays within the point type's supply, ≤ 10^18 points, so `_w` cannot overflow) and
 * the highest block kept.
 */
function addAssetEarnings(db: SqliteDb, { address, pointType, asset, amount, block }: NewCredit & { asset: string }): void {
  statement(
    db,
    `INSERT INTO asset_earnings (address, point_type, asset, earned_w, earned_f, max_block) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (address, point_type, asset) DO UPDATE SET
       earned_w = earned_w + excluded.earned_w + (earned_f + excluded.earned_f) / 1000000000000,
       earned_f = (earned_f + excluded.earned_f) % 1000000000000,
       max_block = max(max_block, excluded.max_block)`,
  ).run(address, pointType, asset, ...toPair(amount), block ?? 0);
}

export function readAssetEarnings(db: SqliteDb, address: AddressKey): AssetEarnings[] {
  const rows = statement(db, "SELECT point_type, asset, earned_w, earned_f, max_block FROM asset_earnings WHERE address = ?").all(
    address,
  ) as { point_type: PointType; asset: string; earned_w: bigint; earned_f: bigint; max_block: bigint }[];
  return rows.map((row) => ({
    pointType: row.point_type,
    asset: row.asset,
    earnedCumulative: fromPair(row.earned_w, row.earned_f),
    earnedCumulativeBlock: toNumber(row.max_block),
  }));
}

/**
 * Units of `pointType` issued by every credit so far, kept in point_supply (this credit is added
 * by writeSupply, after the check). One process writes: nothing to lock.
 */
export function readSupply(db: SqliteDb, pointType: PointType): bigint {
  const row = statement(db, "SELECT issued_w, issued_f FROM point_supply WHERE point_type = ?").get(pointType) as
    { issued_w: bigint; issued_f: bigint } | undefined;
  return row ? fromPair(row.issued_w, row.issued_f) : 0n;
}

function writeSupply(db: SqliteDb, pointType: PointType, units: bigint): void {
  statement(
    db,
    `INSERT INTO point_supply (point_type, issued_w, issued_f) VALUES (?, ?, ?)
     ON CONFLICT (point_type) DO UPDATE SET issued_w = excluded.issued_w, issued_f = excluded.issued_f`,
  ).run(pointType, ...toPair(units));
}

/** The credits, point supply and asset earnings tables for src/ledger/credit.ts, synchronously. */
export const credits = {
  insertCredit,
  findCredit,
  lockSupplyBefore: (db: SqliteDb, credit: NewCredit) => readSupply(db, credit.pointType),
  writeSupply,
  addAssetEarnings,
  readAssetEarnings,
} satisfies CreditsPort<SqliteDb, "sync">;
