import { ConfigError } from "../config.js";
import type { PointType } from "../domain/batch.js";
import type { LedgerStore } from "./store.js";

/**
 * The one start-up check of POINT_TYPES against the database (the server and every CLI command
 * that opens the store call it after migrating): a point type the database holds balances,
 * batches or credits of cannot be dropped, or those points would vanish from every balance and
 * their batches could neither be listed by type nor resubmitted.
 */
export async function assertPointTypesConfigured(store: LedgerStore, pointTypes: readonly PointType[]): Promise<void> {
  const configured = new Set(pointTypes);
  const dropped = (await store.pointTypesInUse()).filter((pointType) => !configured.has(pointType));
  if (dropped.length === 0) return;
  throw new ConfigError(
    "POINT_TYPES",
    `leaves out ${dropped.join(", ")}, which the database holds balances, batches or credits of; ` +
      `add ${dropped.length === 1 ? "it" : "them"} back (POINT_TYPES=${[...pointTypes, ...dropped].join(",")})`,
  );
}
