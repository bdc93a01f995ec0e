import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { NewBatch } from "../src/domain/batch.js";
import { parsePoints } from "../src/domain/points.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { randomAddress } from "./store-contract.js";

const directory = mkdtempSync(join(tmpdir(), "points-ledger-finalizer-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const points = (text: string) => parsePoints(text)!;

describe("SQLite finalizer groups", () => {
  it("finalizes many due batches in one call, each exactly once", async () => {
    const store = createSqliteStore({ path: join(directory, "groups.db"), synchronous: "NORMAL" });
    await store.migrate();
    const contract = randomAddress();
    await store.credit({ address: contract, creditId: "c", pointType: "PHASE2_POINTS", amount: points("1000"), createdAtMs: 0 });
    for (let i = 0; i < 30; i++) {
      const batch: NewBatch = {
        contract,
        batchId: `b${i}`,
        pointType: "PHASE2_POINTS",
        transfers: [{ toAddress: randomAddress(), amount: points("1") }],
        total: points("1"),
        secondsToFinalize: 1,
        createdAtMs: i,
      };
      expect((await store.submitBatch(batch)).kind).toBe("accepted");
    }
    const first = await store.finalizeDue(10_000, 50);
    expect(first.map((b) => b.batchId)).toEqual(Array.from({ length: 30 }, (_, i) => `b${i}`));
    expect(await store.finalizeDue(10_000, 50)).toEqual([]);
    expect((await store.getBalances(contract)).PHASE2_POINTS.finalizedSentCumulative).toBe(points("30"));
    expect(await store.verify()).toEqual([]);
    await store.close();
  });

  it("lets a batch that cannot be applied block only itself", async () => {
    const path = join(directory, "poisoned.db");
    const store = createSqliteStore({ path, synchronous: "NORMAL" });
    await store.migrate();
    const contract = randomAddress();
    const [full, healthy] = [randomAddress(), randomAddress()];
    await store.credit({ address: contract, creditId: "c", pointType: "PHASE2_POINTS", amount: points("10"), createdAtMs: 0 });
    await store.credit({ address: full, creditId: "c", pointType: "PHASE2_POINTS", amount: points("1"), createdAtMs: 0 });
    // Put `full`'s receivedCumulative at SQLite's 64-bit limit: one more point overflows its column.
    const raw = new Database(path);
    raw.prepare("UPDATE accounts SET received_w = 9223372036854775807 WHERE address = ?").run(full);
    raw.close();
    const batch = (batchId: string, toAddress: typeof full, createdAtMs: number): NewBatch => ({
      contract,
      batchId,
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress, amount: points("1") }],
      total: points("1"),
      secondsToFinalize: 1,
      createdAtMs,
    });
    await store.submitBatch(batch("poisoned", full, 0));
    await store.submitBatch(batch("healthy", healthy, 1));

    const finalized = await store.finalizeDue(10_000, 50);
    expect(finalized.map((b) => b.batchId)).toEqual(["healthy"]);
    expect((await store.getBatch(contract, "poisoned"))?.status).toBe("PENDING");
    // Alone, the failing batch surfaces its error (the finalizer logs it) and changes nothing.
    await expect(store.finalizeDue(10_000, 50)).rejects.toThrow();
    expect((await store.getBatch(contract, "poisoned"))?.status).toBe("PENDING");
    expect((await store.getBalances(contract)).PHASE2_POINTS.pendingSent).toBe(points("1"));
    await store.close();
  });
});
