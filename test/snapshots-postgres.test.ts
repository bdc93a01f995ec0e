import { describeSnapshotBuildCleanup, describeSnapshots, describeTransfers, type SnapshotFixture } from "./snapshots-suite.js";
import { MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const openPostgres = async (migrate = true): Promise<SnapshotFixture> => {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  const store = schema.openStore();
  if (migrate) await store.migrate();
  return {
    store,
    databaseUrl: schema.connectionString,
    insertAccounts: async (pointType, count) => {
      await schema.query(
        `INSERT INTO accounts (address, point_type, earned_units)
           SELECT '0x' || lpad(to_hex(i), 40, '0'), $1, i::numeric * 1000000000000 FROM generate_series(1, $2::int) AS i`,
        [pointType, count],
      );
    },
    buildRows: async (buildId) => {
      const [row] = await schema.query<{ leaf_chunks: number; node_chunks: number; builds: number }>(
        `SELECT (SELECT count(*) FROM snapshot_leaf_chunks WHERE build_id = $1)::int AS leaf_chunks,
                (SELECT count(*) FROM snapshot_node_chunks WHERE build_id = $1)::int AS node_chunks,
                (SELECT count(*) FROM snapshot_builds WHERE build_id = $1)::int AS builds`,
        [buildId],
      );
      return { leafChunks: row!.leaf_chunks, nodeChunks: row!.node_chunks, builds: row!.builds };
    },
    exec: async (sql) => {
      await schema.query(sql);
    },
    migrations: MIGRATIONS,
    close: () => schema.drop(),
  };
};

describeSnapshots("PostgreSQL", openPostgres, !DATABASE_URL_TEST);
describeTransfers("PostgreSQL", openPostgres, !DATABASE_URL_TEST);
describeSnapshotBuildCleanup("PostgreSQL", openPostgres, () => openPostgres(false), !DATABASE_URL_TEST);
