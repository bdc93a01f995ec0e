import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import type { CreditResult, NewCredit } from "../store.js";
import { addEarned } from "./accounts.js";
import { toUnits, type Queryable } from "./db.js";

/**
 * Call inside a transaction that commits only on "credited": idempotent by (address, creditId).
 * The credit row is claimed first; a concurrent credit with the same id waits on it, then sees it.
 */
export async function applyCredit(db: Queryable, credit: NewCredit): Promise<CreditResult> {
  const { rowCount } = await db.query({
    name: "pl-insert-credit",
    text: `INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (address, credit_id) DO NOTHING`,
    values: [credit.address, credit.creditId, credit.pointType, credit.amount.toString(), credit.createdAtMs],
  });
  if (rowCount === 0) return { kind: "exists", matchesRequest: await matchesStoredCredit(db, credit) };
  if (!(await addEarned(db, credit.address, credit.pointType, credit.amount))) return { kind: "overflow" };
  return { kind: "credited" };
}

async function matchesStoredCredit(db: Queryable, credit: NewCredit): Promise<boolean> {
  const { rows } = await db.query<{ point_type: PointType; amount_units: string }>({
    name: "pl-find-credit",
    text: "SELECT point_type, amount_units FROM credits WHERE address = $1 AND credit_id = $2",
    values: [credit.address, credit.creditId],
  });
  const existing = rows[0];
  assertInvariant(existing !== undefined, `credit ${credit.creditId} conflicted but cannot be read`);
  return existing.point_type === credit.pointType && toUnits(existing.amount_units) === credit.amount;
}
