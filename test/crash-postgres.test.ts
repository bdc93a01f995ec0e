import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCrashScenario } from "./crash-scenario.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { assertBuilt } from "./helpers/process.js";

/**
 * The crash scenario ("acknowledged means durable", README) on PostgreSQL: SIGKILL of the
 * server during concurrent multi-transfer PUTs and finalizations, restart on the same schema.
 * Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

/** Small pools: other suites share the database server's max_connections. */
const SERVER_ENV = { PG_POOL_SIZE: "4", PG_STATEMENT_TIMEOUT_MS: "30000" };

/** Rows that would betray a partial batch: a count or total its transfers do not match, or orphan transfers. */
const PARTIAL_BATCHES_SQL = `
  SELECT b.batch_id, b.transfer_count, count(t.idx)::int AS stored_count,
         b.total_units::text AS total, coalesce(sum(t.amount_units), 0)::text AS stored_total
  FROM batches b LEFT JOIN transfers t ON t.seq = b.seq
  GROUP BY b.seq
  HAVING count(t.idx) <> b.transfer_count OR coalesce(sum(t.amount_units), 0) <> b.total_units
  UNION ALL
  SELECT 'orphan transfers of seq ' || t.seq, NULL, count(*)::int, NULL, NULL
  FROM transfers t WHERE NOT EXISTS (SELECT 1 FROM batches b WHERE b.seq = t.seq)
  GROUP BY t.seq`;

describe.skipIf(!DATABASE_URL_TEST)(
  `crash: SIGKILL during a load of concurrent PUTs (PostgreSQL)${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
    });
    afterAll(async () => {
      await schema?.drop();
    });

    it("keeps every acknowledged batch whole, stores no partial batch, finalizes all and balances add up", async () => {
      const report = await runCrashScenario(schema.connectionString, { env: SERVER_ENV });
      console.log(`crash scenario (PostgreSQL): ${JSON.stringify(report)}`);
      expect(await schema.query(PARTIAL_BATCHES_SQL)).toEqual([]);
      const [stored] = await schema.query<{ batches: number }>("SELECT count(*)::int AS batches FROM batches");
      expect(stored!.batches).toBe(report.acknowledged + report.storedUnanswered);
    }, 180_000);
  },
);
