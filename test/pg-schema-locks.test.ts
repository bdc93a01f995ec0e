import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { UNITS_PER_POINT } from "../src/domain/points.js";
import { tryTransactionLock } from "../src/store/postgres/db.js";
import { PROJECTION_LOCK_KEY } from "../src/store/postgres/leaderboard-projection.js";
import type { LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

/**
 * The jobs' advisory locks (the projection's applier, the transparency log's logger: one
 * instance at a time, the others skip their step) belong to the service's schema. PostgreSQL's
 * advisory locks are the database's, so before they were keyed by schema, a service in another
 * schema of the same database (or another test file: CI saw a projection pass apply 0 batches)
 * made this one skip its steps.
 */
describe.skipIf(!DATABASE_URL_TEST)("job locks of two services in two schemas of one database", () => {
  const schemas: TestSchema[] = [];
  beforeAll(async () => {
    schemas.push(await createTestSchema(DATABASE_URL_TEST!), await createTestSchema(DATABASE_URL_TEST!));
  });
  afterAll(async () => {
    await Promise.all(schemas.map((schema) => schema.drop()));
  });

  const t0 = Date.UTC(2026, 2, 1);
  async function finalizedBatch(store: LedgerStore): Promise<void> {
    const contract = `0x${"ab".repeat(20)}` as AddressKey;
    await store.migrate();
    await store.credit({ address: contract, creditId: "fund", pointType: "PHASE2_POINTS", amount: 10n * UNITS_PER_POINT, createdAtMs: t0 });
    const submitted = await store.submitBatch({
      contract,
      batchId: "b1",
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: `0x${"cd".repeat(20)}` as AddressKey, amount: 3n * UNITS_PER_POINT }],
      total: 3n * UNITS_PER_POINT,
      secondsToFinalize: 1,
      createdAtMs: t0 + 1000,
    });
    expect(submitted.kind).toBe("accepted");
    expect(await store.finalizeDue(t0 + 5000, 10)).toHaveLength(1);
  }

  it("one schema's projection pass in flight makes the other instances of that schema skip, and no other schema's", async () => {
    const [a, b] = schemas as [TestSchema, TestSchema];
    const storeA = a.openStore();
    const storeB = b.openStore();
    await finalizedBatch(storeA);
    await finalizedBatch(storeB);
    // Schema a's applier lock, held by an open transaction as a pass on another instance holds it.
    const pool = new pg.Pool({ connectionString: a.connectionString, max: 1 });
    const holder = await pool.connect();
    try {
      await holder.query("BEGIN");
      expect(await tryTransactionLock(holder, "held", PROJECTION_LOCK_KEY)).toBe(true);
      expect((await storeA.applyProjection(10, t0 + 5000)).applied).toBe(0);
      expect((await storeB.applyProjection(10, t0 + 5000)).applied).toBe(1);
      await holder.query("ROLLBACK");
    } finally {
      holder.release();
      await pool.end();
    }
    expect((await storeA.applyProjection(10, t0 + 5000)).applied).toBe(1);
  });
});
