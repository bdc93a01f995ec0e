import sha3 from "js-sha3";
import type { AddressKey } from "./address.js";
import { availableOf, ZERO_BALANCE, type Balance } from "./balance.js";
import type { PointType } from "./batch.js";
import { assertInvariant, InvariantViolation } from "./errors.js";
import { isoTime } from "./json.js";
import { formatPoints, POINT_DECIMALS } from "./points.js";
import { SNAPSHOT_AS_OF_MIN_AGE_MS } from "./limits.js";

export { SNAPSHOT_AS_OF_MIN_AGE_MS };

/**
 * Snapshots (docs/api.md, Snapshots): every address's balance of one point type at one consistent
 * moment, as the leaves of a StandardMerkleTree (./merkle.ts) that a Merkle distributor verifies.
 */

export const SNAPSHOT_MEASURES = ["available", "receivedCumulative"] as const;
export type SnapshotMeasure = (typeof SNAPSHOT_MEASURES)[number];
/** `decimals`: the token's precision. At least POINT_DECIMALS, so points × 10^decimals is a whole number. */
export const SNAPSHOT_DECIMALS_MIN = POINT_DECIMALS;
export const SNAPSHOT_DECIMALS_MAX = 36;
export const SNAPSHOT_DECIMALS_DEFAULT = 18;
/** Leaves stored per row (≈ 80 KB of text): a proof reads one row, the dump reads them in order. */
export const LEAVES_PER_CHUNK = 1024;
/** Tree nodes stored per row (32 KB): a proof of a 1,000,000-leaf tree reads about a dozen. */
export const NODES_PER_CHUNK = 1024;

export interface SnapshotRequest {
  id: string;
  pointType: PointType;
  measure: SnapshotMeasure;
  decimals: number;
  /** The time whose balances it measures (API.md History, `asOf`); null: as they stand when it is taken. */
  asOfMs: number | null;
}

export interface Snapshot extends SnapshotRequest {
  takenAtMs: number;
  root: string;
  leafCount: number;
  /** The sum of the leaves, in units of 10^-12 point. */
  totalUnits: bigint;
}

/** One leaf as stored: the checksummed address, its amount in token units and its place in the tree. */
export interface SnapshotLeaf {
  address: `0x${string}`;
  amount: bigint;
  treeIndex: number;
}

/** Every positive amount of one point type at one consistent moment, by address (columns, for memory). */
export interface SnapshotHoldings {
  addresses: AddressKey[];
  /** In units of 10^-12 point, each > 0. */
  units: bigint[];
}

/** An account's amount in a snapshot of `measure` (PostgreSQL computes the same in SQL: MEASURE_SQL). */
export function measuredUnits(balance: Balance, measure: SnapshotMeasure): bigint {
  return measure === "available" ? availableOf(balance) : balance.receivedCumulative;
}

/**
 * What goes into a snapshot, decided once for both adapters: from one page of a holdings read
 * (account rows after `after`, by address, each measured by `unitsOf`), the accounts whose amount
 * is positive. The rows are the adapter's own, read in place (no copy of a page). A negative amount or
 * a row out of address order is a broken ledger or a broken read, so it stops the build rather
 * than publishing a wrong tree. Returns the address to read after, or null when the page was
 * the last one (shorter than `pageSize`).
 */
export function addHoldingsPage<Row extends { address: string }>(
  holdings: SnapshotHoldings,
  after: string,
  page: readonly Row[],
  pageSize: number,
  unitsOf: (row: Row) => bigint,
): string | null {
  let previous = after;
  for (const row of page) {
    const { address } = row;
    const units = unitsOf(row);
    // Checked before the message is built: a million template strings would double the read's CPU time.
    if (address <= previous) throw new InvariantViolation(`holdings read out of address order at ${address}`);
    if (units < 0n) throw new InvariantViolation(`negative snapshot amount for ${address}`);
    previous = address;
    if (units === 0n) continue;
    holdings.addresses.push(address as AddressKey);
    holdings.units.push(units);
  }
  return page.length === pageSize ? previous : null;
}

/**
 * One page of a holdings read as of a time, decided once for both adapters: `page` holds the
 * page's addresses (from accounts, by address: every address with any history has an account of
 * the type), `balancesAsOf` the balances of that whole address range as of then (those without one
 * held nothing then). Returns as addHoldingsPage does.
 */
