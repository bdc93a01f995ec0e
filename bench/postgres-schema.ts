import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * A fresh schema per PostgreSQL run, selected through the connection's search_path (as the
 * tests do), dropped afterwards. Batches of earlier runs would otherwise be counted by the
 * finalizer metrics, and their dead account tuples slow every later run down (measured: a
 * database with autovacuum off went from 115,000 to 19,000 finalized transfers/s over runs).
 */
export interface BenchSchema {
  url: string;
  /** VACUUM ANALYZE of the schema's tables (autovacuum is off on the bench machine). */
  vacuumAnalyze(): Promise<void>;
  drop(): Promise<void>;
}

async function runOnce(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** `keep`: create the schema by that name and leave it in place at drop() (for inspection). */
export async function createBenchSchema(baseUrl: string, keep: string | null = null): Promise<BenchSchema> {
  if (keep !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(keep)) throw new Error(`--keep: not a plain schema name: "${keep}"`);
  const schema = keep ?? `bench_${randomBytes(6).toString("hex")}`;
  await runOnce(baseUrl, `CREATE SCHEMA ${schema}`);
  const url = new URL(baseUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  url.searchParams.set("application_name", schema);
  return {
    url: url.toString(),
    // Unqualified VACUUM covers the whole database: the search_path picks no tables, so name them.
    vacuumAnalyze: async () => {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      try {
        const tables = await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = $1", [schema]);
        for (const { name } of tables.rows) await client.query(`VACUUM ANALYZE ${schema}.${name}`);
      } finally {
        await client.end();
      }
    },
    drop: () => (keep === null ? runOnce(baseUrl, `DROP SCHEMA ${schema} CASCADE`) : Promise.resolve()),
  };
}
