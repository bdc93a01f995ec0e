import type { PointType } from "../../domain/batch.js";
import type { PointTypesPort } from "../ports/point-types.js";
import type { Queryable } from "./db.js";

/**
 * A recursive step that walks the distinct point types of `table` through its point_type index
 * (each step one index seek), so the cost grows with the number of types, not of rows.
 */
function skipScan(name: string, table: "batches" | "credits"): string {
  return `${name} (point_type) AS (
            SELECT min(point_type) FROM ${table}
            UNION ALL
            SELECT (SELECT min(point_type) FROM ${table} WHERE point_type > ${name}.point_type) FROM ${name}
            WHERE ${name}.point_type IS NOT NULL
          )`;
}

/**
 * Every point type the database holds. Batches and credits are enough: no row of either is ever
 * deleted, and an account row (a balance) exists only through a credit of its type, a batch of
 * its type (the sender's reservation) or a transfer of such a batch (a recipient).
 */
async function pointTypesInUse(db: Queryable): Promise<PointType[]> {
  const { rows } = await db.query<{ point_type: PointType }>({
    name: "pl-point-types-in-use",
    text: `WITH RECURSIVE ${skipScan("batch_types", "batches")}, ${skipScan("credit_types", "credits")}
           SELECT point_type FROM batch_types WHERE point_type IS NOT NULL
           UNION
           SELECT point_type FROM credit_types WHERE point_type IS NOT NULL
           ORDER BY point_type`,
  });
  return rows.map((row) => row.point_type);
}

/** The point types of the ledger tables, over pg. */
export const pointTypes = { pointTypesInUse } satisfies PointTypesPort<Queryable, "async">;
