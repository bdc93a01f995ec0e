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

export async function createBenchSchema(baseUrl: string): Promise<BenchSchema> {
  const schema = `bench_${randomBytes(6).toString("hex")}`;
  await runOnce(baseUrl, `CREATE SCHEMA ${schema}`);
  const url = new URL(baseUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  url.searchParams.set("application_name", schema);
  return { url: url.toString(), drop: () => runOnce(baseUrl, `DROP SCHEMA ${schema} CASCADE`) };
}
