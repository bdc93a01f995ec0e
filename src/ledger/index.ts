import type { LedgerDatabase } from "../store/ports/ledger.js";
import type { LedgerOperations } from "../store/store.js";
import { cancelBatch } from "./cancel.js";
import { credit } from "./credit.js";
import { finalizeDue } from "./finalize.js";
import { setOperator } from "./operator.js";
import { submitBatch } from "./submit.js";

/**
 * The ledger's transitions over one database (src/store/ports/ledger.ts), written once:
 * submit, cancel, finalize, credit and operator change. Adapters supply the database; each
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
  };
}
