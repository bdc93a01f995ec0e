import { postgresStore, type PostgresStoreOptions } from "../store/postgres/index.js";
import type { LedgerStore } from "../store/store.js";
import { ledgerOperations } from "./index.js";

export type { PostgresOptions, PostgresStoreOptions, ReplicaOptions } from "../store/postgres/index.js";

/**
 * A store over the PostgreSQL adapter, its ledger operations run by the flows of this folder; with
 * `replica` (DATABASE_READ_URL), the reads that may be a replica's run by the same flows there.
 */
export function createPostgresStore(options: PostgresStoreOptions): LedgerStore {
  return postgresStore(options, ledgerOperations);
}
