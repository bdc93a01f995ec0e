import Database from "better-sqlite3";
import {
  describeSnapshotBuildCleanup,
  describeSnapshots,
  describeTransfers,
  type BuildRows,
  type SnapshotFixture,
} from "./snapshots-suite.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";

const openSqlite = async (migrate = true): Promise<SnapshotFixture> => {
  const { store, databaseUrl, remove } = temporarySqliteStore();
  if (migrate) await store.migrate();
  const path = databaseUrl.slice("sqlite:".length);
  return {
    store,
    databaseUrl,
    insertAccounts: async (pointType, count) => {
      // A second connection, as another process would write: the store's connection sees it (WAL).
      const db = new Database(path);
      try {
        db.prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
           INSERT INTO accounts (address, point_type, earned_w, earned_f) SELECT printf('0x%040x', i), ?, i, 0 FROM n`,
        ).run(count, pointType);
      } finally {
        db.close();
      }
    },
    buildRows: async (buildId) => {
      // Another connection, as the other process beside a server would read.
      const db = new Database(path, { readonly: true });
      try {
        const rows = db
          .prepare(
            `SELECT (SELECT count(*) FROM snapshot_leaf_chunks WHERE build_id = @buildId) AS leafChunks,
                    (SELECT count(*) FROM snapshot_node_chunks WHERE build_id = @buildId) AS nodeChunks,
                    (SELECT count(*) FROM snapshot_builds WHERE build_id = @buildId) AS builds`,
          )
          .get({ buildId }) as BuildRows;
        return rows;
      } finally {
        db.close();
      }
    },
    exec: async (sql) => {
      const db = new Database(path);
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
    migrations: MIGRATIONS,
    close: remove,
  };
};

describeSnapshots("SQLite", openSqlite);
describeTransfers("SQLite", openSqlite);
describeSnapshotBuildCleanup("SQLite", openSqlite, () => openSqlite(false));
