import { afterAll } from "vitest";
import { MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { compactHistorySuite, leaderboardsSuite, type HistoryTamper, type OldBatch } from "./leaderboards-suite.js";

/** The schema version that added the leaderboards (and history_backfill). */
const LEADERBOARDS_VERSION = 12;
/** The schema version that replaced them with boards, board_entries, board_bands and received_daily. */
const COMPACT_BOARDS_VERSION = 13;

const schemas: TestSchema[] = [];
afterAll(async () => {
  await Promise.all(schemas.map((schema) => schema.drop()));
});

async function newSchema(): Promise<TestSchema> {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  schemas.push(schema);
  return schema;
}

/** A schema before `version` (by default before the leaderboards), holding `batches` as such a database held them. */
async function writeOldSchema(schema: TestSchema, batches: readonly OldBatch[], version = LEADERBOARDS_VERSION): Promise<void> {
  await schema.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)");
  for (const migration of MIGRATIONS.filter((m) => m.version < version)) {
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

/** Each fresh store's schema, for windowBoards and raiseWindowEntries. */
const schemaOf = new Map<LedgerStore, TestSchema>();

leaderboardsSuite("Leaderboards on PostgreSQL", {
  ...(DATABASE_URL_TEST ? {} : { skipMessage: SKIP_REASON }),
  duplicateRecipients: false,
  freshStore: async () => {
    const schema = await newSchema();
    const store = schema.openStore();
    schemaOf.set(store, schema);
    await store.migrate();
    return store;
  },
  windowBoards: async (store) => {
    const schema = schemaOf.get(store)!;
    const boards = await schema.query<{ from_ms: string; to_ms: string; state: string; batches: string }>(
      "SELECT from_ms::text, to_ms::text, state, batches::text FROM window_boards ORDER BY window_id",
    );
    const [stray] = await schema.query<{ entries: string }>(
      "SELECT count(*)::text AS entries FROM window_entries WHERE window_id NOT IN (SELECT window_id FROM window_boards)",
    );
    return {
      boards: boards.map((row) => ({
        fromMs: Number(row.from_ms),
        toMs: Number(row.to_ms),
        state: row.state,
        batches: Number(row.batches),
      })),
      strayEntries: Number(stray!.entries),
    };
  },
  shiftWindowEntries: async (store, points) => {
    await schemaOf.get(store)!.query("UPDATE window_entries SET points_units = points_units + $1 * 1000000000000", [points]);
  },
  oldStores: async (batches) => {
    const schema = await newSchema();
    await writeOldSchema(schema, batches);
    return [schema.openStore(), schema.openStore()];
  },
});

compactHistorySuite("Compact boards and daily receipts on PostgreSQL", {
  ...(DATABASE_URL_TEST ? {} : { skipMessage: SKIP_REASON }),
  version: COMPACT_BOARDS_VERSION,
  oldDatabase: async (batches, entry) => {
    const schema = await newSchema();
    await writeOldSchema(schema, batches, COMPACT_BOARDS_VERSION);
    // Version 12 once its own backfill was done: nothing listed, the history in its tables.
    await schema.query("DELETE FROM history_backfill");
    await schema.query(
      "INSERT INTO leaderboard_entries (contract, point_type, address, points_units) VALUES ($1, 'PHASE2_POINTS', $2, $3)",
      [entry.contract, entry.address, entry.units.toString()],
    );
    const oldTables = async () =>
      (
        await schema.query<{ name: string }>(
          `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()
           AND tablename IN ('leaderboard_entries', 'leaderboard_bands', 'received_history')`,
        )
      ).map((row) => row.name);
    return { store: schema.openStore(), oldTables };
  },
  freshDatabase: async () => {
    const schema = await newSchema();
    const store = schema.openStore();
    await store.migrate();
    // $1 the address, $2 the delta, $3 the band.
    const changes: Record<HistoryTamper, string> = {
      entry:
        "UPDATE board_entries SET points_units = points_units + $2 WHERE address = decode(substr($1, 3), 'hex') AND $3::int IS NOT NULL",
      band: "UPDATE board_bands SET entries = entries + $2 WHERE band = $3 AND $1::text IS NOT NULL",
      dayAmount: "UPDATE received_daily SET amount_units = amount_units + $2 WHERE address = $1 AND $3::int IS NOT NULL",
      dayLast: "UPDATE received_daily SET last_at_ms = last_at_ms + $2 WHERE address = $1 AND $3::int IS NOT NULL",
    };
    return {
      store,
      dayTimes: async (address) => {
        const [day] = await schema.query<{ day_ms: string; first_at_ms: string; last_at_ms: string }>(
          "SELECT day_ms::text, first_at_ms::text, last_at_ms::text FROM received_daily WHERE address = $1",
          [address],
        );
        return [Number(day!.day_ms), Number(day!.first_at_ms), Number(day!.last_at_ms)];
      },
      tamper: async (kind, address, band, delta) => {
        await schema.query(changes[kind], [address, delta, band]);
      },
    };
  },
});
