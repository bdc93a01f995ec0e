import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { storeContractSuite } from "./store-contract.js";

const directory = mkdtempSync(join(tmpdir(), "points-ledger-contract-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

storeContractSuite("LedgerStore contract on SQLite", async () =>
  createSqliteStore({ path: join(directory, "ledger.db"), synchronous: "NORMAL" }),
);
