import { PointsApiError } from "./errors.js";
import type { Address, PointType, Points } from "./types.js";

/**
 * Snapshots (docs/api.md, Snapshots): the shapes the client sends and receives, and the checks on
 * the tree dump, which comes without the JSON envelope.
 */

/** What a snapshot measures: `available` (the default) or `receivedCumulative`. */
export type SnapshotMeasure = "available" | "receivedCumulative";

/** A 32-byte hash, `0x` + 64 hex digits. */
export type Hash = `0x${string}`;

export interface SnapshotRequest {
  pointType: PointType;
  /** Absent: `available`. */
  measure?: SnapshotMeasure;
  /** The token's precision, 12–36; absent: 18. Each leaf's amount is points × 10^decimals. */
  decimals?: number;
  /**
   * The balances as they stood at this time (at least 60 s in the past; an ISO string with its
   * zone, or a Date); absent: as they stand now. A season that ended on Sunday, snapshotted on Monday.
   */
  asOf?: string | Date;
}

/** The Snapshot object of docs/api.md. */
export interface Snapshot {
  id: string;
  pointType: PointType;
  measure: SnapshotMeasure;
  decimals: number;
  /** The time whose balances it measures; null when it measured them as they stood at `takenAt`. */
  asOf: string | null;
  takenAt: string;
  /** The Merkle root to publish in the distributor. */
  root: Hash;
  /** Addresses in the tree (those with a non-zero amount). */
  leafCount: number;
  /** The sum of the leaves, in points. */
  total: Points;
}

export interface TakenSnapshot {
  snapshot: Snapshot;
  /**
   * false when the service already had this snapshotId for the same pointType, measure,
   * decimals and asOf: an earlier attempt (whose answer was lost, or an earlier run) took it, and
   * `snapshot` is that one, with its own `takenAt`.
   */
  created: boolean;
}

/**
 * One address's leaf and proof. `amount` is the token amount (points × 10^decimals) as the
 * service sends it, a decimal integer string: exact at any size, JSON-safe, and the form the tree
 * dump and `StandardMerkleTree.verify` take. Pass `BigInt(amount)` to a contract call.
 */
export interface SnapshotProof {
  /** EIP-55 spelling, as in the leaf. */
  address: Address;
  amount: string;
  /** The same amount in points. */
  points: Points;
  /** Sibling hashes from the leaf up, for OpenZeppelin's `MerkleProof.verify`. */
  proof: Hash[];
}

/**
 * The tree as `StandardMerkleTree.dump()` writes it (format standard-v1): give it to
 * `StandardMerkleTree.load` of @openzeppelin/merkle-tree, which checks every node again.
 */
export interface SnapshotTreeDump {
  format: "standard-v1";
  leafEncoding: ["address", "uint256"];
  tree: Hash[];
  /** In address order; `value` is `[address, amount]` with the amount a decimal integer string. */
  values: { value: [Address, string]; treeIndex: number }[];
}

/** Parses the tree dump's text, refusing anything that is not a standard-v1 dump of address/uint256 leaves. */
export function parseTreeDump(text: string, snapshotId: string): SnapshotTreeDump {
  let dump: unknown;
  try {
    dump = JSON.parse(text);
  } catch {
    dump = null;
  }
  const candidate = dump as Partial<SnapshotTreeDump> | null;
  const wellFormed =
    typeof candidate === "object" &&
    candidate !== null &&
    candidate.format === "standard-v1" &&
    Array.isArray(candidate.tree) &&
    Array.isArray(candidate.values) &&
    JSON.stringify(candidate.leafEncoding) === '["address","uint256"]';
  // A cut or foreign body (a proxy's page) is the answer's fault, not the caller's: INTERNAL, like a body without `success`.
  if (!wellFormed) throw new PointsApiError("INTERNAL", 200, `the tree of snapshot ${snapshotId} is not a standard-v1 dump`);
  return candidate as SnapshotTreeDump;
}
