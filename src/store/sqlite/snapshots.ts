import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import {
  addHoldingsPage,
  addHoldingsPageAsOf,
  measuredUnits,
  type Snapshot,
  type SnapshotHoldings,
  type SnapshotMeasure,
} from "../../domain/snapshot.js";
import { SNAPSHOT_ROW_COLUMNS, SnapshotBuildAbandonedError, snapshotRowValues, takenBy } from "../ports/snapshots.js";
import type { SnapshotCreateResult, SnapshotPublication, SnapshotsStore } from "../ports/snapshots.js";
import { toBalance, type AccountRow } from "./accounts.js";
import { statement, toNullableNumber, toNumber, type SqliteDb } from "./db.js";
import { appendEvents } from "./events.js";
import { openReadOnlyWithProjection, readProjectionFirst } from "./projection-file.js";
import { history } from "./history.js";

/** Account rows read between two yields to the event loop (≈ 10-20 ms of work). */
const HOLDINGS_PER_PAGE = 10_000;
/** How long the snapshot's own read connection waits for a lock (it only reads: WAL never blocks it for long). */
const READER_BUSY_TIMEOUT_MS = 5000;

/**
 * One consistent read of every positive balance of the point type. WAL gives a read transaction
 * one snapshot of the database however long it lasts, so the read runs on a connection of its
 * own, a page at a time with yields between pages: the process's connection goes on accepting
 * and finalizing batches meanwhile, and none of them shows half (each is one transaction).
 * An in-memory database has no second connection: there the read is one synchronous transaction.
 * With asOfMs, each page is measured as of then (readPageAsOf).
 */
export async function readSnapshotHoldings(
  path: string,
  db: SqliteDb,
  pointType: PointType,
  measure: SnapshotMeasure,
  asOfMs: number | null,
): Promise<SnapshotHoldings> {
  const holdings: SnapshotHoldings = { addresses: [], units: [] };
  const page = (reader: SqliteDb, after: string) =>
    asOfMs === null
      ? readPage(reader, pointType, measure, after, holdings)
      : readPageAsOf(reader, pointType, measure, asOfMs, after, holdings);
  if (path === ":memory:") {
    db.transaction(() => {
      for (let after: string | null = ""; after !== null;) after = page(db, after);
    })();
    return holdings;
  }
  const reader = openReadOnlyWithProjection(path);
  try {
    reader.pragma(`busy_timeout = ${READER_BUSY_TIMEOUT_MS}`);
    reader.exec("BEGIN");
    readProjectionFirst(reader);
    for (let after: string | null = ""; after !== null;) {
      after = page(reader, after);
      await yieldToEventLoop();
    }
    reader.exec("COMMIT");
    return holdings;
  } finally {
    reader.close();
  }
}

/** Reads one page of rows after `after` into `holdings` (addHoldingsPage decides what goes in); null after the last page. */
function readPage(db: SqliteDb, pointType: PointType, measure: SnapshotMeasure, after: string, holdings: SnapshotHoldings): string | null {
  const rows = statement(db, "SELECT * FROM accounts WHERE address > ? AND point_type = ? ORDER BY address LIMIT ?").all(
    after,
    pointType,
    HOLDINGS_PER_PAGE,
  ) as (AccountRow & { address: string })[];
  return addHoldingsPage(holdings, after, rows, HOLDINGS_PER_PAGE, (row) => measuredUnits(toBalance(row), measure));
}

/** One page as of asOfMs (domain/snapshot.ts addHoldingsPageAsOf): its addresses, then their range's balances as of then, read together. */
function readPageAsOf(
  db: SqliteDb,
  pointType: PointType,
  measure: SnapshotMeasure,
  asOfMs: number,
  after: string,
  holdings: SnapshotHoldings,
): string | null {
  const rows = statement(db, "SELECT address FROM accounts WHERE address > ? AND point_type = ? ORDER BY address LIMIT ?").all(
    after,
    pointType,
    HOLDINGS_PER_PAGE,
  ) as { address: string }[];
  if (rows.length === 0) return null;
  const found = history.readBalancesAsOf(db, pointType, after, rows[rows.length - 1]!.address, asOfMs);
  return addHoldingsPageAsOf(holdings, after, rows, found, HOLDINGS_PER_PAGE, measure);
}

/**
 * Builds (docs/payouts.md, snapshot_builds in migrations/index.ts): the builder
 * (src/snapshots/snapshots.ts) registers one, writes its chunks a few per transaction, then
 * publishes. Until the publishing transaction commits the chunks belong to no snapshot and nothing
 * reads them; every write records the build's last sign of life, so the purge can tell a build in
 * progress (in this process or another one, e.g. the CLI beside a server) from one whose process
 * died. Each function runs as one IMMEDIATE transaction (snapshotOperations): SQLite has one
 * writer, so a build's write and a purge step never interleave.
 */
