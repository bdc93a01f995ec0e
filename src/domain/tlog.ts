import { sha256 } from "@noble/hashes/sha2";

/**
 * The transparency log's Merkle tree (API.md, Transparency log): RFC 9162 §2.1 hashing, the tree
 * hash of any size, and inclusion and consistency proofs, generated and verified. Pure: the tree's
 * stored hashes are read through a `NodeHashes` callback that answers the hash of one complete
 * subtree, so the same code proves from a database (src/ledger/transparency-log.ts) and from an
 * array in a test.
 *
 * A complete subtree is named by its level (height) and index: node(level, index) covers leaves
 * [index·2^level, (index+1)·2^level). The proof algorithms below only ever ask for such nodes of
 * the tree being proven, never a hash that depends on leaves past its size.
 */

export const HASH_BYTES = 32;
/** Exclusive bound of a tree size: every size and index stays an exact JavaScript integer. */
export const MAX_TREE_SIZE = 2 ** 53;

export type Hash = Uint8Array;
export type NodeHashes = (level: number, index: number) => Hash;

const LEAF_PREFIX = new Uint8Array([0x00]);
const NODE_PREFIX = new Uint8Array([0x01]);

interface Sha256Hasher {
  update(data: Uint8Array): Sha256Hasher;
  digest(): Uint8Array;
}

/**
 * Node's own SHA-256 where there is one (the server, the CLI, a backend using the client): 0.9 µs
 * a node hash against 1.5 µs for @noble/hashes on the bench machine, and several times faster on
 * an event's leaf (OpenSSL's SHA extensions). Taken with process.getBuiltinModule, not an import,
 * so this module stays loadable in a browser (the console), which uses @noble/hashes. Both give
 * the same bytes (test/tlog.test.ts compares them).
 */
const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(
  "node:crypto",
) as { createHash(algorithm: "sha256"): Sha256Hasher } | undefined;

const newSha256: () => Sha256Hasher = nodeCrypto === undefined ? () => sha256.create() : () => nodeCrypto.createHash("sha256");

/** SHA-256 of the empty string: the hash of the empty tree (RFC 9162 §2.1.1). */
export const EMPTY_TREE_HASH: Hash = sha256(new Uint8Array(0));

/** `SHA-256(0x00 ‖ leaf)`. */
export function leafHash(leaf: Uint8Array): Hash {
  return newSha256().update(LEAF_PREFIX).update(leaf).digest();
}

/** `SHA-256(0x01 ‖ left ‖ right)`. */
export function nodeHash(left: Hash, right: Hash): Hash {
  return newSha256().update(NODE_PREFIX).update(left).update(right).digest();
}

/** The largest power of two smaller than n (n ≥ 2): RFC 9162's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && Number.isInteger(Math.log2(n)) && 2 ** Math.log2(n) === n;
}

/**
 * MTH(D[lo:hi]) for a range the RFC's recursions produce (lo a multiple of the largest power of
 * two ≤ hi − lo): a complete subtree is read, anything else split at its k.
 */
export function rangeHash(lo: number, hi: number, node: NodeHashes): Hash {
  const n = hi - lo;
  if (n === 0) return EMPTY_TREE_HASH;
  if (isPowerOfTwo(n) && lo % n === 0) return node(Math.log2(n), lo / n);
  const k = splitPoint(n);
  return nodeHash(rangeHash(lo, lo + k, node), rangeHash(lo + k, hi, node));
}

/** The root hash of the tree of the first `size` leaves. */
export function treeHash(size: number, node: NodeHashes): Hash {
  return rangeHash(0, size, node);
}

function checkSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 0 || size >= MAX_TREE_SIZE) throw new RangeError(`tree size ${size} out of range`);
}

