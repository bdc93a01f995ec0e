import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { SYSTEM_ACTOR } from "../src/domain/api-keys.js";
import type { Batch, BatchStatus } from "../src/domain/batch.js";
import { eventJson, newEventId } from "../src/domain/events.js";
import { batchJson } from "../src/domain/json.js";
import { MIGRATIONS as POSTGRES_MIGRATIONS } from "../src/store/postgres/migrations/index.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../src/store/sqlite/migrations/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

/**
 * The actors migration (SQLite 12, PostgreSQL 10) on a database written before it: its events
 * and batches read back with the system actor (API.md Events, actor), the Batch objects inside
 * old batch events included, and cancelledBy only on the batch that was cancelled.
 */

const SQLITE_ACTORS_VERSION = 12;
const POSTGRES_ACTORS_VERSION = 10;
const T0 = Date.UTC(2026, 2, 1);
const SYSTEM_JSON = { type: "system" };

function randomAddress(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}

/** A batch row as a database before actors holds it, and its batch event's data as then written (no submittedBy, no cancelledBy). */
function oldBatch(contract: AddressKey, batchId: string, status: BatchStatus) {
  const batch: Batch = {
    contract,
    batchId,
    pointType: "PHASE2_POINTS",
    status,
    total: 0n,
    transferCount: 0,
    secondsToFinalize: 3600,
    createdAtMs: T0,
    finalizeAtMs: T0 + 3_600_000,
    updatedAtMs: status === "CANCELLED" ? T0 + 1 : null,
    finalizedAtMs: null,
    cancelledAtMs: status === "CANCELLED" ? T0 + 1 : null,
    submittedBy: SYSTEM_ACTOR,
    cancelledBy: null,
  };
  const { submittedBy: _submitted, cancelledBy: _cancelled, ...json } = batchJson(batch);
  return { batch, data: JSON.stringify({ batch: json }) };
}

/** What every old row must read as once migrated, through the store. */
async function expectSystemActors(store: LedgerStore, contract: AddressKey): Promise<void> {
  const pending = await store.getBatch(contract, "old-pending");
  const cancelled = await store.getBatch(contract, "old-cancelled");
  expect([pending?.submittedBy, pending?.cancelledBy]).toEqual([SYSTEM_ACTOR, null]);
  expect([cancelled?.submittedBy, cancelled?.cancelledBy]).toEqual([SYSTEM_ACTOR, SYSTEM_ACTOR]);
  const listed = await store.listBatches(contract, { sort: "ASC", limit: 10 });
  expect(listed.batches.map((b) => [b.batchId, b.submittedBy, b.cancelledBy])).toEqual([
    ["old-pending", SYSTEM_ACTOR, null],
    ["old-cancelled", SYSTEM_ACTOR, SYSTEM_ACTOR],
  ]);

  const page = await store.listEvents({ stream: null, after: null, types: null, limit: 10 });
  if (page.kind !== "page") throw new Error("events expired");
  const events = page.events.map((stored) => eventJson(stored.event));
  expect(events.map((e) => [e.type, e.actor])).toEqual([
    ["batch.accepted", SYSTEM_JSON],
    ["batch.cancelled", SYSTEM_JSON],
  ]);
  expect(
    events
      .map((e) => e.data as { batch: { submittedBy: unknown; cancelledBy: unknown } })
      .map((d) => [d.batch.submittedBy, d.batch.cancelledBy]),
  ).toEqual([
    [SYSTEM_JSON, null],
    [SYSTEM_JSON, SYSTEM_JSON],
  ]);
}

describe("the actors migration on SQLite", () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), "points-ledger-actors-"));
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it("gives events and batches written before it the system actor, and a cancelled batch the system as canceller", async () => {
    const path = join(directory, "v11.db");
    const raw = new Database(path);
    raw.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)");
    for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version < SQLITE_ACTORS_VERSION)) {
      raw.exec(migration.sql);
      raw.prepare("INSERT INTO schema_migrations VALUES (?, ?, 0)").run(migration.version, migration.name);
    }
    const contract = randomAddress();
    const insertBatch = raw.prepare(
      `INSERT INTO batches (contract, batch_id, point_type, status, total_w, total_f, transfer_count, seconds_to_finalize,
         created_at_ms, finalize_at_ms, updated_at_ms, cancelled_at_ms) VALUES (?, ?, ?, ?, 0, 0, 0, ?, ?, ?, ?, ?)`,
    );
    const insertEvent = raw.prepare("INSERT INTO events (event_id, type, stream, occurred_at_ms, data) VALUES (?, ?, ?, ?, ?)");
    for (const [batchId, status, type] of [
      ["old-pending", "PENDING", "batch.accepted"],
      ["old-cancelled", "CANCELLED", "batch.cancelled"],
    ] as const) {
      const { batch, data } = oldBatch(contract, batchId, status);
      insertBatch.run(contract, batchId, batch.pointType, status, 3600, T0, batch.finalizeAtMs, batch.updatedAtMs, batch.cancelledAtMs);
      insertEvent.run(newEventId(), type, contract, T0, data);
    }
    raw.close();

    const store = createSqliteStore({ path, synchronous: "NORMAL" });
    try {
      await store.migrate();
      await expectSystemActors(store, contract);
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(!DATABASE_URL_TEST)(`the actors migration on PostgreSQL${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`, () => {
  it("gives events and batches written before it the system actor, and a cancelled batch the system as canceller", async () => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    try {
      await schema.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)");
      for (const migration of POSTGRES_MIGRATIONS.filter((m) => m.version < POSTGRES_ACTORS_VERSION)) {
        await schema.query(migration.sql);
        await schema.query("INSERT INTO schema_migrations VALUES ($1, $2, 0)", [migration.version, migration.name]);
      }
      const contract = randomAddress();
      for (const [batchId, status, type] of [
        ["old-pending", "PENDING", "batch.accepted"],
        ["old-cancelled", "CANCELLED", "batch.cancelled"],
      ] as const) {
        const { batch, data } = oldBatch(contract, batchId, status);
        await schema.query(
          `INSERT INTO batches (contract, batch_id, point_type, status, total_units, transfer_count, seconds_to_finalize,
             created_at_ms, finalize_at_ms, updated_at_ms, cancelled_at_ms) VALUES ($1, $2, $3, $4, 0, 0, 3600, $5, $6, $7, $8)`,
          [contract, batchId, batch.pointType, status, T0, batch.finalizeAtMs, batch.updatedAtMs, batch.cancelledAtMs],
        );
        await schema.query("INSERT INTO events (event_id, type, stream, occurred_at_ms, data) VALUES ($1, $2, $3, $4, $5::jsonb)", [
          newEventId(),
          type,
          contract,
          T0,
          data,
        ]);
      }
      const store = schema.openStore();
      await store.migrate();
      await expectSystemActors(store, contract);
      const columns = await schema.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND column_name IN ('actor', 'submitted_by', 'cancelled_by') ORDER BY column_name",
        [schema.schema],
      );
      expect(columns.map((c) => c.column_name)).toEqual(["actor", "cancelled_by", "submitted_by"]);
    } finally {
      await schema.drop();
    }
  });
});
