import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { addHoldingsPage, addHoldingsPageAsOf, type Snapshot, type SnapshotHoldings, type SnapshotMeasure } from "../../domain/snapshot.js";
import { SNAPSHOT_ROW_COLUMNS, SnapshotBuildAbandonedError, snapshotRowValues, takenBy } from "../ports/snapshots.js";
import type { SnapshotCreateResult, SnapshotLeafChunk, SnapshotPublication, SnapshotsStore } from "../ports/snapshots.js";
import { AVAILABLE_SQL } from "./accounts.js";
import { toNullableNumber, toNumber, toUnits, transaction, type PgClient, type PgPool, type Queryable } from "./db.js";
import { appendEvents } from "./events.js";
import { history } from "./history.js";

/** Account rows per query of the consistent read (each well under the statement timeout). */
const HOLDINGS_PER_PAGE = 20_000;

/** domain/snapshot.ts measuredUnits in SQL, so a page carries one amount a row rather than four. */
const MEASURE_SQL: Record<SnapshotMeasure, string> = { available: AVAILABLE_SQL, receivedCumulative: "a.received_units" };

/**
 * One consistent read of every positive balance of the point type: one REPEATABLE READ, READ ONLY
 * transaction, so every page sees the same snapshot of the database. A batch finalizes in one
 * transaction (accounts.ts settleBatch), so it is in the read wholly or not at all, however many
 * finalize while the pages are read. It takes no row lock: submissions and finalization go on.
 * With asOfMs, each page is measured as of then (readPageAsOf).
 *
 * Two halves of the address space are read at once, the upper one on a second connection whose
 * transaction imports the first one's snapshot (pg_export_snapshot(), as pg_dump --jobs does):
 * the same consistent read on two backends. Addresses are hashes, so the halves are about equal.
 * Without a second connection to be had at once (a pool of one, or every connection in use) the
 * upper half is read after the lower one, on the same transaction.
 */
export async function readSnapshotHoldings(
  pool: PgPool,
  pointType: PointType,
  measure: SnapshotMeasure,
  asOfMs: number | null,
): Promise<SnapshotHoldings> {
  const readRange = async (db: Queryable, range: AddressRange): Promise<SnapshotHoldings> => {
    const holdings: SnapshotHoldings = { addresses: [], units: [] };
    for (let after: string | null = range.after; after !== null;) {
      const page: AddressRange = { after, before: range.before };
      after =
        asOfMs === null
          ? await readPage(db, pointType, measure, page, holdings)
          : await readPageAsOf(db, pointType, measure, asOfMs, page, holdings);
    }
    return holdings;
  };
  return transaction(
    pool,
    async (client) => {
      // A pool of one has neither: this transaction holds its only connection.
      const parallel = pool.idleCount > 0 || pool.totalCount < pool.options.max;
      // The transaction's first statement: it takes the snapshot that both halves read.
      const snapshot = parallel ? (await client.query<{ id: string }>("SELECT pg_export_snapshot() AS id")).rows[0]!.id : null;
      // Both settle before the transaction ends, whichever fails: no read goes on behind an answer.
      const [lower, upper] = await Promise.allSettled([
        readRange(client, LOWER_HALF),
        snapshot === null
          ? null
          : transaction(pool, (other) => readRange(other, UPPER_HALF), { isolation: "REPEATABLE READ", readOnly: true, snapshot }),
      ]);
      if (lower.status === "rejected") throw lower.reason;
      if (upper.status === "rejected") throw upper.reason;
      const rest = upper.value ?? (await readRange(client, UPPER_HALF));
      return { addresses: [...lower.value.addresses, ...rest.addresses], units: [...lower.value.units, ...rest.units] };
    },
    { isolation: "REPEATABLE READ", readOnly: true },
  );
}

/** Addresses in (after, before). Every address is `0x` and 40 hex digits: none equals SPLIT, all are below "0y". */
interface AddressRange {
  after: string;
  before: string;
}

const SPLIT = "0x8";
const LOWER_HALF: AddressRange = { after: "", before: SPLIT };
const UPPER_HALF: AddressRange = { after: SPLIT, before: "0y" };

