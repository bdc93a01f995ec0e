import type { CommittedEventsListener, LedgerFlows, LedgerStore, ReplicaStore } from "../store.js";
import { accounts } from "./accounts.js";
import { apiKeys } from "./api-keys.js";
import { auth } from "./auth.js";
import { backupOperations } from "./backups.js";
import { batches } from "./batches.js";
import { credits } from "./credits.js";
import { listEvents, purgeEvents, takeAppendedEvents } from "./events.js";
import { CommittedEvents } from "../committed-events.js";
import { cachedWriteProbe, guardOperations, migrate, openDatabase, ReadOnlyRecovery, type SqliteDb, type SqliteOptions } from "./db.js";
import { historyOperations } from "./history.js";
import { noteThrough, projectionState, sqliteLeaderboardReads } from "./leaderboards.js";
import type { LeaderboardReadPort, ProjectionRunner } from "../ports/leaderboards.js";
import { attachProjection, openProjectionConnection, readProjectionFirst } from "./projection-file.js";
import { sqliteLedger } from "./ledger.js";
import { pointTypes } from "./point-types.js";
import { snapshotOperations } from "./snapshots.js";
import { transfers } from "./transfers.js";
import { verify } from "./verify.js";

/** Where the projection's writes run (src/ledger/sqlite-projection.ts), given by the composer. */
export interface SqliteProjection {
  /** The main thread's projection connection (reads; the passes too when they run inline). */
  connection: ProjectionConnection;
  runner: ProjectionRunner;
  /** True when a worker thread runs it (LeaderboardsStore.projectionAside). */
  aside: boolean;
  /** The window request's primitives, where another thread writes the projection file. */
  requests?: Pick<LeaderboardReadPort<SqliteDb, "sync">, "requestWindowBoard" | "capWindowBoards">;
  /** Resolves once the requests sent so far are taken (a read awaits its own before it answers). */
  requestsSent?: () => Promise<void>;
  close(): Promise<void>;
}

export type SqliteProjectionOf = (options: SqliteOptions, connection: ProjectionConnection) => SqliteProjection;

/** The projection's connection (projection-file.ts), opened at its first use; in memory, the writer itself with the projection attached. */
export interface ProjectionConnection {
  (): SqliteDb;
  close(): void;
}

function projectionOpener(options: SqliteOptions, writer: () => SqliteDb): ProjectionConnection {
  let projectionDb: SqliteDb | null = null;
  const connection = (): SqliteDb => {
    if (projectionDb?.open) return projectionDb;
    if (options.path === ":memory:") {
      attachProjection(writer(), options.path, { prepare: true });
      projectionDb = writer();
    } else {
      projectionDb = openProjectionConnection(options);
    }
    return projectionDb;
  };
  return Object.assign(connection, {
    close: () => {
      if (projectionDb?.open && projectionDb !== writer()) projectionDb.close();
    },
  });
}

/** The projection's runner, the projection file's connection opened first and the writer's view of through moved after each pass. */
function afterEachPass(projection: SqliteProjection, writer: () => SqliteDb): ProjectionRunner {
  return {
    pass: async (cut) => {
      projection.connection();
      const step = await projection.runner.pass(cut);
      const db = writer();
      if (step.throughMs !== null) db.transaction(() => noteThrough(db, step.throughMs!)).immediate();
      return step;
    },
    buildWindowBoards: async (limit) => {
      projection.connection();
      return projection.runner.buildWindowBoards(limit);
    },
  };
}

/** The leaderboard reads, answering once the window boards they asked for are taken (SqliteProjection.requestsSent). */
function afterRequests(ledger: Pick<LedgerStore, "readBoard" | "readStanding">, projection: SqliteProjection) {
  const sent = projection.requestsSent;
  if (sent === undefined) return {};
  return {
    readBoard: async (...args) => {
      const page = await ledger.readBoard(...args);
      await sent();
      return page;
    },
    readStanding: async (...args) => {
      const standing = await ledger.readStanding(...args);
      await sent();
      return standing;
    },
  } satisfies Partial<LedgerStore>;
}

/** The ledger's migrations, then its projection file made ready (projection-file.ts attachProjection). */
function migrateWithProjection(db: SqliteDb, projectionConnection: ProjectionConnection): void {
  migrate(db);
  try {
    projectionConnection();
  } catch {
    // A ledger this process cannot write (it still serves reads): the reads that need the
    // projection file answer 503 until it can be opened (db.ts toStoreError).
  }
}

/** verify over the ledger and its projection file, in one read transaction that reads the projection file first. */
function verifyWithProjection(reader: SqliteDb) {
  return reader.transaction(() => {
    readProjectionFirst(reader);
    return verify.verifyLedger(reader);
  })();
}