/** PATH(m, D[lo:hi]) of RFC 9162 §2.1.3.1, over the range [lo, hi). */
function path(m: number, lo: number, hi: number, node: NodeHashes): Hash[] {
  const n = hi - lo;
  if (n <= 1) return [];
  const k = splitPoint(n);
  if (m < k) return [...path(m, lo, lo + k, node), rangeHash(lo + k, hi, node)];
  return [...path(m - k, lo + k, hi, node), rangeHash(lo, lo + k, node)];
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162 §2.1.3.1). */
export function inclusionProof(index: number, size: number, node: NodeHashes): Hash[] {
  checkSize(size);
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  return path(index, 0, size, node);
}

/** SUBPROOF(m, D[lo:hi], b) of RFC 9162 §2.1.4.1. */
function subproof(m: number, lo: number, hi: number, complete: boolean, node: NodeHashes): Hash[] {
  const n = hi - lo;
  if (m === n) return complete ? [] : [rangeHash(lo, hi, node)];
  const k = splitPoint(n);
  if (m <= k) return [...subproof(m, lo, lo + k, complete, node), rangeHash(lo + k, hi, node)];
  return [...subproof(m - k, lo + k, hi, false, node), rangeHash(lo, lo + k, node)];
}

/**
 * The consistency proof between the trees of `from` and `to` leaves (RFC 9162 §2.1.4.1); empty
 * when from is 0 (every tree extends the empty one) or from = to.
 */
export function consistencyProof(from: number, to: number, node: NodeHashes): Hash[] {
  checkSize(to);
  if (!Number.isSafeInteger(from) || from < 0 || from > to) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  if (from === 0 || from === to) return [];
  return subproof(from, 0, to, true, node);
}

/**
 * The complete subtrees a computation asks for, without their hashes: `compute` runs over a
 * NodeHashes that records each (level, index) and answers a placeholder. The proof algorithms'
 * steps never depend on the hashes, so a store can first learn which nodes a proof needs, read
 * them all at once, then run it for real.
 */
export function nodesNeeded(compute: (node: NodeHashes) => unknown): { level: number; index: number }[] {
  const seen = new Map<string, { level: number; index: number }>();
  const placeholder = new Uint8Array(HASH_BYTES);
  compute((level, index) => {
    seen.set(`${level}/${index}`, { level, index });
    return placeholder;
  });
  return [...seen.values()];
}

export function hashesEqual(a: Hash, b: Hash): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/** RFC 9162 §2.1.3.2: whether `proof` shows the leaf of hash `leaf` at `index` in the tree of `size` leaves and root `root`. */
export function verifyInclusion(index: number, size: number, leaf: Hash, proof: readonly Hash[], root: Hash): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = BigInt(index);
  let sn = BigInt(size - 1);
  let r = leaf;
  for (const p of proof) {
    if (sn === 0n) return false;
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  return sn === 0n && hashesEqual(r, root);
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows the tree of `to` leaves and root `toRoot` extends the
 * tree of `from` leaves and root `fromRoot`.
 */
export function verifyConsistency(from: number, to: number, fromRoot: Hash, toRoot: Hash, proof: readonly Hash[]): boolean {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || from > to) return false;
  if (from === to) return proof.length === 0 && hashesEqual(fromRoot, toRoot);
  if (from === 0) return proof.length === 0 && hashesEqual(fromRoot, EMPTY_TREE_HASH);
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(from) ? [fromRoot, ...proof] : [...proof];
  let fn = BigInt(from - 1);
  let sn = BigInt(to - 1);
  while ((fn & 1n) === 1n) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0n) return false;
    if ((fn & 1n) === 1n || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  return sn === 0n && hashesEqual(fr, fromRoot) && hashesEqual(sr, toRoot);
}

