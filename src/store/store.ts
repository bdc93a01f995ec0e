import type { AccountsStore } from "./ports/accounts.js";
import type { ApiKeysStore } from "./ports/api-keys.js";
import type { AuthStore } from "./ports/auth.js";
import type { BatchesStore } from "./ports/batches.js";
import type { EventsStore } from "./ports/events.js";
import type { HistoryStore, LeaderboardReads, LeaderboardsStore, ProjectionRunner } from "./ports/leaderboards.js";
import type { LedgerDatabase } from "./ports/ledger.js";
import type { SnapshotsStore } from "./ports/snapshots.js";
import type { TransfersStore } from "./ports/transfers.js";
import type { Violation } from "./ports/verify.js";
import type { TransparencyLogStore } from "./ports/tlog.js";
import type { WebhooksStore } from "./ports/webhooks.js";
import type { PublishersStore } from "./ports/publishers.js";
import type { BackupsStore } from "./ports/backups.js";
import type { ChainStore } from "./ports/chain.js";
import type { ReplicaStore } from "./ports/replica.js";

/**
 * The LedgerStore port, composed of one port per concern (./ports/). Every operation that touches
 * balances is one flow of src/ledger/, run once for both databases in one transaction over the
 * adapters' table primitives; adapters live in `sqlite/` and `postgres/` with the same file names,
 * and both pass `test/store-contract.ts`.
 */

export { availableOf, type Balance } from "../domain/balance.js";
// The per-concern ports, re-exported so the HTTP layer and the worker keep one import.
export type * from "./ports/accounts.js";
export type * from "./ports/auth.js";
export type * from "./ports/api-keys.js";
export type * from "./ports/batches.js";
export type * from "./ports/credits.js";
export type * from "./ports/transfers.js";
export type * from "./ports/events.js";
export type * from "./ports/webhooks.js";
export type * from "./ports/leaderboards.js";
export type * from "./ports/point-types.js";
export type * from "./ports/tlog.js";
export type * from "./ports/publishers.js";
export type * from "./ports/backups.js";
export type * from "./ports/chain.js";
export type * from "./ports/replica.js";
// Snapshots' port also holds a class (SnapshotBuildAbandonedError): a value export.
export * from "./ports/snapshots.js";

export type { Violation } from "./ports/verify.js";

/**
 * The whole port: one sub-interface per concern, implemented by the adapters' mirrored files
 * (sqlite/<file>.ts beside postgres/<file>.ts), plus the database's own life cycle.
 */
export interface LedgerStore
  extends
    AccountsStore,
    BatchesStore,
    AuthStore,
    ApiKeysStore,
    EventsStore,
    WebhooksStore,
    TransfersStore,
    SnapshotsStore,
    HistoryStore,
    LeaderboardsStore,
    TransparencyLogStore,
    PublishersStore,
    BackupsStore,
    ChainStore,
    ReplicaStore {
  readonly kind: "sqlite" | "postgres";
  /** Brings the schema up to date; safe to run from several processes at once. */
  migrate(): Promise<void>;
  /**
   * Resolves when the database answers and accepts writes (rejects with StoreUnavailableError
   * on a full disk or a read-only database); an adapter may reuse a result for about a second.
   */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Checks every ledger invariant (README, Architecture: Ledger model) over the whole database. */
  verify(): Promise<Violation[]>;
}

/** The LedgerStore operations the flows of src/ledger/ implement, once for both adapters (webhooks: src/ledger/webhooks.ts). */
export type LedgerOperations = Pick<
  LedgerStore,
  | "submitBatch"
  | "cancelBatch"
  | "finalizeDue"
  | "credit"
  | "setOperator"
  | "createApiKey"
  | "revokeApiKey"
  | "applyProjection"
  | "buildWindowBoards"
  | "readBoard"
  | "readStanding"
  | keyof WebhooksStore
  | keyof PublishersStore
  | keyof ChainStore
  | "appendToLog"
  | "logCheckpoint"
  | "logStatus"
  | "openLog"
  | "rotateLogKey"
  | "markNewLogEpoch"
  | "logEpochs"
  | "logInclusionProof"
  | "logConsistencyProof"
>;

/**
 * The flows over one adapter's database, handed to the adapter by whoever composes a store
 * (src/ledger/sqlite.ts, postgres.ts): an adapter never imports the layer above it.
 */
export type LedgerFlows = <Db, ReadDb>(
  database: LedgerDatabase<Db>,
  boards: LeaderboardReads<ReadDb>,
  projection?: ProjectionRunner,
) => LedgerOperations;
