import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_POINT_TYPES } from "../src/domain/batch.js";
import { parsePoints } from "../src/domain/points.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { openDatabase } from "../src/store/sqlite/db.js";
import { randomAddress, storeContractSuite } from "./store-contract.js";

const directory = mkdtempSync(join(tmpdir(), "points-ledger-contract-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let databases = 0;
// A new file per call: the suite opens isolated stores for tests that issue most of a supply.
storeContractSuite(
  "LedgerStore contract on SQLite",
  async () => createSqliteStore({ path: join(directory, `ledger-${databases++}.db`), synchronous: "NORMAL" }),
  {
    // The suite's own store is the first file. A transfer count one above the stored transfers
    // trips finalization's check that every transfer was credited.
    breakBatch: async (contract, batchId) => {
      const shiftTransferCount = (by: number) => {
        const raw = new Database(join(directory, "ledger-0.db"));
        try {
          raw
            .prepare("UPDATE batches SET transfer_count = transfer_count + ? WHERE contract = ? AND batch_id = ?")
            .run(by, contract, batchId);
        } finally {
          raw.close();
        }
      };
      shiftTransferCount(1);
      return async () => shiftTransferCount(-1);
    },
  },
);

describe("verify() on a corrupted SQLite ledger", () => {
  it("reports each broken invariant and nothing once repaired", async () => {
    const path = join(directory, "corrupt.db");
    const store = createSqliteStore({ path, synchronous: "NORMAL" });
    const raw = new Database(path);
    try {
      await store.migrate();
      const [contract, recipient] = [randomAddress(), randomAddress()];
      const amount = (text: string) => parsePoints(text)!;
      await store.credit({ address: contract, creditId: "c1", pointType: "PHASE2_POINTS", amount: amount("10"), createdAtMs: 0 });
      const transfers = [{ toAddress: recipient, amount: amount("1.5") }];
      const base = { contract, pointType: DEFAULT_POINT_TYPES[0], transfers, total: amount("1.5"), secondsToFinalize: 1, createdAtMs: 0 };
      await store.submitBatch({ ...base, batchId: "finalized" });
      await store.finalizeDue(1000, 10);
      await store.submitBatch({ ...base, batchId: "pending", createdAtMs: 5000 });
      expect(await store.verify()).toEqual([]);
      // Each corruption, the invariants it must trip, and its repair.
      const cases: [string, number[], string][] = [
        [
          "UPDATE accounts SET pending_w = pending_w + 100 WHERE address = @contract",
          [1, 2],
          "UPDATE accounts SET pending_w = pending_w - 100 WHERE address = @contract",
        ],
        [
          "UPDATE accounts SET pending_f = pending_f + 1 WHERE address = @contract",
          [2],
          "UPDATE accounts SET pending_f = pending_f - 1 WHERE address = @contract",
        ],
        [
          "UPDATE accounts SET earned_w = earned_w + 1 WHERE address = @contract",
          [2],
          "UPDATE accounts SET earned_w = earned_w - 1 WHERE address = @contract",
        ],
        [
          "UPDATE accounts SET received_f = received_f + 1 WHERE address = @recipient",
          [2, 3],
          "UPDATE accounts SET received_f = received_f - 1 WHERE address = @recipient",
        ],
        [
          "UPDATE transfers SET amount_f = amount_f + 1 WHERE seq = (SELECT seq FROM batches WHERE batch_id = 'pending')",
          [4],
          "UPDATE transfers SET amount_f = amount_f - 1 WHERE seq = (SELECT seq FROM batches WHERE batch_id = 'pending')",
        ],
        [
          "UPDATE batches SET transfer_count = 2 WHERE batch_id = 'pending'",
          [4],
          "UPDATE batches SET transfer_count = 1 WHERE batch_id = 'pending'",
        ],
        [
          "UPDATE batches SET status = 'CANCELLED' WHERE batch_id = 'pending'",
          [2],
          "UPDATE batches SET status = 'PENDING' WHERE batch_id = 'pending'",
        ],
      ];
      for (const [corruption, invariants, repair] of cases) {
        raw.prepare(corruption).run({ contract, recipient });
        const found = new Set((await store.verify()).map((v) => v.invariant));
        expect([...found].sort(), corruption).toEqual(invariants);
        raw.prepare(repair).run({ contract, recipient });
        expect(await store.verify(), repair).toEqual([]);
      }
    } finally {
      raw.close();
      await store.close();
    }
  });
});

describe("a SQLite database as the store opens it", () => {
  it("writes ahead (WAL), syncs as configured and waits 5 s for another process's lock", () => {
    const db = openDatabase({ path: join(directory, "settings.db"), synchronous: "NORMAL" });
    try {
      expect({
        journal: db.pragma("journal_mode", { simple: true }),
        synchronous: db.pragma("synchronous", { simple: true }),
        busyTimeoutMs: db.pragma("busy_timeout", { simple: true }),
      }).toEqual({ journal: "wal", synchronous: 1, busyTimeoutMs: 5000 });
    } finally {
      db.close();
    }
  });
});
