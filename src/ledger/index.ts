import { SYSTEM_ACTOR } from "../domain/api-keys.js";
import type { LeaderboardReads, ProjectionRunner } from "../store/ports/leaderboards.js";
import type { LedgerDatabase } from "../store/ports/ledger.js";
import type { LedgerOperations } from "../store/store.js";
import { createApiKey, revokeApiKey } from "./api-keys.js";
import { cancelBatch } from "./cancel.js";
import { credit } from "./credit.js";
import { finalizeDue } from "./finalize.js";
import { readBoard, readStanding } from "./leaderboards.js";
import { buildWindowBoards, cutProjection, NOTHING_APPLIED, passProjection } from "./projection.js";
import { setOperator } from "./operator.js";
import { submitBatch } from "./submit.js";
import { webhookOperations } from "./webhooks.js";
import {
  appendToLog,
  logCheckpoint,
  logConsistencyProof,
  logEpochs,
  logInclusionProof,
  logStatus,
  markNewLogEpoch,
  openLog,
  rotateLogKey,
} from "./transparency-log.js";
import { publisherOperations } from "./publishers.js";
import { chainOperations } from "./chain-operators.js";

/**
 * The ledger's transitions over one database (src/store/ports/ledger.ts), written once:
 * submit, cancel, finalize, credit, operator change and API keys, the projection's steps (their
 * writes where `projection` runs them: SQLite's own file, src/ledger/sqlite-projection.ts), webhook
 * endpoints and deliveries (./webhooks.ts), and the leaderboard reads (over `boards`, ./leaderboards.ts). Adapters supply the database; each
 * operation begins, reads, decides (src/domain/transitions.ts), writes, appends its events and
 * commits here. Each takes who acts; the store's callers that name no one (tools, tests) act as
 * the service itself. The HTTP routes and the CLI always name the actor.
 */
export function ledgerOperations<Db, ReadDb>(
  database: LedgerDatabase<Db>,
  boards: LeaderboardReads<ReadDb>,
  projection: ProjectionRunner = {
    pass: async (cut) => passProjection(database, cut),
    buildWindowBoards: async (limit) => buildWindowBoards(database, limit),
  },
): LedgerOperations {
  return {
    submitBatch: async (batch, submittedBy = SYSTEM_ACTOR) => submitBatch(database, batch, submittedBy),
    cancelBatch: async (contract, batchId, nowMs, cancelledBy = SYSTEM_ACTOR) =>
      cancelBatch(database, contract, batchId, nowMs, cancelledBy),
    finalizeDue: async (nowMs, limit, onFailure) => finalizeDue(database, nowMs, limit, onFailure),
    credit: async (newCredit, actor = SYSTEM_ACTOR) => credit(database, newCredit, actor),
    setOperator: async (contract, operator, nowMs, actor = SYSTEM_ACTOR) => setOperator(database, contract, operator, nowMs, actor),
    createApiKey: async (apiKey) => createApiKey(database, apiKey),
    revokeApiKey: async (contract, id, nowMs, actor = SYSTEM_ACTOR) => revokeApiKey(database, contract, id, nowMs, actor),
    applyProjection: async (limit, nowMs) => {
      const cut = await cutProjection(database, limit, nowMs);
      return cut === null ? NOTHING_APPLIED : projection.pass(cut);
    },
    buildWindowBoards: async (limit) => projection.buildWindowBoards(limit),
    readBoard: async (query) => readBoard(boards, query),
    readStanding: async (contract, pointType, window, address, nowMs) => readStanding(boards, contract, pointType, window, address, nowMs),
    ...webhookOperations(database),
    ...publisherOperations(database),
    ...chainOperations(database),
    appendToLog: async (limit, nowMs, signing) => appendToLog(database, limit, nowMs, signing),
    logCheckpoint: async () => logCheckpoint(database),
    logStatus: async () => logStatus(database),
    openLog: async (signing, nowMs) => openLog(database, signing, nowMs),
    rotateLogKey: async (previous, signing, nowMs) => rotateLogKey(database, previous, signing, nowMs),
    markNewLogEpoch: async () => markNewLogEpoch(database),
    logEpochs: async () => logEpochs(database),
    logInclusionProof: async (eventId, stream, treeSize) => logInclusionProof(database, eventId, stream, treeSize),
    logConsistencyProof: async (from, to) => logConsistencyProof(database, from, to),
  };
}