export function beginSnapshotBuild(db: SqliteDb, buildId: string, snapshotId: string, nowMs: number): void {
  statement(db, "INSERT INTO snapshot_builds (build_id, snapshot_id, last_write_at_ms) VALUES (?, ?, ?)").run(buildId, snapshotId, nowMs);
}

/** Each chunk table's insert: the build, the chunk's number, then the chunk's own columns. */
const CHUNK_INSERT: Record<ChunkTable, string> = {
  snapshot_leaf_chunks: "INSERT INTO snapshot_leaf_chunks (build_id, chunk_no, first_address, data) VALUES (?, ?, ?, ?)",
  snapshot_node_chunks: "INSERT INTO snapshot_node_chunks (build_id, chunk_no, data) VALUES (?, ?, ?)",
};

/** Chunks numbered from `firstChunkNo` on, each row a chunk's own columns, written for a live build. */
function writeChunks(
  db: SqliteDb,
  table: ChunkTable,
  buildId: string,
  firstChunkNo: number,
  rows: readonly unknown[][],
  nowMs: number,
): void {
  touchBuild(db, buildId, nowMs);
  const insert = statement(db, CHUNK_INSERT[table]);
  rows.forEach((row, i) => insert.run(buildId, firstChunkNo + i, ...row));
}

/** Records a write of a live build; a build the purge gave up on (or forgot) may write no more. */
function touchBuild(db: SqliteDb, buildId: string, nowMs: number): void {
  const { changes } = statement(db, "UPDATE snapshot_builds SET last_write_at_ms = ? WHERE build_id = ? AND abandoned = 0").run(
    nowMs,
    buildId,
  );
  if (changes === 0) throw new SnapshotBuildAbandonedError(buildId);
}