/**
 * Tiles: how the store keeps the tree in about 37 bytes a leaf. A tile of level t holds up to
 * TILE_WIDTH consecutive hashes of the tree's level TILE_HEIGHT·t (level 0: the leaf hashes; level
 * 1: the roots of complete 256-leaf subtrees; …), TILE_WIDTH·HASH_BYTES bytes when full, and beside
 * them its complete inner nodes of heights STORED_FROM_HEIGHT to TILE_HEIGHT − 1 (30 hashes when
 * full; C2SP tlog-tiles keeps no inner nodes and makes the reader hash up to 255 per tile). Any
 * other node is recomputed from at most 2^STORED_FROM_HEIGHT hashes of one tile, so a proof reads
 * about one tile per TILE_HEIGHT levels (3–4 at 10,000,000 leaves) and hashes a few dozen nodes.
 * Only the last tile of each level is ever rewritten (it grows until full). A tile written before
 * the inner nodes were kept has none (`nodes` null) and is hashed from its bottom row, as before.
 */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 2 ** TILE_HEIGHT;
/** The lowest height of a tile's inner nodes that the store keeps (lower ones cost ≤ 15 hashes to recompute). */
export const STORED_FROM_HEIGHT = 4;

export interface TileKey {
  level: number;
  index: number;
}

export interface Tile extends TileKey {
  /** The tile's hashes, concatenated (a partial tile is shorter). */
  hashes: Uint8Array;
  /** innerNodes(hashes), or null for a tile stored before the log kept them. */
  nodes: Uint8Array | null;
}

export type StoredTile = Pick<Tile, "hashes" | "nodes">;

function hashAt(row: Uint8Array, i: number): Hash {
  return row.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES);
}

/** Where the nodes of `height` start among the inner nodes of a tile of `count` hashes, in hashes. */
function innerNodesOffset(count: number, height: number): number {
  let offset = 0;
  for (let h = STORED_FROM_HEIGHT; h < height; h++) offset += Math.floor(count / 2 ** h);
  return offset;
}

/**
 * The complete inner nodes of a tile of these hashes that the store keeps beside them: for each
 * height from STORED_FROM_HEIGHT to TILE_HEIGHT − 1, the hashes of its complete subtrees in order.
 * Costs one node hash per hash of the tile.
 */
export function innerNodes(hashes: Uint8Array): Uint8Array {
  const count = hashes.length / HASH_BYTES;
  const nodes = new Uint8Array(innerNodesOffset(count, TILE_HEIGHT) * HASH_BYTES);
  let row = hashes;
  for (let height = 1; height < TILE_HEIGHT; height++) {
    const next = new Uint8Array(Math.floor(row.length / HASH_BYTES / 2) * HASH_BYTES);
    for (let i = 0; i * HASH_BYTES < next.length; i++) next.set(nodeHash(hashAt(row, 2 * i), hashAt(row, 2 * i + 1)), i * HASH_BYTES);
    if (height >= STORED_FROM_HEIGHT) nodes.set(next, innerNodesOffset(count, height) * HASH_BYTES);
    row = next;
  }
  return nodes;
}

/** The tile that holds what node(level, index) is computed from, and which of its hashes. */
export function tileOf(level: number, index: number): { key: TileKey; first: number; count: number } {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const height = level - tileLevel * TILE_HEIGHT;
  const first = index * 2 ** height;
  return { key: { level: tileLevel, index: Math.floor(first / TILE_WIDTH) }, first: first % TILE_WIDTH, count: 2 ** height };
}

/** A NodeHashes over tiles read beforehand (`tiles` by "level/index"); a missing hash is an invariant broken. */
export function nodeHashesFromTiles(tiles: ReadonlyMap<string, StoredTile>): NodeHashes {
  return (level, index) => {
    const { key, first, count } = tileOf(level, index);
    const tile = tiles.get(`${key.level}/${key.index}`);
    if (tile === undefined || tile.hashes.length < (first + count) * HASH_BYTES) {
      throw new Error(`the log's tile ${key.level}/${key.index} lacks node ${level}/${index}`);
    }
    const tileCount = tile.hashes.length / HASH_BYTES;
    if (tile.nodes !== null && tile.nodes.length !== innerNodesOffset(tileCount, TILE_HEIGHT) * HASH_BYTES) {
      throw new Error(`the log's tile ${key.level}/${key.index} has inner nodes of ${tile.nodes.length} bytes for ${tileCount} hashes`);
    }
    return subtreeOfTile(tile, level - key.level * TILE_HEIGHT, first / count);
  };
}

