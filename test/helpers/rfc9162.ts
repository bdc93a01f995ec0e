import { createHash } from "node:crypto";

/**
 * An independent RFC 9162 implementation for tests: node:crypto instead of the service's hash
 * library, the tree built from whole arrays by the RFC's recursive definitions, and verification
 * by the inner/border decomposition of proofs (not the RFC's step loop the service uses), so a
 * mistake shared by both is unlikely. Never imports src/.
 */

export type Bytes = Uint8Array;

const sha = (...parts: Bytes[]): Bytes => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
};

export const refLeaf = (data: Bytes): Bytes => sha(Uint8Array.of(0), data);
export const refNode = (left: Bytes, right: Bytes): Bytes => sha(Uint8Array.of(1), left, right);

function split(n: number): number {
  return 2 ** Math.ceil(Math.log2(n)) / 2;
}

/** MTH over leaf hashes. */
export function refRoot(leaves: readonly Bytes[]): Bytes {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return leaves[0]!;
  const k = split(leaves.length);
  return refNode(refRoot(leaves.slice(0, k)), refRoot(leaves.slice(k)));
}

export function refInclusion(m: number, leaves: readonly Bytes[]): Bytes[] {
  if (leaves.length <= 1) return [];
  const k = split(leaves.length);
  return m < k
    ? [...refInclusion(m, leaves.slice(0, k)), refRoot(leaves.slice(k))]
    : [...refInclusion(m - k, leaves.slice(k)), refRoot(leaves.slice(0, k))];
}

function refSubproof(m: number, leaves: readonly Bytes[], complete: boolean): Bytes[] {
  if (m === leaves.length) return complete ? [] : [refRoot(leaves)];
  const k = split(leaves.length);
  return m <= k
    ? [...refSubproof(m, leaves.slice(0, k), complete), refRoot(leaves.slice(k))]
    : [...refSubproof(m - k, leaves.slice(k), false), refRoot(leaves.slice(0, k))];
}

export function refConsistency(m: number, leaves: readonly Bytes[]): Bytes[] {
  return m === 0 || m === leaves.length ? [] : refSubproof(m, leaves, true);
}

const same = (a: Bytes, b: Bytes) => Buffer.from(a).equals(Buffer.from(b));
const bitLength = (x: bigint) => (x === 0n ? 0 : x.toString(2).length);
const onesCount = (x: bigint) => [...x.toString(2)].filter((c) => c === "1").length;
const trailingZeros = (x: bigint) => {
  let n = 0;
  while (x > 0n && (x & 1n) === 0n) {
    x >>= 1n;
    n++;
  }
  return n;
};

function decompose(index: bigint, size: bigint): [number, number] {
  const inner = bitLength(index ^ (size - 1n));
  return [inner, onesCount(index >> BigInt(inner))];
}

function chainInner(seed: Bytes, proof: readonly Bytes[], index: bigint): Bytes {
  return proof.reduce((acc, h, i) => (((index >> BigInt(i)) & 1n) === 0n ? refNode(acc, h) : refNode(h, acc)), seed);
}

function chainInnerRight(seed: Bytes, proof: readonly Bytes[], index: bigint): Bytes {
  return proof.reduce((acc, h, i) => (((index >> BigInt(i)) & 1n) === 1n ? refNode(h, acc) : acc), seed);
}

const chainBorderRight = (seed: Bytes, proof: readonly Bytes[]) => proof.reduce((acc, h) => refNode(h, acc), seed);

export function refVerifyInclusion(index: number, size: number, leaf: Bytes, proof: readonly Bytes[], root: Bytes): boolean {
  if (index < 0 || index >= size) return false;
  const [inner, border] = decompose(BigInt(index), BigInt(size));
  if (proof.length !== inner + border) return false;
  return same(chainBorderRight(chainInner(leaf, proof.slice(0, inner), BigInt(index)), proof.slice(inner)), root);
}

export function refVerifyConsistency(size1: number, size2: number, root1: Bytes, root2: Bytes, proof: readonly Bytes[]): boolean {
  if (size2 < size1) return false;
  if (size1 === size2) return proof.length === 0 && same(root1, root2);
  if (size1 === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const [fullInner, border] = decompose(BigInt(size1 - 1), BigInt(size2));
  const shift = trailingZeros(BigInt(size1));
  const inner = fullInner - shift;
  const exact = size1 === 2 ** shift;
  const seed = exact ? root1 : proof[0]!;
  const rest = exact ? proof : proof.slice(1);
  if (rest.length !== inner + border) return false;
  const mask = BigInt(size1 - 1) >> BigInt(shift);
  const hash1 = chainBorderRight(chainInnerRight(seed, rest.slice(0, inner), mask), rest.slice(inner));
  const hash2 = chainBorderRight(chainInner(seed, rest.slice(0, inner), mask), rest.slice(inner));
  return same(hash1, root1) && same(hash2, root2);
}
