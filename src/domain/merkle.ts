import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import sha3 from "js-sha3";
import { assertInvariant } from "./errors.js";

/**
 * OpenZeppelin's StandardMerkleTree (`@openzeppelin/merkle-tree`, format "standard-v1") over
 * `["address", "uint256"]` leaves, rebuilt here for size: the library keeps every node as a hex
 * string and every value as an object, and hashes through ABI-encoding helpers. Measured on the
 * 2-core machine: StandardMerkleTree.of over 100,000 leaves took 9.0 s and 362 MB peak RSS, so
 * ≈ 90 s and ≈ 3 GB at the 1,000,000 of the target (≤ 30 s, ≤ 1 GB). This keeps the nodes in one
 * Buffer (32 bytes each) and hashes with js-sha3 (≈ 2.5 µs a keccak, the same choice as
 * ./address.ts): 1,000,000 leaves in 14 s and 396 MB (SQLite, `npm run bench -- --snapshot`).
 * The library stays the reference: the tests build the same values with it and compare.
 *
 * Same algorithm, so the same root, tree and proofs (test/snapshots-suite.ts compares them with
 * the library's for every leaf):
 * - leaf = keccak256(keccak256(abi.encode(address, uint256)));
 * - leaves sorted by hash (bytes), the i-th sorted leaf at tree[length - 1 - i];
 * - node i = keccak256(sort(tree[2i + 1], tree[2i + 2]) concatenated), i from the last inner node to 0;
 * - a proof lists the siblings from the leaf up to (not including) the root.
 */

export const NODE_BYTES = 32;
/** Hashes computed between two yields to the event loop: ≈ 10 ms of work, so requests keep being served. */
const HASHES_PER_SLICE = 4000;

export interface StandardTree {
  /** 0x + 64 hex digits. */
  root: string;
  /** Every node, tree[i] at bytes [32i, 32i + 32): the standard-v1 `tree` array in binary. */
  nodes: Buffer;
  /** The tree index of each input leaf, in input order (the standard-v1 `values[i].treeIndex`). */
  treeIndexes: Uint32Array;
}

/**
 * keccak256 of `input` written into `target` at `offset`. Through js-sha3's `digest` (a plain
 * array on the JS heap), not `arrayBuffer`: millions of 32-byte ArrayBuffers each hold a native
 * allocation, which the collector frees late; measured, they took a 1,000,000-leaf build past 1 GB.
 */
function keccakInto(input: Uint8Array, target: Buffer, offset: number): void {
  const digest = sha3.keccak256.digest(input);
  for (let k = 0; k < NODE_BYTES; k++) target[offset + k] = digest[k]!;
}

const encoded = Buffer.alloc(64);
const inner = Buffer.alloc(NODE_BYTES);

/** keccak256(keccak256(abi.encode(address, uint256))) into `target`: 12 zero bytes, the 20 address bytes, the amount as 32 bytes big-endian. */
function leafHashInto(addressKey: string, amount: bigint, target: Buffer, offset: number): void {
  assertInvariant(amount >= 0n && amount < 1n << 256n, `leaf amount out of uint256 range: ${amount}`);
  encoded.write(addressKey.slice(2), 12, 20, "hex");
  encoded.write(amount.toString(16).padStart(64, "0"), 32, 32, "hex");
  keccakInto(encoded, inner, 0);
  keccakInto(inner, target, offset);
}

export function leafHash(addressKey: string, amount: bigint): Buffer {
  const hash = Buffer.alloc(NODE_BYTES);
  leafHashInto(addressKey, amount, hash, 0);
  return hash;
}

/**
 * Builds the tree of `addresses[i]` (lowercase keys) with `amountOf(i)`, yielding to the event
 * loop as it goes. Amounts come from a function so a caller need not hold a million of them.
 */
export async function buildStandardTree(addresses: readonly string[], amountOf: (index: number) => bigint): Promise<StandardTree> {
  const count = addresses.length;
  assertInvariant(count > 0, "a Merkle tree needs at least one leaf");
  const leaves = Buffer.allocUnsafe(count * NODE_BYTES);
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % HASHES_PER_SLICE === 0) await yieldToEventLoop();
    leafHashInto(addresses[i]!, amountOf(i), leaves, i * NODE_BYTES);
  }
  const order = sortedByHash(leaves, count);
  const length = 2 * count - 1;
  const nodes = Buffer.allocUnsafe(length * NODE_BYTES);
  const treeIndexes = new Uint32Array(count);
  for (let rank = 0; rank < count; rank++) {
    const input = order[rank]!;
    const treeIndex = length - 1 - rank;
    leaves.copy(nodes, treeIndex * NODE_BYTES, input * NODE_BYTES, (input + 1) * NODE_BYTES);
    treeIndexes[input] = treeIndex;
  }
  await hashInnerNodes(nodes, length - 1 - count);
  return { root: `0x${nodes.toString("hex", 0, NODE_BYTES)}`, nodes, treeIndexes };
}

/** Input indexes ordered by their leaf hash, compared as bytes (what the library's sort does). */
function sortedByHash(leaves: Buffer, count: number): Uint32Array {
  // The first 6 bytes as a number decide almost every comparison without touching the Buffer.
  const prefixes = new Float64Array(count);
  for (let i = 0; i < count; i++) prefixes[i] = leaves.readUIntBE(i * NODE_BYTES, 6);
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  return order.sort((a, b) => {
    const byPrefix = prefixes[a]! - prefixes[b]!;
    if (byPrefix !== 0) return byPrefix;
    return leaves.compare(leaves, b * NODE_BYTES, (b + 1) * NODE_BYTES, a * NODE_BYTES, (a + 1) * NODE_BYTES);
  });
}

async function hashInnerNodes(nodes: Buffer, lastInner: number): Promise<void> {
  const pair = Buffer.allocUnsafe(2 * NODE_BYTES);
  for (let i = lastInner, done = 0; i >= 0; i--, done++) {
    if (done > 0 && done % HASHES_PER_SLICE === 0) await yieldToEventLoop();
    const left = (2 * i + 1) * NODE_BYTES;
    const right = left + NODE_BYTES;
    const leftFirst = nodes.compare(nodes, right, right + NODE_BYTES, left, left + NODE_BYTES) <= 0;
    nodes.copy(pair, 0, leftFirst ? left : right, (leftFirst ? left : right) + NODE_BYTES);
    nodes.copy(pair, NODE_BYTES, leftFirst ? right : left, (leftFirst ? right : left) + NODE_BYTES);
    keccakInto(pair, nodes, i * NODE_BYTES);
  }
}

/** Tree indexes of the siblings on the way from `treeIndex` to the root: the nodes a proof lists, in order. */
export function proofIndexes(treeIndex: number): number[] {
  const indexes: number[] = [];
  for (let index = treeIndex; index > 0; index = (index - 1) >> 1) {
    indexes.push(index % 2 === 1 ? index + 1 : index - 1);
  }
  return indexes;
}
