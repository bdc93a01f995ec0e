import { sqliteStore } from "../store/sqlite/index.js";
import type { SqliteOptions } from "../store/sqlite/db.js";
import type { LedgerStore } from "../store/store.js";
import { ledgerOperations } from "./index.js";
import { sqliteProjection } from "./sqlite-projection.js";

/** A store over the embedded SQLite adapter, its ledger operations run by the flows of this folder. */
export function createSqliteStore(options: SqliteOptions): LedgerStore {
  return sqliteStore(options, ledgerOperations, sqliteProjection);
}
