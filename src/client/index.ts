/**
 * points-ledger/client: a typed client of the Points API for Node 20+ and browsers (global
 * fetch only). See docs/operators.md.
 */
export { PointsClient, PublicClient, type PointsClientOptions } from "./client.js";
export { PointsAdminClient, type AdminClientOptions } from "./admin.js";
export {
  PointsApiError,
  PointsCursorError,
  PointsInputError,
  PointsNetworkError,
  type ErrorCode,
  type ErrorDetailsByCode,
  type FieldError,
} from "./errors.js";
export type { OperatorCredential, Signer, SessionOptions } from "./session.js";
export type { SubmitAllOptions, SubmitAllSummary, SubmitProgress } from "./submit-all.js";
export type { RetryOptions, TransportOptions } from "./transport.js";
export { batchIdFor, mergeTransfers, minimumUnitsOf, planBatches, type ItemError, type MergedRecipient, type PlannedBatch } from "./plan.js";
export { parseTransferFile, type TransferFile, type TransferLine, type LineError } from "./transfer-file.js";
export * from "./types.js";
