import type { LedgerStore } from "../store.js";

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  statementTimeoutMs: number;
}

export function createPostgresStore(_options: PostgresOptions): LedgerStore {
  throw new Error("the PostgreSQL adapter is not built yet (issue 3)");
}
