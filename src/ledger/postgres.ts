import { postgresStore, type PostgresOptions } from "../store/postgres/index.js";
import type { LedgerStore } from "../store/store.js";
import { ledgerOperations } from "./index.js";

export type { PostgresOptions } from "../store/postgres/index.js";

/** A store over the PostgreSQL adapter, its ledger operations run by the flows of this folder. */
export function createPostgresStore(options: PostgresOptions): LedgerStore {
  return postgresStore(options, ledgerOperations);
}
