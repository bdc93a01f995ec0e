import { randomUUID } from "node:crypto";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { AddressKey } from "../domain/address.js";
import type { Actor } from "../domain/api-keys.js";
import { assertInvariant, unavailable } from "../domain/errors.js";
import { MAX_SNAPSHOTS_BUILDING, SNAPSHOT_BUILDING_RETRY_AFTER_SECONDS, SNAPSHOT_CHUNKS_PER_WRITE } from "../domain/limits.js";
import { snapshotCreated } from "../domain/events.js";
import { buildStandardTree, NODE_BYTES, proofIndexes } from "../domain/merkle.js";
import { formatPoints } from "../domain/points.js";
import {
  amountOf,
  checksumOnce,
  decodeLeafChunk,
  encodeLeafChunk,
  LEAVES_PER_CHUNK,
  NODES_PER_CHUNK,
  snapshotJson,
  snapshotMatchesRequest,
  unitsOf,
  type Snapshot,
  type SnapshotLeaf,
  type SnapshotRequest,
} from "../domain/snapshot.js";
import type { LeaderboardsStore } from "../store/ports/leaderboards.js";
import { SnapshotBuildAbandonedError, type NewSnapshot, type SnapshotCreateResult, type SnapshotsStore } from "../store/ports/snapshots.js";
import { requireProjectedThrough } from "../store/projection-ready.js";

/**
 * Taking a snapshot (docs/api.md, Snapshots): one consistent read of the holdings (the store's job),
 * then the tree built outside any transaction, yielding to the event loop as it goes, then its
 * chunks stored in short transactions and one more that publishes it with its snapshot.created
 * event (storeSnapshot). Submissions and
 * finalization go on meanwhile: nothing here holds a lock or blocks the event loop for long.
 */

// The bounds of a build (MAX_SNAPSHOTS_BUILDING, SNAPSHOT_CHUNKS_PER_WRITE, SNAPSHOT_BUILD_ABANDONED_AFTER_MS)
// are in domain/limits.ts with the others docs/limits.md names; the last is re-exported for the build's tests.
export { SNAPSHOT_BUILD_ABANDONED_AFTER_MS } from "../domain/limits.js";
/** Chunk rows read per query while the dump is streamed. */
const DUMP_CHUNKS_PER_READ = 8;

export type TakeResult =
  | { kind: "created"; snapshot: Snapshot }
  | { kind: "exists"; snapshot: Snapshot; matchesRequest: boolean }
  /** No address holds a positive amount: a Merkle tree needs at least one leaf. */
  | { kind: "empty" };

let building = 0;

/**
 * `actor`: who takes it (the admin, from the API or the CLI), the actor of its snapshot.created
 * event. With `asOfMs`, the balances as they stood then (the caller checked it is far enough in
 * the past: domain/snapshot.ts asOfProblem); refused (503) while the projection has not applied
 * every batch finalized by then (src/store/projection-ready.ts), whose receipts it would miss.
 */
export async function takeSnapshot(
  store: SnapshotsStore & Pick<LeaderboardsStore, "projectionState">,
  request: SnapshotRequest,
  nowMs: () => number,
  actor: Actor,
): Promise<TakeResult> {
  // A reuse is answered before any work (and again at publication, for a race between instances).
  const existing = await store.getSnapshot(request.id);
  if (existing) return { kind: "exists", snapshot: existing, matchesRequest: snapshotMatchesRequest(existing, request) };
  if (building >= MAX_SNAPSHOTS_BUILDING)
    throw unavailable("another snapshot is being taken; retry when it is done", SNAPSHOT_BUILDING_RETRY_AFTER_SECONDS);
  if (request.asOfMs !== null) await requireProjectedThrough(store, request.asOfMs);
  building += 1;
  try {
    const takenAtMs = nowMs();
    const holdings = await store.readSnapshotHoldings(request.pointType, request.measure, request.asOfMs);
    if (holdings.addresses.length === 0) return { kind: "empty" };
    const created = await buildSnapshot(request, takenAtMs, holdings.addresses, holdings.units, nowMs, actor);
    const result = await storeSnapshot(store, created, nowMs);
    if (result.kind === "exists") {
      return { kind: "exists", snapshot: result.snapshot, matchesRequest: snapshotMatchesRequest(result.snapshot, request) };
    }
    return { kind: "created", snapshot: created.snapshot };
  } finally {
    building -= 1;
  }
}

