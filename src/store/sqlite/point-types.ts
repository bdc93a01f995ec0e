import type { PointType } from "../../domain/batch.js";
import type { PointTypesPort } from "../ports/point-types.js";
import { statement, type SqliteDb } from "./db.js";

/**
 * The distinct point types of `table`, found by skipping through its point_type index (each step
 * one index seek), so the cost grows with the number of types, not of rows.
 */
function distinctPointTypes(db: SqliteDb, table: "batches" | "credits"): PointType[] {
  return statement(
    db,
    `WITH RECURSIVE types (point_type) AS (
       SELECT min(point_type) FROM ${table}
       UNION ALL
       SELECT (SELECT min(point_type) FROM ${table} WHERE point_type > types.point_type) FROM types WHERE types.point_type IS NOT NULL
     )
     SELECT point_type FROM types WHERE point_type IS NOT NULL`,
  )
    .pluck()
    .all() as PointType[];
}

/**
 * Every point type the database holds. Batches and credits are enough: no row of either is ever
 * deleted, and an account row (a balance) exists only through a credit of its type, a batch of
 * its type (the sender's reservation) or a transfer of such a batch (a recipient).
 */
function pointTypesInUse(db: SqliteDb): PointType[] {
  return [...new Set([...distinctPointTypes(db, "batches"), ...distinctPointTypes(db, "credits")])].sort();
}

/** The point types of the ledger tables, over better-sqlite3. */
export const pointTypes = { pointTypesInUse } satisfies PointTypesPort<SqliteDb, "sync">;
