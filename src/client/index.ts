/**
 * points-ledger/client: a typed client of the Points API for Node 20+ and browsers (global
 * fetch only). See docs/operators.md.
 */
export { PointsClient, PublicClient, type PointsClientOptions } from "./client.js";
export { ApiKeys, type Actor, type ApiKey, type ApiKeyScope, type CreatedApiKey, type NewApiKey } from "./api-keys.js";
export { PointsAdminClient, type AdminClientOptions, type CreditSource } from "./admin.js";
export { EventFeed, type EventFeedOptions } from "./events.js";
export {
  LogVerificationError,
  TransparencyLog,
  verifyCheckpoint,
  verifyCheckpointConsistency,
  verifyEventInclusion,
  type Checkpoint,
  type EventProof,
  type LogStatus,
} from "./log.js";
export type { EventStreamOptions, StreamedEvent } from "./event-stream.js";
export { consoleLoginUrl, parseConsoleLogin, type ConsoleLogin } from "./console-login.js";
export type { ListedTransfer, TransferPage, TransferPageQuery } from "./transfers.js";
export type {
  BalanceAsOf,
  BalancesAsOf,
  BalancesOptions,
  BoardDay,
  LeaderboardEntry,
  LeaderboardPage,
  LeaderboardPageQuery,
  LeaderboardQuery,
  LeaderboardStanding,
  StandingQuery,
} from "./leaderboards.js";
export { throughText } from "./leaderboards.js";
export type { ContractPage, ContractPageQuery, RegisteredContract } from "./contracts.js";
export { TextDownload, type BalanceExportQuery, type ExportOptions, type TransferExportQuery } from "./exports.js";
export type { Hash, Snapshot, SnapshotMeasure, SnapshotProof, SnapshotRequest, SnapshotTreeDump, TakenSnapshot } from "./snapshots.js";
export {
  PointsApiError,
  PointsCursorError,
  PointsInputError,
  PointsNetworkError,
  type ErrorCode,
  type ErrorDetailsByCode,
  type FieldError,
} from "./errors.js";
export type { BearerCredential, OperatorCredential, Signer, SessionOptions } from "./session.js";
export type { SubmitAllOptions, SubmitAllSummary, SubmitProgress } from "./submit-all.js";
export type { RetryOptions, TransportOptions } from "./transport.js";
export {
  batchIdFor,
  mergeTransfers,
  minimumUnitsOf,
  planBatches,
  type ItemError,
  type MergedRecipient,
  type PlannedBatch,
} from "./plan.js";
export { parseTransferFile, type TransferFile, type TransferLine, type LineError } from "./transfer-file.js";
export * from "./types.js";