/** The snapshot row and its event, and the build forgotten; a build that lost the race for its id is abandoned instead. */
export function publishSnapshot(db: SqliteDb, publication: SnapshotPublication): SnapshotCreateResult {
  const { snapshot, buildId, event } = publication;
  const live = statement(db, "SELECT 1 FROM snapshot_builds WHERE build_id = ? AND abandoned = 0").get(buildId);
  if (live === undefined) throw new SnapshotBuildAbandonedError(buildId);
  const { changes } = statement(
    db,
    `INSERT INTO snapshots (${SNAPSHOT_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  ).run(...snapshotRowValues(publication));
  if (changes === 0) {
    abandonSnapshotBuild(db, buildId);
    return takenBy(getSnapshot(db, snapshot.id), snapshot.id);
  }
  statement(db, "DELETE FROM snapshot_builds WHERE build_id = ?").run(buildId);
  appendEvents(db, [event]);
  return { kind: "created" };
}

export function abandonSnapshotBuild(db: SqliteDb, buildId: string): void {
  statement(db, "UPDATE snapshot_builds SET abandoned = 1 WHERE build_id = ?").run(buildId);
}

/**
 * One step of the cleanup (store.ts purgeSnapshotBuilds): gives up on builds silent since before
 * staleBeforeMs (never one a snapshot row names: a build registered by the migration may have
 * been published by an older version), deletes up to `limit` of their chunks, leaves first, and
 * forgets the builds left with none.
 */
export function purgeSnapshotBuilds(db: SqliteDb, staleBeforeMs: number, limit: number): number {
  statement(
    db,
    `UPDATE snapshot_builds SET abandoned = 1
     WHERE abandoned = 0 AND last_write_at_ms < ? AND build_id NOT IN (SELECT build_id FROM snapshots)`,
  ).run(staleBeforeMs);
  const leaves = deleteAbandonedChunks(db, "snapshot_leaf_chunks", limit);
  const nodes = deleteAbandonedChunks(db, "snapshot_node_chunks", limit - leaves);
  statement(
    db,
    `DELETE FROM snapshot_builds WHERE build_id IN (SELECT build_id FROM snapshots) OR (abandoned = 1
       AND NOT EXISTS (SELECT 1 FROM snapshot_leaf_chunks c WHERE c.build_id = snapshot_builds.build_id)
       AND NOT EXISTS (SELECT 1 FROM snapshot_node_chunks c WHERE c.build_id = snapshot_builds.build_id))`,
  ).run();
  return leaves + nodes;
}

type ChunkTable = "snapshot_leaf_chunks" | "snapshot_node_chunks";

function deleteAbandonedChunks(db: SqliteDb, table: ChunkTable, limit: number): number {
  return statement(
    db,
    `DELETE FROM ${table} WHERE (build_id, chunk_no) IN (
       SELECT c.build_id, c.chunk_no FROM snapshot_builds b JOIN ${table} c ON c.build_id = b.build_id WHERE b.abandoned = 1 LIMIT ?)`,
  ).run(limit).changes;
}

interface SnapshotRow {
  id: string;
  point_type: string;
  measure: string;
  decimals: bigint;
  taken_at_ms: bigint;
  root: string;
  leaf_count: bigint;
  total_units: string;
  as_of_ms: bigint | null;
}

export function getSnapshot(db: SqliteDb, snapshotId: string): Snapshot | null {
  const row = statement(db, "SELECT * FROM snapshots WHERE id = ?").get(snapshotId) as SnapshotRow | undefined;
  if (!row) return null;
  return {
    id: row.id,
    pointType: row.point_type,
    measure: row.measure as SnapshotMeasure,
    decimals: toNumber(row.decimals),
    takenAtMs: toNumber(row.taken_at_ms),
    root: row.root,
    leafCount: toNumber(row.leaf_count),
    totalUnits: BigInt(row.total_units),
    asOfMs: toNullableNumber(row.as_of_ms),
  };
}

/** The last chunk whose first address is ≤ `address`: the only one that can hold it. */
export function findSnapshotLeafChunk(db: SqliteDb, snapshotId: string, address: AddressKey): string | null {
  const row = statement(
    db,
    `SELECT c.data FROM snapshots s JOIN snapshot_leaf_chunks c ON c.build_id = s.build_id
     WHERE s.id = ? AND c.first_address <= ? ORDER BY c.first_address DESC LIMIT 1`,
  ).get(snapshotId, address) as { data: string } | undefined;
  return row?.data ?? null;
}

export function getSnapshotNodeChunks(db: SqliteDb, snapshotId: string, chunkNumbers: readonly number[]): Map<number, Buffer> {
  const rows = statement(
    db,
    `SELECT c.chunk_no, c.data FROM snapshots s JOIN snapshot_node_chunks c ON c.build_id = s.build_id
     WHERE s.id = ? AND c.chunk_no IN (SELECT value FROM json_each(?))`,
  ).all(snapshotId, JSON.stringify(chunkNumbers)) as { chunk_no: bigint; data: Buffer }[];
  return new Map(rows.map((row) => [toNumber(row.chunk_no), row.data]));
}

/** Chunks of a published snapshot from number `from` on, in order: the leaves' text or the nodes' bytes. */
function listChunks<Data>(db: SqliteDb, table: ChunkTable, snapshotId: string, from: number, limit: number): Data[] {
  const rows = statement(
    db,
    `SELECT c.data FROM snapshots s JOIN ${table} c ON c.build_id = s.build_id
     WHERE s.id = ? AND c.chunk_no >= ? ORDER BY c.chunk_no LIMIT ?`,
  ).all(snapshotId, from, limit) as { data: Data }[];
  return rows.map((row) => row.data);
}

/** The port's snapshot operations over the connection `current()` returns (index.ts may reopen it); writes are IMMEDIATE transactions. */
export function snapshotOperations(path: string, current: () => SqliteDb) {
  const write = <T>(work: (db: SqliteDb) => T): Promise<T> => {
    const db = current();
    return Promise.resolve(db.transaction(() => work(db)).immediate());
  };
  const read = async <T>(work: (db: SqliteDb) => T): Promise<T> => work(current());
  return {
    readSnapshotHoldings: (pointType, measure, asOfMs) => readSnapshotHoldings(path, current(), pointType, measure, asOfMs ?? null),
    beginSnapshotBuild: (buildId, snapshotId, nowMs) => write((db) => beginSnapshotBuild(db, buildId, snapshotId, nowMs)),
    writeSnapshotLeafChunks: (buildId, firstChunkNo, chunks, nowMs) =>
      write((db) =>
        writeChunks(
          db,
          "snapshot_leaf_chunks",
          buildId,
          firstChunkNo,
          chunks.map((c) => [c.firstAddress, c.text]),
          nowMs,
        ),
      ),
    writeSnapshotNodeChunks: (buildId, firstChunkNo, chunks, nowMs) =>
      write((db) =>
        writeChunks(
          db,
          "snapshot_node_chunks",
          buildId,
          firstChunkNo,
          chunks.map((chunk) => [chunk]),
          nowMs,
        ),
      ),
    publishSnapshot: (publication) => write((db) => publishSnapshot(db, publication)),
    abandonSnapshotBuild: (buildId) => write((db) => abandonSnapshotBuild(db, buildId)),
    purgeSnapshotBuilds: (staleBeforeMs, limit) => write((db) => purgeSnapshotBuilds(db, staleBeforeMs, limit)),
    getSnapshot: (snapshotId) => read((db) => getSnapshot(db, snapshotId)),
    findSnapshotLeafChunk: (snapshotId, address) => read((db) => findSnapshotLeafChunk(db, snapshotId, address)),
    getSnapshotNodeChunks: (snapshotId, chunkNumbers) => read((db) => getSnapshotNodeChunks(db, snapshotId, chunkNumbers)),
    listSnapshotLeafChunks: (snapshotId, from, limit) =>
      read((db) => listChunks<string>(db, "snapshot_leaf_chunks", snapshotId, from, limit)),
    listSnapshotNodeChunks: (snapshotId, from, limit) =>
      read((db) => listChunks<Buffer>(db, "snapshot_node_chunks", snapshotId, from, limit)),
  } satisfies SnapshotsStore;
}