/** Reads one page of rows in the range after `after` into `holdings` (addHoldingsPage decides what goes in); null after the last page. */
async function readPage(
  db: Queryable,
  pointType: PointType,
  measure: SnapshotMeasure,
  page: AddressRange,
  holdings: SnapshotHoldings,
): Promise<string | null> {
  const { rows } = await db.query<{ address: string; amount: string }>({
    name: `pl-snapshot-holdings-${measure}`,
    text: `SELECT a.address, ${MEASURE_SQL[measure]} AS amount FROM accounts a
           WHERE a.address > $1 AND a.address < $4 AND a.point_type = $2 ORDER BY a.address LIMIT $3`,
    values: [page.after, pointType, HOLDINGS_PER_PAGE, page.before],
  });
  return addHoldingsPage(holdings, page.after, rows, HOLDINGS_PER_PAGE, (row) => toUnits(row.amount));
}

/** One page as of asOfMs (domain/snapshot.ts addHoldingsPageAsOf): its addresses, then their range's balances as of then, in one statement. */
async function readPageAsOf(
  db: Queryable,
  pointType: PointType,
  measure: SnapshotMeasure,
  asOfMs: number,
  page: AddressRange,
  holdings: SnapshotHoldings,
): Promise<string | null> {
  const { rows } = await db.query<{ address: string }>({
    name: "pl-snapshot-addresses",
    text: "SELECT address FROM accounts WHERE address > $1 AND address < $4 AND point_type = $2 ORDER BY address LIMIT $3",
    values: [page.after, pointType, HOLDINGS_PER_PAGE, page.before],
  });
  if (rows.length === 0) return null;
  const found = await history.readBalancesAsOf(db, pointType, page.after, rows[rows.length - 1]!.address, asOfMs);
  return addHoldingsPageAsOf(holdings, page.after, rows, found, HOLDINGS_PER_PAGE, measure);
}

/**
 * Builds (docs/payouts.md, snapshot_builds in migrations/index.ts): the builder
 * (src/snapshots/snapshots.ts) registers one, writes its chunks a few per transaction, then
 * publishes. Until the publishing transaction commits the chunks belong to no snapshot and nothing
 * reads them; every write records the build's last sign of life, so the purge can tell a build in
 * progress (in this process or another one) from one whose process died. A chunk write (one
 * statement), the publication and the purge's marking all lock the build's row: a build is either
 * given up before its next write (which then fails) or alive again after it (and not given up).
 */
export async function beginSnapshotBuild(db: Queryable, buildId: string, snapshotId: string, nowMs: number): Promise<void> {
  await db.query("INSERT INTO snapshot_builds (build_id, snapshot_id, last_write_at_ms) VALUES ($1, $2, $3)", [buildId, snapshotId, nowMs]);
}

/**
 * Records a write of a live build ($1, at $2) in the statement that inserts its chunks: one
 * statement, so one short transaction. A build the purge gave up on (or forgot) has no `live` row,
 * so nothing is inserted and the write fails.
 */
const LIVE_BUILD_TOUCHED = `live AS (
  UPDATE snapshot_builds SET last_write_at_ms = $2 WHERE build_id = $1 AND NOT abandoned RETURNING build_id)`;

export async function writeSnapshotLeafChunks(
  db: Queryable,
  buildId: string,
  firstChunkNo: number,
  chunks: readonly SnapshotLeafChunk[],
  nowMs: number,
): Promise<void> {
  const { rowCount } = await db.query(
    `WITH ${LIVE_BUILD_TOUCHED}
     INSERT INTO snapshot_leaf_chunks (build_id, chunk_no, first_address, data)
     SELECT live.build_id, $5::int + ord - 1, first_address, data
     FROM live, unnest($3::text[], $4::text[]) WITH ORDINALITY AS c(first_address, data, ord)`,
    [buildId, nowMs, chunks.map((chunk) => chunk.firstAddress), chunks.map((chunk) => chunk.text), firstChunkNo],
  );
  if (rowCount !== chunks.length) throw new SnapshotBuildAbandonedError(buildId);
}

export async function writeSnapshotNodeChunks(
  db: Queryable,
  buildId: string,
  firstChunkNo: number,
  chunks: readonly Buffer[],
  nowMs: number,
): Promise<void> {
  const { rowCount } = await db.query(
    `WITH ${LIVE_BUILD_TOUCHED}
     INSERT INTO snapshot_node_chunks (build_id, chunk_no, data)
     SELECT live.build_id, $4::int + ord - 1, data FROM live, unnest($3::bytea[]) WITH ORDINALITY AS c(data, ord)`,
    [buildId, nowMs, chunks, firstChunkNo],
  );
  if (rowCount !== chunks.length) throw new SnapshotBuildAbandonedError(buildId);
}

