import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch } from "../src/domain/batch.js";
import { parsePoints } from "../src/domain/points.js";
import { Finalizer } from "../src/worker/finalize.js";
import { createMetrics, recordCommittedEvents } from "../src/metrics.js";
import { FINALIZE_RETRY_BASE_MS } from "../src/domain/finalize-retry.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { FinalizeFailure, LedgerStore } from "../src/store/store.js";
import { randomAddress } from "./store-contract.js";

const directory = mkdtempSync(join(tmpdir(), "points-ledger-finalizer-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const points = (text: string) => parsePoints(text)!;

function oneTransfer(contract: AddressKey, batchId: string, createdAtMs: number): NewBatch {
  return {
    contract,
    batchId,
    pointType: "PHASE2_POINTS",
    transfers: [{ toAddress: randomAddress(), amount: points("1") }],
    total: points("1"),
    secondsToFinalize: 1,
    createdAtMs,
  };
}

async function openStore(name: string): Promise<{ store: LedgerStore; path: string }> {
  const path = join(directory, name);
  const store = createSqliteStore({ path, synchronous: "NORMAL" });
  await store.migrate();
  return { store, path };
}

/**
 * Makes a batch impossible to finalize: a transfer count one above its stored transfers trips
 * finalization's check that every transfer was credited. Returns the repair.
 */
function breakBatch(path: string, contract: AddressKey, batchId: string): () => void {
  const shift = (by: number) => {
    const raw = new Database(path);
    try {
      raw.prepare("UPDATE batches SET transfer_count = transfer_count + ? WHERE contract = ? AND batch_id = ?").run(by, contract, batchId);
    } finally {
      raw.close();
    }
  };
  shift(1);
  return () => shift(-1);
}

async function submitAll(store: LedgerStore, batches: NewBatch[]): Promise<void> {
  for (const batch of batches) expect((await store.submitBatch(batch)).kind).toBe("accepted");
}

describe("SQLite finalizer groups", () => {
  it("finalizes many due batches in one call, each exactly once", async () => {
    const { store } = await openStore("groups.db");
    const contract = randomAddress();
    await store.credit({ address: contract, creditId: "c", pointType: "PHASE2_POINTS", amount: points("1000"), createdAtMs: 0 });
    await submitAll(
      store,
      Array.from({ length: 30 }, (_, i) => oneTransfer(contract, `b${i}`, i)),
    );
    // The group is bounded by time (15 ms a transaction), so a busy machine may need a second
    // call; what matters is several per call and each batch exactly once.
    const calls: string[][] = [];
    for (let call = 0; call < 30; call++) {
      const finalized = (await store.finalizeDue(10_000, 50)).map((b) => b.batchId);
      if (finalized.length === 0) break;
      calls.push(finalized);
    }
    expect(calls[0]!.length).toBeGreaterThan(1);
    expect(calls.flat()).toEqual(Array.from({ length: 30 }, (_, i) => `b${i}`));
    expect(await store.finalizeDue(10_000, 50)).toEqual([]);
    expect((await store.getBalances(contract)).PHASE2_POINTS.finalizedSentCumulative).toBe(points("30"));
    expect(await store.verify()).toEqual([]);
    await store.close();
  });

  it("lets a batch that cannot be applied fail alone, in the same commit as the others, and retries it after its backoff", async () => {
    const { store, path } = await openStore("poisoned.db");
    const contract = randomAddress();
    await store.credit({ address: contract, creditId: "c", pointType: "PHASE2_POINTS", amount: points("10"), createdAtMs: 0 });
    await submitAll(store, [oneTransfer(contract, "poisoned", 0), oneTransfer(contract, "healthy", 1)]);
    const repair = breakBatch(path, contract, "poisoned");

    const failures: FinalizeFailure[] = [];
    const finalized = await store.finalizeDue(10_000, 50, (failure) => failures.push(failure));
    expect(finalized.map((b) => b.batchId)).toEqual(["healthy"]);
    expect(failures).toMatchObject([{ contract, batchId: "poisoned", failures: 1, retryAtMs: 10_000 + FINALIZE_RETRY_BASE_MS }]);
    expect(String(failures[0]!.error)).toMatch(/poisoned has 1 stored transfers/);
    // Within its backoff it is not tried again: nothing is attempted, nothing thrown.
    const again: FinalizeFailure[] = [];
    expect(await store.finalizeDue(10_000 + FINALIZE_RETRY_BASE_MS - 1, 50, (failure) => again.push(failure))).toEqual([]);
    expect(again).toEqual([]);
    expect((await store.getBatch(contract, "poisoned"))?.status).toBe("PENDING");
    expect((await store.getBalances(contract)).PHASE2_POINTS.pendingSent).toBe(points("1"));
    expect(await store.countFailingBatches()).toBe(1);

    repair();
    expect((await store.finalizeDue(10_000 + FINALIZE_RETRY_BASE_MS, 50)).map((b) => b.batchId)).toEqual(["poisoned"]);
    expect(await store.countFailingBatches()).toBe(0);
    expect((await store.getBalances(contract)).PHASE2_POINTS).toMatchObject({ pendingSent: 0n, finalizedSentCumulative: points("2") });
    expect(await store.verify()).toEqual([]);
    await store.close();
  });
});

describe("Finalizer with failing batches", () => {
  it("finalizes every other contract's batches when more batches fail than one pass claims, and exposes them in /metrics", async () => {
    const { store, path } = await openStore("finalizer.db");
    const [broken, healthy] = [randomAddress(), randomAddress()];
    for (const contract of [broken, healthy]) {
      await store.credit({ address: contract, creditId: "c", pointType: "PHASE2_POINTS", amount: points("100"), createdAtMs: 0 });
    }
    const batchesPerPass = 10;
    // Older than every healthy batch and more than a pass claims: an oldest-first window would fill with them.
    const failing = Array.from({ length: 3 * batchesPerPass }, (_, i) => oneTransfer(broken, `broken-${i}`, i));
    const fine = Array.from({ length: 5 }, (_, i) => oneTransfer(healthy, `healthy-${i}`, 100 + i));
    await submitAll(store, [...failing, ...fine]);
    for (const batch of failing) breakBatch(path, broken, batch.batchId);

    const metrics = createMetrics();
    // As buildApp does: the ledger counters follow the store's committed events.
    store.onCommittedEvents((events) => recordCommittedEvents(metrics, events));
    const clock = new ManualClock(60_000);
    const finalizer = new Finalizer(store, clock, { intervalMs: 1000, batchesPerPass }, metrics, pino({ enabled: false }));
    // runUntilIdle runs one store call per invocation while the finalizer is not started.
    let finalized = 0;
    for (let run = 0; run < failing.length; run++) finalized += await finalizer.runUntilIdle();
    expect(finalized).toBe(fine.length);
    for (const batch of fine) expect((await store.getBatch(healthy, batch.batchId))?.status).toBe("FINALIZED");
    for (const batch of failing) expect((await store.getBatch(broken, batch.batchId))?.status).toBe("PENDING");

    const scrape = await metrics.registry.metrics();
    expect(scrape).toContain(`points_finalize_failures_total ${failing.length}`);
    expect(scrape).toContain(`points_finalize_failing_batches ${failing.length}`);
    expect(scrape).toContain(`points_batches_finalized_total ${fine.length}`);
    // Later runs within the backoff leave them alone, so the finalizer idles instead of spinning.
    expect(await finalizer.runUntilIdle()).toBe(0);
    expect(await metrics.registry.getSingleMetricAsString("points_finalize_failures_total")).toContain(` ${failing.length}`);
    await store.close();
  });
});
