import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import type { LedgerEvent } from "../../domain/events.js";
import type { Snapshot, SnapshotHoldings, SnapshotMeasure } from "../../domain/snapshot.js";

/**
 * The snapshots port: what the snapshot flow (src/snapshots/snapshots.ts) asks of a store. Both
 * adapters' snapshots.ts end in `satisfies SnapshotsStore`, so a missing or different function is
 * a compile error. What goes into a snapshot, the tree, the totals and the checks are decided in
 * the flow and in domain/snapshot.ts; the adapters hold the SQL.
 */

export type { SnapshotHoldings } from "../../domain/snapshot.js";

/** One chunk of leaves (domain/snapshot.ts encodeLeafChunk), LEAVES_PER_CHUNK of them, by address. */
export interface SnapshotLeafChunk {
  firstAddress: AddressKey;
  text: string;
}

/** What makes a built snapshot visible: its row and its event, naming the build whose chunks it reads. */
export interface SnapshotPublication {
  snapshot: Snapshot;
  /** Unique per attempt: keys the chunks, so a lost race or a crash never mixes two builds. */
  buildId: string;
  /** snapshot.created, appended in the transaction that makes the snapshot visible. */
  event: LedgerEvent;
}

export interface NewSnapshot extends SnapshotPublication {
  /** The leaves by address, LEAVES_PER_CHUNK a row. */
  leafChunks: SnapshotLeafChunk[];
  /** The tree's nodes, NODES_PER_CHUNK a row, in tree order. */
  nodeChunks: Buffer[];
}

export type SnapshotCreateResult = { kind: "created" } | { kind: "exists"; snapshot: Snapshot };

/** A write to a build the purge has given up on (no write for SNAPSHOT_BUILD_ABANDONED_AFTER_MS): its chunks are being deleted. */
export class SnapshotBuildAbandonedError extends Error {
  constructor(readonly buildId: string) {
    super(`snapshot build ${buildId} was abandoned (no write for too long) and its chunks purged`);
    this.name = "SnapshotBuildAbandonedError";
  }
}

/**
 * The `snapshots` row as both adapters insert it: its columns, and its values in that order.
 * One list, so the two INSERTs cannot drift apart in what a snapshot row holds.
 */
export const SNAPSHOT_ROW_COLUMNS = "id, build_id, point_type, measure, decimals, taken_at_ms, root, leaf_count, total_units, as_of_ms";

export function snapshotRowValues({ snapshot, buildId }: SnapshotPublication): (string | number | null)[] {
  const { id, pointType, measure, decimals, takenAtMs, root, leafCount, totalUnits, asOfMs } = snapshot;
  // total_units is text on SQLite and numeric on PostgreSQL: its decimal string fits both, exactly.
  return [id, buildId, pointType, measure, decimals, takenAtMs, root, leafCount, totalUnits.toString(), asOfMs];
}

/**
 * The answer to a publication whose id is taken. Snapshots are never deleted, so the row that
 * took the id is readable in the same transaction: one that is not is a broken store, on both.
 */
export function takenBy(existing: Snapshot | null, snapshotId: string): SnapshotCreateResult {
  assertInvariant(existing !== null, `snapshot ${snapshotId} conflicted but cannot be read`);
  return { kind: "exists", snapshot: existing };
}

/**
 * Snapshots and their builds. A build (src/snapshots/snapshots.ts) is registered, writes its
 * chunks a few at a time, then publishes; until it publishes nothing reads its chunks. A build row
 * records its last write: one that stops writing (its process died) or gives up is abandoned,
 * and the purge job deletes its chunks in bounded steps (purgeSnapshotBuilds).
 */
export interface SnapshotsStore {
  /**
   * Every address whose `measure` of the point type is > 0, read in ONE consistent view of the
   * database (no batch half in, half out, however long the read takes), by address, without
   * holding a lock that would stop submissions or finalization. Adapters read pages and hand each
   * to domain/snapshot.ts addHoldingsPage, which decides what goes in. With `asOfMs`, the balances
   * as they stood then (HistoryStore's rules): pages of addresses from accounts, the balances of
   * each page's address range read together (HistoryReadPort.readBalancesAsOf), in the same one view.
   */
  readSnapshotHoldings(pointType: PointType, measure: SnapshotMeasure, asOfMs?: number | null): Promise<SnapshotHoldings>;
  /** Registers a build of `snapshotId`, alive as of nowMs; before any of its chunks is written. */
  beginSnapshotBuild(buildId: string, snapshotId: string, nowMs: number): Promise<void>;
  /**
   * Stores chunks numbered from `firstChunkNo` and records nowMs as the build's last write, in one
   * short transaction. Throws SnapshotBuildAbandonedError for a build that is abandoned or unknown.
   */
  writeSnapshotLeafChunks(buildId: string, firstChunkNo: number, chunks: readonly SnapshotLeafChunk[], nowMs: number): Promise<void>;
  writeSnapshotNodeChunks(buildId: string, firstChunkNo: number, chunks: readonly Buffer[], nowMs: number): Promise<void>;
  /**
   * Stores the snapshot row and its event and forgets the build, in one transaction, unless the
   * id is taken (then: the stored one, through takenBy, and this build is abandoned). Immutable
   * once stored. Throws SnapshotBuildAbandonedError for a build that is abandoned or unknown.
   */
  publishSnapshot(publication: SnapshotPublication): Promise<SnapshotCreateResult>;
  /** Marks a build that will not publish (it failed) abandoned: the next purge deletes its chunks. */
  abandonSnapshotBuild(buildId: string): Promise<void>;
  /**
   * One bounded step of the cleanup, in one short transaction: marks abandoned every build with no
   * write since before `staleBeforeMs`, deletes at most `limit` chunks of abandoned builds, and
   * forgets abandoned builds left with none. Returns how many chunks it deleted (< limit: none
   * is left). Never touches a published snapshot's chunks.
   */
  purgeSnapshotBuilds(staleBeforeMs: number, limit: number): Promise<number>;
  getSnapshot(snapshotId: string): Promise<Snapshot | null>;
  /** The text of the leaf chunk that holds `address` if the snapshot has it; null: no such chunk. */
  findSnapshotLeafChunk(snapshotId: string, address: AddressKey): Promise<string | null>;
  /** The node chunks numbered `chunkNumbers`. */
  getSnapshotNodeChunks(snapshotId: string, chunkNumbers: readonly number[]): Promise<Map<number, Buffer>>;
  /** Chunks from number `from` on, at most `limit`, in order (the streamed dump). */
  listSnapshotLeafChunks(snapshotId: string, from: number, limit: number): Promise<string[]>;
  listSnapshotNodeChunks(snapshotId: string, from: number, limit: number): Promise<Buffer[]>;
}
