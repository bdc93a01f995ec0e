import type { LedgerDatabase } from "../store/ports/ledger.js";
import type { LedgerStore } from "../store/store.js";
import { createApiKey, revokeApiKey } from "./api-keys.js";
import { cancelBatch } from "./cancel.js";
import { credit } from "./credit.js";
import { finalizeDue } from "./finalize.js";
import { setOperator } from "./operator.js";
import { submitBatch } from "./submit.js";

/** The LedgerStore operations the flows implement, for each adapter's store to take as they are. */
export type LedgerOperations = Pick<
  LedgerStore,
  "submitBatch" | "cancelBatch" | "finalizeDue" | "credit" | "setOperator" | "createApiKey" | "revokeApiKey"
>;

/**
 * The ledger's transitions over one database (src/store/ports/ledger.ts), written once:
 * submit, cancel, finalize, credit, operator change and API keys. Adapters supply the database; each
 * operation begins, reads, decides (src/domain/transitions.ts), writes, appends its events and
 * commits here.
 */
export function ledgerOperations<Db>(database: LedgerDatabase<Db>): LedgerOperations {
  return {
    submitBatch: async (batch) => submitBatch(database, batch),
    cancelBatch: async (contract, batchId, nowMs) => cancelBatch(database, contract, batchId, nowMs),
    finalizeDue: async (nowMs, limit, onFailure) => finalizeDue(database, nowMs, limit, onFailure),
    credit: async (newCredit) => credit(database, newCredit),
    setOperator: async (contract, operator, nowMs) => setOperator(database, contract, operator, nowMs),
    createApiKey: async (apiKey) => createApiKey(database, apiKey),
    revokeApiKey: async (contract, id, nowMs) => revokeApiKey(database, contract, id, nowMs),
  };
}
