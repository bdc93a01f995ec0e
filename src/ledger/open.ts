import type { Config } from "../config.js";
import type { LedgerStore } from "../store/store.js";
import { createSqliteStore } from "./sqlite.js";

/**
 * Picks the adapter from DATABASE_URL: `sqlite:<path>` or `postgres://…` (PostgreSQL's driver is
 * loaded only then), with the replica of DATABASE_READ_URL when the caller passes it.
 */
export async function openStore(
  config: Pick<Config, "databaseUrl" | "sqliteSynchronous" | "pgPoolSize" | "pgStatementTimeoutMs"> &
    Partial<Pick<Config, "databaseReadUrl" | "replicaMaxLagSeconds">>,
): Promise<LedgerStore> {
  const url = config.databaseUrl;
  if (url.startsWith("sqlite:")) {
    return createSqliteStore({ path: url.slice("sqlite:".length), synchronous: config.sqliteSynchronous });
  }
  const { createPostgresStore } = await import("./postgres.js");
  return createPostgresStore({
    connectionString: url,
    poolSize: config.pgPoolSize,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    replica:
      config.databaseReadUrl && config.replicaMaxLagSeconds !== undefined
        ? { connectionString: config.databaseReadUrl, maxLagSeconds: config.replicaMaxLagSeconds }
        : null,
  });
}
