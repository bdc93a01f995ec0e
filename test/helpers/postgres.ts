import { randomBytes } from "node:crypto";
import pg from "pg";
import type { AddressKey } from "../../src/domain/address.js";
import { createPostgresStore, type PostgresOptions } from "../../src/ledger/postgres.js";
import type { LedgerStore } from "../../src/store/store.js";

/**
 * PostgreSQL fixtures: every test file gets its own schema (`plt_<random>`), selected through the
 * connection's search_path, so reruns and parallel vitest workers never see each other's rows.
 */

export const DATABASE_URL_TEST = process.env.DATABASE_URL_TEST;
/**
 * A cluster of the run's own made by initdb with PostgreSQL's default settings (autovacuum on),
 * started by test/global-setup.ts where DATABASE_URL_TEST is set and the server binaries are there.
 */
export const DATABASE_URL_TEST_DEFAULTS = process.env.DATABASE_URL_TEST_DEFAULTS;
export const DEFAULTS_SKIP_REASON =
  "DATABASE_URL_TEST_DEFAULTS is unset: the tests on a PostgreSQL cluster with default settings are skipped (test/global-setup.ts makes one with initdb when DATABASE_URL_TEST is set and PostgreSQL's server binaries are installed)";
/** The clusters PostgreSQL suites run on: the machine's, and the one with default settings when there is one. */
export const POSTGRES_TEST_CLUSTERS: [string, string][] = [
  ...(DATABASE_URL_TEST ? [["PostgreSQL", DATABASE_URL_TEST] as [string, string]] : []),
  ...(DATABASE_URL_TEST_DEFAULTS ? [["PostgreSQL (initdb defaults)", DATABASE_URL_TEST_DEFAULTS] as [string, string]] : []),
];

export const SKIP_REASON =
  "DATABASE_URL_TEST is unset, PostgreSQL tests skipped (CI sets postgres://postgres@127.0.0.1:5432/points_ledger_test)";

export interface TestSchema {
  schema: string;
  /** DATABASE_URL_TEST with search_path (and application_name) set to this schema. */
  connectionString: string;
  /** A store on this schema, with a pool of its own; closed by drop(). */
  openStore(overrides?: Partial<PostgresOptions>): LedgerStore;
  /** Runs one statement on a fresh connection to this schema (to inspect data or hold locks). */
  query<R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<R[]>;
  /** Closes every store opened here and drops the schema. */
  drop(): Promise<void>;
}

/** `url` with search_path set to `schema`; connections are named `applicationName` in pg_stat_activity. */
export function withSearchPath(url: string, schema: string, applicationName = schema): string {
  const parsed = new URL(url);
  parsed.searchParams.set("options", `-c search_path=${schema}`);
  parsed.searchParams.set("application_name", applicationName);
  return parsed.toString();
}

export async function createTestSchema(url: string): Promise<TestSchema> {
  const schema = `plt_${randomBytes(6).toString("hex")}`;
  await runOnce(url, `CREATE SCHEMA ${schema}`);
  const connectionString = withSearchPath(url, schema);
  const stores: LedgerStore[] = [];
  return {
    schema,
    connectionString,
    openStore: (overrides = {}) => {
      const store = createPostgresStore({ connectionString, poolSize: 4, statementTimeoutMs: 30_000, ...overrides });
      stores.push(store);
      return store;
    },
    query: async <R extends pg.QueryResultRow>(sql: string, values: unknown[] = []) =>
      (await runOnce<R>(connectionString, sql, values)).rows,
    drop: async () => {
      await Promise.all(stores.map((store) => store.close()));
      await runOnce(url, `DROP SCHEMA ${schema} CASCADE`);
    },
  };
}

async function runOnce<R extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query<R>(sql, values);
  } finally {
    await client.end();
  }
}

/** A random lowercase address, the store's key form. */
export function randomAddress(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}
