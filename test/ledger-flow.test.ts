import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { InvariantViolation } from "../src/domain/errors.js";
import { parsePoints } from "../src/domain/points.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { randomAddress } from "./store-contract.js";

/**
 * The ledger flows (src/ledger/) run the domain's balance check (applyChange) on both databases.
 * PostgreSQL used to add SQL deltas unchecked: an account already broken (available < 0, which
 * its schema has no CHECK for) took a credit, and a cancel that took pendingSent below zero was
 * refused only by a column CHECK. Each case below breaks one account behind the store's back
 * and expects the same refusal from both adapters, with nothing stored.
 */

const POINTS = "PHASE2_POINTS";
const points = (text: string) => parsePoints(text)!;

interface Corruptible {
  store: LedgerStore;
  /** Sets the account's pendingSent to `units`, whatever it held. */
  setPendingUnits(address: AddressKey, units: bigint): Promise<void>;
}

function describeAdapter(name: string, open: () => Promise<Corruptible>, close: () => Promise<void>, skip = false): void {
  describe.skipIf(skip)(`${name}: the domain's balance check`, () => {
    let ledger: Corruptible;
    afterAll(close);

    it("refuses a credit to an account whose available is already below zero, storing nothing", async () => {
      ledger ??= await open();
      const address = randomAddress();
      await ledger.store.credit({ address, creditId: "first", pointType: POINTS, amount: points("10"), createdAtMs: 0 });
      await ledger.setPendingUnits(address, points("11"));
      const refused = ledger.store.credit({ address, creditId: "second", pointType: POINTS, amount: points("0.5"), createdAtMs: 1 });
      await expect(refused).rejects.toThrow(InvariantViolation);
      await expect(refused).rejects.toThrow(/available would fall below zero/);
      const balance = (await ledger.store.getBalances(address, [POINTS]))[POINTS];
      expect(balance.earnedCumulative).toBe(points("10"));
    });

    it("refuses a cancel that would take pendingSent below zero, leaving the batch PENDING", async () => {
      ledger ??= await open();
      const contract = randomAddress();
      await ledger.store.credit({ address: contract, creditId: "c", pointType: POINTS, amount: points("10"), createdAtMs: 0 });
      const batch = {
        contract,
        batchId: "b",
        pointType: POINTS,
        transfers: [{ toAddress: randomAddress(), amount: points("4") }],
        total: points("4"),
        secondsToFinalize: 3600,
        createdAtMs: 0,
      };
      expect((await ledger.store.submitBatch(batch)).kind).toBe("accepted");
      await ledger.setPendingUnits(contract, points("1"));
      const refused = ledger.store.cancelBatch(contract, "b", 1000);
      await expect(refused).rejects.toThrow(/pendingSent would fall below zero/);
      expect((await ledger.store.getBatch(contract, "b"))?.status).toBe("PENDING");
    });
  });
}

const directory = mkdtempSync(join(tmpdir(), "points-ledger-flow-"));
describeAdapter(
  "SQLite",
  async () => {
    const path = join(directory, "ledger.db");
    const store = createSqliteStore({ path, synchronous: "NORMAL" });
    await store.migrate();
    return {
      store,
      setPendingUnits: async (address, units) => {
        const raw = new Database(path);
        try {
          const unitsPerPoint = 10n ** 12n;
          raw
            .prepare("UPDATE accounts SET pending_w = ?, pending_f = ? WHERE address = ? AND point_type = ?")
            .run(units / unitsPerPoint, units % unitsPerPoint, address, POINTS);
        } finally {
          raw.close();
        }
      },
    };
  },
  async () => rmSync(directory, { recursive: true, force: true }),
);

let schema: TestSchema | undefined;
describeAdapter(
  "PostgreSQL",
  async () => {
    schema = await createTestSchema(DATABASE_URL_TEST!);
    const store = schema.openStore();
    await store.migrate();
    return {
      store,
      setPendingUnits: async (address, units) => {
        await schema!.query("UPDATE accounts SET pending_units = $1 WHERE address = $2 AND point_type = $3", [
          units.toString(),
          address,
          POINTS,
        ]);
      },
    };
  },
  async () => schema?.drop(),
  !DATABASE_URL_TEST,
);
if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
