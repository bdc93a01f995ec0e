import Database from "better-sqlite3";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCrashScenario } from "./crash-scenario.js";
import { assertBuilt, sqliteUrl, tempDir } from "./helpers/process.js";

/** Rows that would betray a partial batch: a count or total that its transfers do not match, or orphan transfers. */
function partialBatches(path: string): unknown[] {
  const db = new Database(path, { readonly: true });
  try {
    const mismatched = db
      .prepare(
        `SELECT b.batch_id, b.transfer_count, count(t.idx) AS stored
         FROM batches b LEFT JOIN transfers t ON t.seq = b.seq
         GROUP BY b.seq HAVING count(t.idx) <> b.transfer_count`,
      )
      .all();
    const orphans = db.prepare("SELECT DISTINCT seq FROM transfers WHERE seq NOT IN (SELECT seq FROM batches)").all();
    return [...mismatched, ...orphans.map((row) => ({ orphanTransfersOfSeq: row }))];
  } finally {
    db.close();
  }
}

describe("crash: SIGKILL during a load of concurrent PUTs (SQLite, WAL, synchronous=FULL)", () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir("crash");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps every acknowledged batch whole, stores no partial batch, finalizes all and balances add up", async () => {
    const report = await runCrashScenario(sqliteUrl(dir));
    console.log(`crash scenario (SQLite): ${JSON.stringify(report)}`);
    expect(partialBatches(join(dir, "ledger.db"))).toEqual([]);
  }, 180_000);
});
