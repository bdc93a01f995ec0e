import type { AddressKey } from "../../domain/address.js";
import type { NoteSigner } from "../../domain/signed-note.js";
import type { Tile, TileKey } from "../../domain/tlog.js";
import type { StoredEvent } from "./events.js";
import type { Io, Out } from "./io.js";

/**
 * The transparency log's port (API.md, Transparency log; src/ledger/transparency-log.ts): the
 * tree kept as tiles (domain/tlog.ts), how far the log has read the event log, and the latest
 * signed checkpoint. The log is a projection of the events: written after their commit, its
 * position stored in the same transaction as its tiles.
 */

/** The latest signed checkpoint, as served. */
export interface StoredCheckpoint {
  size: number;
  root: Uint8Array;
  /** The C2SP signed note (`tlog-checkpoint` text plus its signature line). */
  note: string;
  signedAtMs: number;
}

export interface LogState {
  /** Leaves in the tree. */
  size: number;
  /** The event log position (ports/events.ts) of the last event read into the log: the next pass reads after it. */
  position: string;
  checkpoint: StoredCheckpoint | null;
  /** The epoch its checkpoints are signed in (domain/log-epoch.ts): 0 until a restore or a key rotation. */
  epoch: number;
}

/** Who signs the log (null before its first start) and whether its next start begins a new epoch. */
export interface LogIdentity {
  origin: string | null;
  verifierKey: string | null;
  epoch: number;
  newEpochDue: boolean;
}

/** An epoch's announcement as served (GET /v1/log/epochs). */
export interface StoredEpoch {
  epoch: number;
  origin: string;
  /** The signed note (domain/log-epoch.ts), signed by the key of the epoch before. */
  note: string;
  startedAtMs: number;
}

/** The log's progress (GET /v1/log/status, /metrics points_log_lag_seconds, `verify`). */
export interface LogStatus {
  size: number;
  checkpoint: StoredCheckpoint | null;
  /** null: every committed event is logged. */
  oldestUnloggedAtMs: number | null;
}

/** An event's place in the log, for its proof. */
export interface LoggedEvent {
  stream: AddressKey | null;
  /** null: not logged yet. */
  logIndex: number | null;
}

/** The table primitives each adapter's tlog.ts gives (`satisfies` this). */
export interface TransparencyLogPort<Db, out M extends Io = Io> {
  /** One logger at a time (PostgreSQL: a transaction advisory lock, tried); false: another instance is logging. */
  claimLogger(db: Db): Out<M, boolean>;
  logState(db: Db): Out<M, LogState>;
  /** Up to `limit` events after `position` in the event log's one order, of finished transactions only (PostgreSQL: older than every one running). */
  eventsToLog(db: Db, position: string, limit: number): Out<M, StoredEvent[]>;
  /** The stored tiles among `keys` (a tile not stored yet is left out). */
  readTiles(db: Db, keys: readonly TileKey[]): Out<M, Tile[]>;
  /** Writes each tile whole, over the stored one. */
  writeTiles(db: Db, tiles: readonly Tile[]): Out<M, void>;
  setLogIndexes(db: Db, entries: readonly { eventId: string; logIndex: number }[]): Out<M, void>;
  advanceLog(db: Db, size: number, position: string): Out<M, void>;
  storeCheckpoint(db: Db, checkpoint: StoredCheckpoint): Out<M, void>;
  /** null: no such event (or purged). */
  loggedEvent(db: Db, eventId: string): Out<M, LoggedEvent | null>;
  logIdentity(db: Db): Out<M, LogIdentity>;
  setLogIdentity(db: Db, origin: string, verifierKey: string): Out<M, void>;
  /** Records `epoch` as begun (its announcement) and makes it the log's; clears a due new epoch. */
  beginEpoch(db: Db, epoch: StoredEpoch): Out<M, void>;
  /** The next start begins a new epoch (a restored copy). */
  markNewEpochDue(db: Db): Out<M, void>;
  logEpochs(db: Db): Out<M, StoredEpoch[]>;
  /** When the first event after the log's position occurred (the one the log waits on; webhook tests aside), or null when it has read all. */
  oldestUnloggedAtMs(db: Db): Out<M, number | null>;
}

/** How the log signs its checkpoints (config: LOG_ORIGIN, LOG_SIGNING_KEY, LOG_CHECKPOINT_SECONDS). */
export interface LogSigning {
  origin: string;
  signer: NoteSigner;
  checkpointIntervalMs: number;
}

export type OpenLogAnswer = { kind: "ok"; epoch: number; begun: boolean } | { kind: "mismatch"; origin: string; verifierKey: string };

export interface LogStep {
  /** Events added to the tree. */
  logged: number;
  /** A full step: more events may be waiting. */
  more: boolean;
  /** The latest checkpoint after the step. */
  checkpoint: StoredCheckpoint | null;
  /** The tree has grown past the checkpoint: one is due at checkpoint.signedAtMs + the interval. */
  unsigned: boolean;
}

export type InclusionAnswer =
  | { kind: "proof"; logIndex: number; treeSize: number; leafHash: Uint8Array; proof: Uint8Array[] }
  /** No such event for this reader (another contract's, purged, or none). */
  | { kind: "not_found" }
  /** Not logged yet, or not in a checkpoint of the size asked (409 NOT_YET_LOGGED). */
  | { kind: "not_yet_logged" }
  /** treeSize past the latest checkpoint (400). */
  | { kind: "too_large"; checkpointSize: number };

export type ConsistencyAnswer = { kind: "proof"; proof: Uint8Array[] } | { kind: "too_large"; checkpointSize: number };

/** What the worker and the routes ask of the log. */
export interface TransparencyLogStore {
  /** One step of the logging job: up to `limit` events into the tree, and a checkpoint signed when one is due. */
  appendToLog(limit: number, nowMs: number, signing: LogSigning): Promise<LogStep>;
  logCheckpoint(): Promise<StoredCheckpoint | null>;
  /**
   * At start-up, with the configured signing: records who signs a log that has no identity yet,
   * begins the epoch a restored copy is due (announced with the same key), or says the configured
   * key or origin is not the log's ("mismatch": start-up refuses it).
   */
  openLog(signing: LogSigning, nowMs: number): Promise<OpenLogAnswer>;
  /** `log rotate-key`: a new epoch signed by `signing`, announced by `previous` (the log's key); "mismatch" when `previous` is not the log's key. */
  rotateLogKey(previous: NoteSigner, signing: LogSigning, nowMs: number): Promise<OpenLogAnswer>;
  /** `log new-epoch`: the next start begins a new epoch (after a pg_restore). */
  markNewLogEpoch(): Promise<void>;
  logEpochs(): Promise<StoredEpoch[]>;
  /** How far the log has got: its size, the latest checkpoint, and when the oldest event it has not logged occurred. */
  logStatus(): Promise<LogStatus>;
  /**
   * The inclusion proof of an event in the tree of `treeSize` leaves (null: the latest
   * checkpoint's); `stream`: the contract whose events the reader may read (null: the admin, any).
   */
  logInclusionProof(eventId: string, stream: AddressKey | null, treeSize: number | null): Promise<InclusionAnswer>;
  logConsistencyProof(from: number, to: number): Promise<ConsistencyAnswer>;
}