/** The snapshot in memory: its tree, its chunks and its event, under a fresh buildId. Nothing is stored yet. */
export async function buildSnapshot(
  request: SnapshotRequest,
  takenAtMs: number,
  addresses: readonly AddressKey[],
  units: readonly bigint[],
  nowMs: () => number,
  actor: Actor,
): Promise<NewSnapshot> {
  assertInvariant(addresses.length === units.length, "snapshot holdings: one amount per address");
  const amountAt = (index: number) => amountOf(units[index]!, request.decimals);
  const tree = await buildStandardTree(addresses, amountAt);
  const leafChunks = await leafChunksOf(addresses, amountAt, tree.treeIndexes);
  const nodeChunks: Buffer[] = [];
  const chunkBytes = NODES_PER_CHUNK * NODE_BYTES;
  for (let start = 0; start < tree.nodes.length; start += chunkBytes) nodeChunks.push(tree.nodes.subarray(start, start + chunkBytes));
  let totalUnits = 0n;
  for (const unit of units) totalUnits += unit;
  // Every leaf is positive (addHoldingsPage), so a tree with leaves has a positive total.
  assertInvariant(totalUnits > 0n, `snapshot ${request.id} has leaves but a total of ${totalUnits}`);
  const snapshot: Snapshot = { ...request, takenAtMs, root: tree.root, leafCount: addresses.length, totalUnits };
  return { snapshot, buildId: randomUUID(), leafChunks, nodeChunks, event: snapshotCreated(snapshotJson(snapshot), nowMs(), actor) };
}

/**
 * Registers the build, writes its chunks a few per transaction (yielding between them), then
 * publishes it with its event in one transaction. A build that fails is marked abandoned, and
 * one whose process dies stops writing: either way the purge job deletes its chunks
 * (SNAPSHOT_BUILD_ABANDONED_AFTER_MS), so no crash leaves them behind for good.
 */
export async function storeSnapshot(store: SnapshotsStore, created: NewSnapshot, nowMs: () => number): Promise<SnapshotCreateResult> {
  const { buildId } = created;
  await store.beginSnapshotBuild(buildId, created.snapshot.id, nowMs());
  try {
    for (let start = 0; start < created.leafChunks.length; start += SNAPSHOT_CHUNKS_PER_WRITE) {
      await store.writeSnapshotLeafChunks(buildId, start, created.leafChunks.slice(start, start + SNAPSHOT_CHUNKS_PER_WRITE), nowMs());
      await yieldToEventLoop();
    }
    for (let start = 0; start < created.nodeChunks.length; start += SNAPSHOT_CHUNKS_PER_WRITE) {
      await store.writeSnapshotNodeChunks(buildId, start, created.nodeChunks.slice(start, start + SNAPSHOT_CHUNKS_PER_WRITE), nowMs());
      await yieldToEventLoop();
    }
    return await store.publishSnapshot(created);
  } catch (error) {
    // The build's own error is the one to report; if the mark fails too (the database is out),
    // the build is abandoned an hour after its last write instead.
    await store.abandonSnapshotBuild(buildId).catch(() => undefined);
    if (error instanceof SnapshotBuildAbandonedError) {
      throw unavailable(
        "the snapshot build stalled for too long and was given up; take the snapshot again",
        SNAPSHOT_BUILDING_RETRY_AFTER_SECONDS,
      );
    }
    throw error;
  }
}

