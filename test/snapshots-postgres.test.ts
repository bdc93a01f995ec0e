import { describeSnapshotBuildCleanup, describeSnapshots, describeTransfers, type SnapshotFixture } from "./snapshots-suite.js";
import { MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import { takeSnapshot } from "../src/snapshots/snapshots.js";
import { createPool, transaction, type Queryable } from "../src/store/postgres/db.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";

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

describe.skipIf(!DATABASE_URL_TEST)("a snapshot read on two connections (PostgreSQL)", () => {
  let schema: TestSchema;

  beforeAll(async () => {
    schema = await createTestSchema(DATABASE_URL_TEST!);
    await schema.openStore().migrate();
  });

  afterAll(() => schema?.drop());

  it("reads on a second connection the state the exporting transaction sees, not a later one", async () => {
    await schema.query("CREATE TABLE probe (n integer)");
    await schema.query("INSERT INTO probe VALUES (1)");
    const pool = createPool({ connectionString: schema.connectionString, poolSize: 2, statementTimeoutMs: 5000 });
    const count = (db: Queryable) => db.query<{ n: number }>("SELECT count(*)::int AS n FROM probe").then(({ rows }) => rows[0]!.n);
    try {
      const seen = await transaction(
        pool,
        async (client) => {
          const { rows } = await client.query<{ id: string }>("SELECT pg_export_snapshot() AS id");
          await schema.query("INSERT INTO probe VALUES (2)");
          const imported = await transaction(pool, count, { isolation: "REPEATABLE READ", readOnly: true, snapshot: rows[0]!.id });
          const fresh = await transaction(pool, count, { isolation: "REPEATABLE READ", readOnly: true });
          return { own: await count(client), imported, fresh };
        },
        { isolation: "REPEATABLE READ", readOnly: true },
      );
      expect(seen).toEqual({ own: 1, imported: 1, fresh: 2 });
      await expect(transaction(pool, count, { snapshot: "1'; DROP TABLE probe; --" })).rejects.toThrow(/not an exported snapshot/);
      expect(await count(pool)).toBe(2);
    } finally {
      await pool.end();
    }
  });

  it("takes the same snapshot, now and as of a time, with one connection (the halves in turn) as with several", async () => {
    // 45,000 holders spread over both halves of the address space (md5 digits), several pages each.
    const credited = Date.now() - 3_600_000;
    for (const table of [
      "accounts (address, point_type, earned_units)",
      "credits (address, credit_id, point_type, amount_units, created_at_ms)",
    ]) {
      const credit = table.startsWith("credits")
        ? `'c', 'SPLIT', i::numeric * 1000000000000, ${credited}`
        : "'SPLIT', i::numeric * 1000000000000";
      await schema.query(
        `INSERT INTO ${table} SELECT '0x' || md5(i::text) || lpad(to_hex(i), 8, '0'), ${credit} FROM generate_series(1, 45000) AS i`,
      );
    }
    const [halves] = await schema.query<{ upper: number }>(
      "SELECT count(*) FILTER (WHERE address > '0x8')::int AS upper FROM accounts WHERE point_type = 'SPLIT'",
    );
    expect(halves!.upper).toBeGreaterThan(20_000);
    expect(halves!.upper).toBeLessThan(25_000);
    const roots: Record<string, string> = {};
    for (const poolSize of [1, 4]) {
      const store = schema.openStore({ poolSize });
      for (const asOfMs of [null, credited + 60_000]) {
        const request = {
          id: `split-${poolSize}-${asOfMs ?? "now"}`,
          pointType: "SPLIT",
          measure: "available" as const,
          decimals: 18,
          asOfMs,
        };
        const taken = await takeSnapshot(store as Parameters<typeof takeSnapshot>[0], request, () => Date.now(), ADMIN_ACTOR);
        if (taken.kind !== "created") throw new Error(`snapshot ${request.id}: ${taken.kind}`);
        expect(taken.snapshot.leafCount).toBe(45_000);
        roots[`${poolSize} ${asOfMs === null ? "now" : "asOf"}`] = taken.snapshot.root;
      }
    }
    expect(roots["1 now"]).toBe(roots["4 now"]);
    expect(roots["1 asOf"]).toBe(roots["4 now"]);
    expect(roots["4 asOf"]).toBe(roots["4 now"]);
  }, 120_000);
});