/**
 * The embedded SQLite adapter. better-sqlite3 is synchronous, so each operation below runs to
 * completion inside one transaction without interleaving; one process is the only writer.
 * Every operation's SQLite errors leave translated (db.ts toStoreError): a full disk, a read-only
 * file or a held lock is StoreUnavailableError, which the HTTP layer answers 503 + Retry-After.
 * `flows` are the ledger's operations (src/ledger/), given by the composer (src/ledger/sqlite.ts).
 * Two connections: the ledger's writer (`db`), and the projection's (projectionOpener: the ledger
 * with the projection file attached, projection-file.ts), opened at its first use, after the
 * migrations, for the reads that join the two (boards, asOf, verify, the projection's state).
 * The projection's writes run where `projectionOf` says; after each pass the writer's view of its
 * through catches up (noteThrough), which the next cut starts from.
 */
/** SQLite has no replicas (config.ts refuses DATABASE_READ_URL with it): the reads a replica may serve are its own. */
function withoutReplica(own: Omit<LedgerStore, keyof ReplicaStore>): LedgerStore {
  return { ...own, replicaReads: own, checkReplica: async () => null };
}

export function sqliteStore(options: SqliteOptions, flows: LedgerFlows, projectionOf: SqliteProjectionOf): LedgerStore {
  let db = openDatabase(options);
  const opener = projectionOpener(options, () => db);
  const projection = projectionOf(options, opener);
  const projectionConnection = projection.connection;
  const probeWrites = cachedWriteProbe(options.path);
  const recovery = new ReadOnlyRecovery(options);
  const committed = new CommittedEvents();
  // The flows (src/ledger/) run synchronously over it: each one whole inside one transaction.
  const ledger = flows(
    sqliteLedger(() => db),
    sqliteLeaderboardReads(projectionConnection, projection.requests),
    afterEachPass(projection, () => db),
  );
  const store: Omit<LedgerStore, keyof ReplicaStore> = {
    kind: "sqlite",
    projectionAside: projection.aside,
    ...ledger,
    ...afterRequests(ledger, projection),
    migrate: async () => migrateWithProjection(db, projectionConnection),
    ping: async () => probeWrites(db),
    close: async () => {
      await projection.close();
      if (db.open) db.close();
    },
    getOperator: async (contract) => auth.readOperator(db, contract),
    listOperators: async (query) => auth.listOperators(db, query),
    getBalances: async (address, pointTypes) => accounts.readBalances(db, address, pointTypes),
    getAssetEarnings: async (address) => credits.readAssetEarnings(db, address),
    pointTypesInUse: async () => pointTypes.pointTypesInUse(db),
    getBatch: async (contract, batchId) => batches.readBatch(db, contract, batchId),
    listBatches: async (contract, query) => batches.listBatches(db, contract, query),
    nextFinalizeAtMs: async () => batches.nextFinalizeAtMs(db),
    countFailingBatches: async () => batches.countFailingBatches(db),
    countOverdueBatches: async (dueBeforeMs, limit) => batches.countOverdueBatches(db, dueBeforeMs, limit),
    serverKey: async (name, candidate) => auth.readOrStoreServerKey(db, name, candidate),
    useChallengeNonce: async (nonce, expiresAtMs) => auth.insertUsedNonce(db, nonce, expiresAtMs),
    createToken: async (token) => auth.insertToken(db, token),
    findToken: async (tokenHash, nowMs) => auth.lookupToken(db, tokenHash, nowMs),
    purgeExpired: async (nowMs) => auth.deleteExpired(db, nowMs),
    listApiKeys: async (contract) => apiKeys.listApiKeys(db, contract),
    getApiKey: async (contract, id) => apiKeys.readApiKey(db, contract, id),
    findApiKey: async (secretHash) => apiKeys.lookupApiKey(db, secretHash),
    recordApiKeyUses: async (uses) => db.transaction(() => apiKeys.writeLastUses(db, uses)).immediate(),
    verify: async () => verifyWithProjection(projectionConnection()),
    // Replaced below: a subscription is synchronous, not a guarded database operation.
    onCommittedEvents: () => () => undefined,
    listEvents: async (query) => db.transaction(() => listEvents(db, query))(),
    purgeEvents: async (beforeMs, limit) => db.transaction(() => purgeEvents(db, beforeMs, limit)).immediate(),
    listTransfers: async (contract, query) => transfers.listTransfers(db, contract, query),
    listAccountBalances: async (query) => transfers.listAccountBalances(db, query),
    // In memory, the one connection is the writer with the projection attached (its asOf pages read both).
    ...snapshotOperations(options.path, () => (options.path === ":memory:" ? projectionConnection() : db)),
    ...historyOperations(projectionConnection),
    projectionState: async () => projectionState(projectionConnection()),
    ...backupOperations(() => db),
  };
  const guarded = guardOperations(
    store,
    (error) => {
      const fresh = db.open ? recovery.replacement(error) : null;
      if (fresh) {
        db.close();
        db = fresh;
      }
    },
    (succeeded) => {
      const events = takeAppendedEvents(db);
      if (succeeded) committed.emit(events);
    },
  );
  return withoutReplica({ ...guarded, onCommittedEvents: (listener: CommittedEventsListener) => committed.subscribe(listener) });
}