async function leafChunksOf(
  addresses: readonly AddressKey[],
  amountAt: (index: number) => bigint,
  treeIndexes: Uint32Array,
): Promise<NewSnapshot["leafChunks"]> {
  const chunks: NewSnapshot["leafChunks"] = [];
  for (let start = 0; start < addresses.length; start += LEAVES_PER_CHUNK) {
    // A chunk's checksums are a keccak each: ≈ 3 ms of work between two yields.
    if (start > 0) await yieldToEventLoop();
    const leaves: SnapshotLeaf[] = [];
    for (let i = start; i < Math.min(start + LEAVES_PER_CHUNK, addresses.length); i++) {
      leaves.push({ address: checksumOnce(addresses[i]!), amount: amountAt(i), treeIndex: treeIndexes[i]! });
    }
    chunks.push({ firstAddress: addresses[start]!, text: encodeLeafChunk(leaves) });
  }
  return chunks;
}

export interface SnapshotProof {
  address: `0x${string}`;
  amount: string;
  points: string;
  proof: string[];
}

/** The proof of `address` (reads one leaf chunk and the node chunks on its path), or null when it is not in the snapshot. */
export async function snapshotProof(
  store: Pick<SnapshotsStore, "findSnapshotLeafChunk" | "getSnapshotNodeChunks">,
  snapshot: Snapshot,
  address: AddressKey,
): Promise<SnapshotProof | null> {
  const text = await store.findSnapshotLeafChunk(snapshot.id, address);
  const leaf = text === null ? undefined : decodeLeafChunk(text).find((candidate) => candidate.address.toLowerCase() === address);
  if (leaf === undefined) return null;
  const indexes = proofIndexes(leaf.treeIndex);
  const chunks = await store.getSnapshotNodeChunks(snapshot.id, [...new Set(indexes.map((index) => Math.floor(index / NODES_PER_CHUNK)))]);
  const proof = indexes.map((index) => {
    const chunk = chunks.get(Math.floor(index / NODES_PER_CHUNK));
    if (chunk === undefined) throw new Error(`snapshot ${snapshot.id} is missing the tree node ${index}`);
    const offset = (index % NODES_PER_CHUNK) * NODE_BYTES;
    return `0x${chunk.toString("hex", offset, offset + NODE_BYTES)}`;
  });
  return { address: leaf.address, amount: leaf.amount.toString(), points: formatPoints(unitsOf(leaf.amount, snapshot.decimals)), proof };
}

/**
 * The tree as the JSON text of `StandardMerkleTree.dump()` (format standard-v1), a few chunks at a
 * time: `values` in address order, each with its treeIndex. Pulled by the reply stream, so its
 * memory stays a few chunks whatever the snapshot's size.
 */
export async function* treeDumpText(
  store: Pick<SnapshotsStore, "listSnapshotLeafChunks" | "listSnapshotNodeChunks">,
  snapshotId: string,
): AsyncGenerator<string> {
  yield '{"format":"standard-v1","leafEncoding":["address","uint256"],"tree":[';
  let separator = "";
  for (let from = 0; ; from += DUMP_CHUNKS_PER_READ) {
    const chunks = await store.listSnapshotNodeChunks(snapshotId, from, DUMP_CHUNKS_PER_READ);
    for (const chunk of chunks) {
      const nodes: string[] = [];
      for (let offset = 0; offset < chunk.length; offset += NODE_BYTES)
        nodes.push(`"0x${chunk.toString("hex", offset, offset + NODE_BYTES)}"`);
      yield separator + nodes.join(",");
      separator = ",";
    }
    if (chunks.length < DUMP_CHUNKS_PER_READ) break;
  }
  yield '],"values":[';
  separator = "";
  for (let from = 0; ; from += DUMP_CHUNKS_PER_READ) {
    const chunks = await store.listSnapshotLeafChunks(snapshotId, from, DUMP_CHUNKS_PER_READ);
    for (const chunk of chunks) {
      const values = decodeLeafChunk(chunk).map((leaf) => `{"value":["${leaf.address}","${leaf.amount}"],"treeIndex":${leaf.treeIndex}}`);
      yield separator + values.join(",");
      separator = ",";
    }
    if (chunks.length < DUMP_CHUNKS_PER_READ) break;
  }
  yield "]}";
}
