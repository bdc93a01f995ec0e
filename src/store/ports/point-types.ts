import type { PointType } from "../../domain/batch.js";
import type { Io, Out } from "./io.js";

/** The point types the database holds (LedgerStore.pointTypesInUse; store/point-types.ts checks POINT_TYPES against it). */
export interface PointTypesPort<Db, out M extends Io = Io> {
  /** Sorted, each once: every type of a batch or a credit (an account exists only through one of those). */
  pointTypesInUse(db: Db): Out<M, PointType[]>;
}
