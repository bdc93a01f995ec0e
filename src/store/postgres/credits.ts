import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { creditTransition } from "../../domain/transitions.js";
import type { AssetEarnings, CreditResult, NewCredit } from "../store.js";
import { changeBalance } from "./accounts.js";
import { appendEvents } from "./events.js";
import { toUnits, type PgClient, type Queryable } from "./db.js";

/**
 * Call inside a transaction that commits only on "credited": idempotent by (address, creditId).
 * The credit row is claimed first; a concurrent credit with the same id waits on it, then sees it.
 */
export async function applyCredit(db: PgClient, credit: NewCredit): Promise<CreditResult> {
  const asset = credit.asset ?? null;
  const block = credit.block ?? null;
  const { rowCount } = await db.query({
    name: "pl-insert-credit",
    text: `INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms, asset, block)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (address, credit_id) DO NOTHING`,
    values: [credit.address, credit.creditId, credit.pointType, credit.amount.toString(), credit.createdAtMs, asset, block],
  });
  if (rowCount === 0) return { kind: "exists", matchesRequest: await matchesStoredCredit(db, credit) };
  const transition = creditTransition(credit, await supplyBefore(db, credit), credit.createdAtMs);
  if (transition.kind === "overflow") return transition;
  await changeBalance(db, credit.address, credit.pointType, transition.change);
  if (asset !== null) await addAssetEarnings(db, credit.address, credit.pointType, asset, credit.amount, block ?? 0);
  await appendEvents(db, transition.events);
  return { kind: "credited" };
}

/** Adds a credit to its (address, point type, asset) aggregate and keeps the highest block. */
async function addAssetEarnings(
  db: Queryable,
  address: AddressKey,
  pointType: PointType,
  asset: string,
  amount: bigint,
  block: number,
): Promise<void> {
  await db.query({
    name: "pl-add-asset-earnings",
    text: `INSERT INTO asset_earnings AS e (address, point_type, asset, earned_units, max_block) VALUES ($1, $2, $3, $4::numeric, $5)
           ON CONFLICT (address, point_type, asset) DO UPDATE SET
             earned_units = e.earned_units + excluded.earned_units, max_block = greatest(e.max_block, excluded.max_block)`,
    values: [address, pointType, asset, amount.toString(), block],
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
async function supplyBefore(db: Queryable, credit: NewCredit): Promise<bigint> {
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

async function matchesStoredCredit(db: Queryable, credit: NewCredit): Promise<boolean> {
  const { rows } = await db.query<{ point_type: PointType; amount_units: string; asset: string | null; block: string | null }>({
    name: "pl-find-credit",
    text: "SELECT point_type, amount_units, asset, block FROM credits WHERE address = $1 AND credit_id = $2",
    values: [credit.address, credit.creditId],
  });
  const existing = rows[0];
  assertInvariant(existing !== undefined, `credit ${credit.creditId} conflicted but cannot be read`);
  return (
    existing.point_type === credit.pointType &&
    toUnits(existing.amount_units) === credit.amount &&
    existing.asset === (credit.asset ?? null) &&
    (existing.block === null ? null : Number(existing.block)) === (credit.block ?? null)
  );
}
