import type { PointType } from "../../domain/batch.js";
import { creditTransition } from "../../domain/transitions.js";
import type { AddressKey } from "../../domain/address.js";
import type { AssetEarnings, CreditResult, NewCredit } from "../store.js";
import { changeBalance } from "./accounts.js";
import { appendEvents } from "./events.js";
import { fromPair, statement, toNullableNumber, toNumber, toPair, type SqliteDb } from "./db.js";

interface StoredCredit {
  point_type: PointType;
  amount_units: string;
  asset: string | null;
  block: bigint | null;
}

/**
 * Call inside a transaction: idempotent by (address, creditId). The credit transition
 * (domain/transitions.ts) refuses one that would take the point type's supply past
 * MAX_SUPPLY_UNITS, so no balance or batch can pass it.
 */
export function applyCredit(db: SqliteDb, credit: NewCredit): CreditResult {
  const existing = statement(db, "SELECT point_type, amount_units, asset, block FROM credits WHERE address = ? AND credit_id = ?").get(
    credit.address,
    credit.creditId,
  ) as StoredCredit | undefined;
  if (existing) return { kind: "exists", matchesRequest: sameCredit(existing, credit) };
  const transition = creditTransition(credit, readSupply(db, credit.pointType), credit.createdAtMs);
  if (transition.kind === "overflow") return transition;
  const asset = credit.asset ?? null;
  const block = credit.block ?? null;
  statement(
    db,
    "INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms, asset, block) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).run(credit.address, credit.creditId, credit.pointType, credit.amount.toString(), credit.createdAtMs, asset, block);
  writeSupply(db, credit.pointType, transition.supplyAfter);
  changeBalance(db, credit.address, credit.pointType, transition.change);
  if (asset !== null) addAssetEarnings(db, credit.address, credit.pointType, asset, credit.amount, block ?? 0);
  appendEvents(db, transition.events);
  return { kind: "credited" };
}

function sameCredit(stored: StoredCredit, credit: NewCredit): boolean {
  return (
    stored.point_type === credit.pointType &&
    BigInt(stored.amount_units) === credit.amount &&
    stored.asset === (credit.asset ?? null) &&
    toNullableNumber(stored.block) === (credit.block ?? null)
  );
}

/**
 * Adds a credit to its (address, point type, asset) aggregate: the pair is added with a carry
 * (the sum stays within the point type's supply, ≤ 10^18 points, so `_w` cannot overflow) and
 * the highest block kept.
 */
function addAssetEarnings(db: SqliteDb, address: AddressKey, pointType: PointType, asset: string, amount: bigint, block: number): void {
  statement(
    db,
    `INSERT INTO asset_earnings (address, point_type, asset, earned_w, earned_f, max_block) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (address, point_type, asset) DO UPDATE SET
       earned_w = earned_w + excluded.earned_w + (earned_f + excluded.earned_f) / 1000000000000,
       earned_f = (earned_f + excluded.earned_f) % 1000000000000,
       max_block = max(max_block, excluded.max_block)`,
  ).run(address, pointType, asset, ...toPair(amount), block);
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

/** Units of `pointType` issued by every credit so far. */
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
