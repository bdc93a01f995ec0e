import type { PointType } from "../../domain/batch.js";
import { MAX_POINTS_UNITS } from "../../domain/points.js";
import type { CreditResult, NewCredit } from "../store.js";
import { readBalance, writeBalance } from "./accounts.js";
import { statement, type SqliteDb } from "./db.js";

/** Call inside a transaction: idempotent by (address, creditId). */
export function applyCredit(db: SqliteDb, credit: NewCredit): CreditResult {
  const existing = statement(db, "SELECT point_type, amount_units FROM credits WHERE address = ? AND credit_id = ?").get(
    credit.address,
    credit.creditId,
  ) as { point_type: PointType; amount_units: string } | undefined;
  if (existing) {
    const matchesRequest = existing.point_type === credit.pointType && BigInt(existing.amount_units) === credit.amount;
    return { kind: "exists", matchesRequest };
  }
  const balance = readBalance(db, credit.address, credit.pointType);
  const earnedCumulative = balance.earnedCumulative + credit.amount;
  if (earnedCumulative > MAX_POINTS_UNITS) return { kind: "overflow" };
  statement(
    db,
    "INSERT INTO credits (address, credit_id, point_type, amount_units, created_at_ms) VALUES (?, ?, ?, ?, ?)",
  ).run(credit.address, credit.creditId, credit.pointType, credit.amount.toString(), credit.createdAtMs);
  writeBalance(db, credit.address, credit.pointType, { ...balance, earnedCumulative });
  return { kind: "credited" };
}