/** The hash of the complete subtree of `height` levels at `index` among a tile's subtrees of that height. */
function subtreeOfTile(tile: StoredTile, height: number, index: number): Hash {
  if (height === 0) return hashAt(tile.hashes, index);
  if (tile.nodes !== null && height >= STORED_FROM_HEIGHT) {
    return hashAt(tile.nodes, innerNodesOffset(tile.hashes.length / HASH_BYTES, height) + index);
  }
  return nodeHash(subtreeOfTile(tile, height - 1, index * 2), subtreeOfTile(tile, height - 1, index * 2 + 1));
}

/** The tiles a set of nodes is computed from, each once. */
export function tilesOf(nodes: readonly { level: number; index: number }[]): TileKey[] {
  const keys = new Map<string, TileKey>();
  for (const { level, index } of nodes) {
    const { key } = tileOf(level, index);
    keys.set(`${key.level}/${key.index}`, key);
  }
  return [...keys.values()];
}

/** How many nodes of the tree's level TILE_HEIGHT·tileLevel a tree of `size` leaves has complete. */
function completeAt(size: number, tileLevel: number): number {
  return Math.floor(size / TILE_WIDTH ** tileLevel);
}

/** The last tile of each tile level of a tree of `size` leaves that is not full (what appending rewrites). */
export function edgeTiles(size: number): TileKey[] {
  const keys: TileKey[] = [];
  for (let level = 0; completeAt(size, level) > 0; level++) {
    const count = completeAt(size, level);
    if (count % TILE_WIDTH !== 0) keys.push({ level, index: Math.floor(count / TILE_WIDTH) });
  }
  return keys;
}

/**
 * Appends leaf hashes to a tree of `size` leaves whose edge tiles (edgeTiles(size)) are `edge`:
 * returns every tile that changed, whole, with its inner nodes, to be written over the stored
 * ones. A tile that fills sends its root (a complete subtree TILE_HEIGHT levels up) to the tile
 * level above.
 */
export function appendToTiles(size: number, edge: readonly Tile[], leaves: readonly Hash[]): Tile[] {
  const grown = new Map<string, { key: TileKey; parts: Uint8Array[]; nodes: Uint8Array | null }>();
  const current = new Map(edge.map((tile) => [`${tile.level}/${tile.index}`, tile.hashes]));
  let incoming: Hash[] = [...leaves];
  for (let level = 0; incoming.length > 0; level++) {
    let count = completeAt(size, level);
    const promoted: Hash[] = [];
    for (const hash of incoming) {
      const index = Math.floor(count / TILE_WIDTH);
      const name = `${level}/${index}`;
      let tile = grown.get(name);
      if (tile === undefined) {
        const before = current.get(name) ?? new Uint8Array(0);
        if (before.length !== (count % TILE_WIDTH) * HASH_BYTES) {
          throw new Error(`the log's tile ${name} has ${before.length / HASH_BYTES} hashes, not ${count % TILE_WIDTH}`);
        }
        tile = { key: { level, index }, parts: [before], nodes: null };
        grown.set(name, tile);
      }
      tile.parts.push(hash);
      count++;
      if (count % TILE_WIDTH === 0) {
        const hashes = concatAll(tile.parts);
        tile.parts = [hashes];
        tile.nodes = innerNodes(hashes);
        const top = innerNodesOffset(TILE_WIDTH, TILE_HEIGHT - 1);
        promoted.push(nodeHash(hashAt(tile.nodes, top), hashAt(tile.nodes, top + 1)));
      }
    }
    incoming = promoted;
  }
  return [...grown.values()].map(({ key, parts, nodes }) => {
    const hashes = concatAll(parts);
    return { ...key, hashes, nodes: nodes ?? innerNodes(hashes) };
  });
}

function concatAll(parts: readonly Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return all;
}