export function addHoldingsPageAsOf(
  holdings: SnapshotHoldings,
  after: string,
  page: readonly { address: string }[],
  balancesAsOf: readonly { address: string; balance: Balance }[],
  pageSize: number,
  measure: SnapshotMeasure,
): string | null {
  const balances = new Map(balancesAsOf.map((found) => [found.address, found.balance]));
  return addHoldingsPage(holdings, after, page, pageSize, (row) => measuredUnits(balances.get(row.address) ?? ZERO_BALANCE, measure));
}

/** points × 10^decimals, exactly: units are 10^-12 point and decimals ≥ 12. */
export function amountOf(units: bigint, decimals: number): bigint {
  assertInvariant(decimals >= SNAPSHOT_DECIMALS_MIN && decimals <= SNAPSHOT_DECIMALS_MAX, `decimals out of range: ${decimals}`);
  return units * 10n ** BigInt(decimals - POINT_DECIMALS);
}

/** The inverse of amountOf, for the `points` of a proof. */
export function unitsOf(amount: bigint, decimals: number): bigint {
  const scale = 10n ** BigInt(decimals - POINT_DECIMALS);
  assertInvariant(amount % scale === 0n, `amount ${amount} is not a whole number of units at ${decimals} decimals`);
  return amount / scale;
}

export function snapshotMatchesRequest(stored: Snapshot, request: SnapshotRequest): boolean {
  return (
    stored.pointType === request.pointType &&
    stored.measure === request.measure &&
    stored.decimals === request.decimals &&
    stored.asOfMs === request.asOfMs
  );
}

/** Why `asOfMs` cannot be a snapshot's `asOf` at nowMs (too recent, or in the future), or null when it can. */
export function asOfProblem(asOfMs: number, nowMs: number): string | null {
  if (asOfMs > nowMs - SNAPSHOT_AS_OF_MIN_AGE_MS) return `must be at least ${SNAPSHOT_AS_OF_MIN_AGE_MS / 1000} s in the past`;
  return null;
}

/** The Snapshot object of docs/api.md. */
export function snapshotJson(snapshot: Snapshot) {
  return {
    id: snapshot.id,
    pointType: snapshot.pointType,
    measure: snapshot.measure,
    decimals: snapshot.decimals,
    asOf: snapshot.asOfMs === null ? null : isoTime(snapshot.asOfMs),
    takenAt: isoTime(snapshot.takenAtMs),
    root: snapshot.root,
    leafCount: snapshot.leafCount,
    total: formatPoints(snapshot.totalUnits),
  };
}
export type SnapshotJson = ReturnType<typeof snapshotJson>;

/**
 * EIP-55 without ./address.ts's cache: a snapshot checksums every holder once, and a million
 * one-off entries would push out the recurring recipients that cache is sized for.
 */
export function checksumOnce(key: AddressKey | string): `0x${string}` {
  const hex = key.slice(2);
  // digest (a plain array), not a hex string: each nibble is read from its byte.
  const hash = sha3.keccak256.digest(hex);
  const codes = new Array<number>(40);
  for (let i = 0; i < 40; i++) {
    const code = hex.charCodeAt(i);
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 15;
    codes[i] = code >= 97 && nibble >= 8 ? code - 32 : code;
  }
  return `0x${String.fromCharCode(...codes)}`;
}

/** A chunk of leaves as one text row: `address,amount,treeIndex` lines (no field can hold a comma or a newline). */
export function encodeLeafChunk(leaves: readonly SnapshotLeaf[]): string {
  return leaves.map((leaf) => `${leaf.address},${leaf.amount},${leaf.treeIndex}`).join("\n");
}

const LEAF_LINE = /^(0x[0-9a-fA-F]{40}),([0-9]{1,80}),([0-9]{1,10})$/;

export function decodeLeafChunk(text: string): SnapshotLeaf[] {
  return text.split("\n").map((line) => {
    const match = LEAF_LINE.exec(line);
    assertInvariant(match !== null, "a stored snapshot leaf is malformed");
    return { address: match[1] as `0x${string}`, amount: BigInt(match[2]!), treeIndex: Number(match[3]) };
  });
}
