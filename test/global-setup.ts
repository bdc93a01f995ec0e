import { CLUSTER_SKIP_REASON, startCluster, type Cluster } from "./helpers/pg-cluster.js";

/**
 * Where PostgreSQL tests run (DATABASE_URL_TEST set), a second cluster of the run's own is made by
 * initdb with PostgreSQL's default settings (autovacuum and fsync on, the transaction ids of a new
 * cluster), and its URL given to the suites as DATABASE_URL_TEST_DEFAULTS: the machine's cluster
 * has other settings, and the transparency log's fault of issue 37 showed only on a default one.
 * PG_DEFAULTS_CLUSTER=0 turns it off; without PostgreSQL's server binaries the suites that use it
 * skip and say so.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (!process.env.DATABASE_URL_TEST || process.env.PG_DEFAULTS_CLUSTER === "0" || process.env.DATABASE_URL_TEST_DEFAULTS) return undefined;
  if (CLUSTER_SKIP_REASON !== null) {
    console.warn(`No PostgreSQL cluster with default settings for the tests: ${CLUSTER_SKIP_REASON}`);
    return undefined;
  }
  let cluster: Cluster;
  try {
    cluster = await startCluster({ defaults: true });
  } catch (error) {
    // initdb may be refused (a container without the user, a read-only tmp): say so, and the suites skip.
    console.warn(`No PostgreSQL cluster with default settings for the tests: ${(error as Error).message}`);
    return undefined;
  }
  await cluster.query("CREATE DATABASE points_ledger_test");
  process.env.DATABASE_URL_TEST_DEFAULTS = cluster.url("points_ledger_test");
  return () => cluster.remove();
}
