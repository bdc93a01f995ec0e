import { afterAll } from "vitest";
import { MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { leaderboardsSuite, type OldBatch } from "./leaderboards-suite.js";

/** The schema version that added the leaderboards (and history_backfill). */
const LEADERBOARDS_VERSION = 12;

const schemas: TestSchema[] = [];
afterAll(async () => {
  await Promise.all(schemas.map((schema) => schema.drop()));
});

async function newSchema(): Promise<TestSchema> {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  schemas.push(schema);
  return schema;
}

/** A schema before the leaderboards, holding `batches` as such a database held them. */
async function writeOldSchema(schema: TestSchema, batches: readonly OldBatch[]): Promise<void> {
  await schema.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)");
  for (const migration of MIGRATIONS.filter((m) => m.version < LEADERBOARDS_VERSION)) {
    await schema.query(migration.sql);
    await schema.query("INSERT INTO schema_migrations VALUES ($1, $2, 0)", [migration.version, migration.name]);
  }
  for (const batch of batches) {
    const total = batch.transfers.reduce((sum, transfer) => sum + transfer.amount, 0n);
    const endedAtMs = batch.finalizedAtMs ?? (batch.status === "CANCELLED" ? batch.createdAtMs + 1 : null);
    const [row] = await schema.query<{ seq: string }>(
      `INSERT INTO batches (contract, batch_id, point_type, status, total_units, transfer_count, seconds_to_finalize,
         created_at_ms, finalize_at_ms, updated_at_ms, finalized_at_ms, cancelled_at_ms)
       VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $11) RETURNING seq`,
      [
        batch.contract,
        batch.batchId,
        batch.pointType,
        batch.status,
        total.toString(),
        batch.transfers.length,
        batch.createdAtMs,
        batch.finalizeAtMs,
        endedAtMs,
        batch.finalizedAtMs,
        batch.status === "CANCELLED" ? endedAtMs : null,
      ],
    );
    for (const [idx, transfer] of batch.transfers.entries()) {
      await schema.query("INSERT INTO transfers (seq, idx, to_address, amount_units) VALUES ($1, $2, $3, $4)", [
        row!.seq,
        idx,
        transfer.toAddress,
        transfer.amount.toString(),
      ]);
    }
  }
}

leaderboardsSuite("Leaderboards on PostgreSQL", {
  ...(DATABASE_URL_TEST ? {} : { skipMessage: SKIP_REASON }),
  duplicateRecipients: false,
  freshStore: async () => {
    const store = (await newSchema()).openStore();
    await store.migrate();
    return store;
  },
  oldStores: async (batches) => {
    const schema = await newSchema();
    await writeOldSchema(schema, batches);
    return [schema.openStore(), schema.openStore()];
  },
});