/** The snapshot row and its event, and the build forgotten; a build that lost the race for its id is abandoned instead. */
export async function publishSnapshot(client: PgClient, publication: SnapshotPublication): Promise<SnapshotCreateResult> {
  const { snapshot, buildId, event } = publication;
  const { rowCount: live } = await client.query("SELECT 1 FROM snapshot_builds WHERE build_id = $1 AND NOT abandoned FOR UPDATE", [
    buildId,
  ]);
  if (live === 0) throw new SnapshotBuildAbandonedError(buildId);
  const { rowCount } = await client.query(
    `INSERT INTO snapshots (${SNAPSHOT_ROW_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
    snapshotRowValues(publication),
  );
  if (rowCount === 0) {
    await abandonSnapshotBuild(client, buildId);
    return takenBy(await getSnapshot(client, snapshot.id), snapshot.id);
  }
  await client.query("DELETE FROM snapshot_builds WHERE build_id = $1", [buildId]);
  await appendEvents(client, [event]);
  return { kind: "created" };
}

export async function abandonSnapshotBuild(db: Queryable, buildId: string): Promise<void> {
  await db.query("UPDATE snapshot_builds SET abandoned = true WHERE build_id = $1", [buildId]);
}

/**
 * One step of the cleanup (store.ts purgeSnapshotBuilds): gives up on builds silent since before
 * staleBeforeMs (never one a snapshot row names: a build registered by the migration may have
 * been published by an older version), deletes up to `limit` of their chunks, leaves first, and
 * forgets the builds left with none. Chunks another instance's purge is deleting are skipped.
 */
export async function purgeSnapshotBuilds(client: PgClient, staleBeforeMs: number, limit: number): Promise<number> {
  await client.query(
    `UPDATE snapshot_builds SET abandoned = true
     WHERE NOT abandoned AND last_write_at_ms < $1 AND build_id NOT IN (SELECT build_id FROM snapshots)`,
    [staleBeforeMs],
  );
  const leaves = await deleteAbandonedChunks(client, "snapshot_leaf_chunks", limit);
  const nodes = await deleteAbandonedChunks(client, "snapshot_node_chunks", limit - leaves);
  await client.query(
    `DELETE FROM snapshot_builds b WHERE b.build_id IN (SELECT build_id FROM snapshots) OR (b.abandoned
       AND NOT EXISTS (SELECT 1 FROM snapshot_leaf_chunks c WHERE c.build_id = b.build_id)
       AND NOT EXISTS (SELECT 1 FROM snapshot_node_chunks c WHERE c.build_id = b.build_id))`,
  );
  return leaves + nodes;
}

type ChunkTable = "snapshot_leaf_chunks" | "snapshot_node_chunks";

async function deleteAbandonedChunks(client: PgClient, table: ChunkTable, limit: number): Promise<number> {
  const { rowCount } = await client.query(
    `DELETE FROM ${table} WHERE (build_id, chunk_no) IN (
       SELECT c.build_id, c.chunk_no FROM snapshot_builds b JOIN ${table} c ON c.build_id = b.build_id WHERE b.abandoned
       LIMIT $1 FOR UPDATE OF c SKIP LOCKED)`,
    [limit],
  );
  return rowCount ?? 0;
}

interface SnapshotRow {
  id: string;
  point_type: string;
  measure: string;
  decimals: number;
  taken_at_ms: string;
  root: string;
  leaf_count: number;
  total_units: string;
  as_of_ms: string | null;
}

export async function getSnapshot(db: Queryable, snapshotId: string): Promise<Snapshot | null> {
  const { rows } = await db.query<SnapshotRow>({
    name: "pl-get-snapshot",
    text: "SELECT id, point_type, measure, decimals, taken_at_ms, root, leaf_count, total_units, as_of_ms FROM snapshots WHERE id = $1",
    values: [snapshotId],
  });
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    pointType: row.point_type,
    measure: row.measure as SnapshotMeasure,
    decimals: row.decimals,
    takenAtMs: toNumber(row.taken_at_ms),
    root: row.root,
    leafCount: row.leaf_count,
    totalUnits: toUnits(row.total_units),
    asOfMs: toNullableNumber(row.as_of_ms),
  };
}

/** The last chunk whose first address is ≤ `address`: the only one that can hold it. */
export async function findSnapshotLeafChunk(db: Queryable, snapshotId: string, address: AddressKey): Promise<string | null> {
  const { rows } = await db.query<{ data: string }>({
    name: "pl-snapshot-leaf-chunk",
    text: `SELECT c.data FROM snapshots s JOIN snapshot_leaf_chunks c ON c.build_id = s.build_id
           WHERE s.id = $1 AND c.first_address <= $2 ORDER BY c.first_address DESC LIMIT 1`,
    values: [snapshotId, address],
  });
  return rows[0]?.data ?? null;
}

export async function getSnapshotNodeChunks(
  db: Queryable,
  snapshotId: string,
  chunkNumbers: readonly number[],
): Promise<Map<number, Buffer>> {
  const { rows } = await db.query<{ chunk_no: number; data: Buffer }>({
    name: "pl-snapshot-node-chunks",
    text: `SELECT c.chunk_no, c.data FROM snapshots s JOIN snapshot_node_chunks c ON c.build_id = s.build_id
           WHERE s.id = $1 AND c.chunk_no = ANY($2::int[])`,
    values: [snapshotId, chunkNumbers],
  });
  return new Map(rows.map((row) => [row.chunk_no, row.data]));
}

/** Chunks of a published snapshot from number `from` on, in order: the leaves' text or the nodes' bytes. */
async function listChunks<Data>(db: Queryable, table: ChunkTable, snapshotId: string, from: number, limit: number): Promise<Data[]> {
  const { rows } = await db.query<{ data: Data }>({
    name: `pl-snapshot-list-${table}`,
    text: `SELECT c.data FROM snapshots s JOIN ${table} c ON c.build_id = s.build_id
           WHERE s.id = $1 AND c.chunk_no >= $2 ORDER BY c.chunk_no LIMIT $3`,
    values: [snapshotId, from, limit],
  });
  return rows.map((row) => row.data);
}

/** The port's snapshot operations on `pool`, each through `run` (index.ts: the pool's guard). */
export function snapshotOperations(pool: PgPool, run: <T>(work: () => Promise<T>) => Promise<T>) {
  const inTransaction = <T>(work: (client: PgClient) => Promise<T>) => run(() => transaction(pool, work));
  return {
    readSnapshotHoldings: (pointType, measure, asOfMs) => run(() => readSnapshotHoldings(pool, pointType, measure, asOfMs ?? null)),
    beginSnapshotBuild: (buildId, snapshotId, nowMs) => run(() => beginSnapshotBuild(pool, buildId, snapshotId, nowMs)),
    writeSnapshotLeafChunks: (buildId, firstChunkNo, chunks, nowMs) =>
      run(() => writeSnapshotLeafChunks(pool, buildId, firstChunkNo, chunks, nowMs)),
    writeSnapshotNodeChunks: (buildId, firstChunkNo, chunks, nowMs) =>
      run(() => writeSnapshotNodeChunks(pool, buildId, firstChunkNo, chunks, nowMs)),
    publishSnapshot: (publication) => inTransaction((client) => publishSnapshot(client, publication)),
    abandonSnapshotBuild: (buildId) => run(() => abandonSnapshotBuild(pool, buildId)),
    purgeSnapshotBuilds: (staleBeforeMs, limit) => inTransaction((client) => purgeSnapshotBuilds(client, staleBeforeMs, limit)),
    getSnapshot: (snapshotId) => run(() => getSnapshot(pool, snapshotId)),
    findSnapshotLeafChunk: (snapshotId, address) => run(() => findSnapshotLeafChunk(pool, snapshotId, address)),
    getSnapshotNodeChunks: (snapshotId, chunkNumbers) => run(() => getSnapshotNodeChunks(pool, snapshotId, chunkNumbers)),
    listSnapshotLeafChunks: (snapshotId, from, limit) =>
      run(() => listChunks<string>(pool, "snapshot_leaf_chunks", snapshotId, from, limit)),
    listSnapshotNodeChunks: (snapshotId, from, limit) =>
      run(() => listChunks<Buffer>(pool, "snapshot_node_chunks", snapshotId, from, limit)),
  } satisfies SnapshotsStore;
}
