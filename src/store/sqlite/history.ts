import { ZERO_BALANCE, type Balance } from "../../domain/balance.js";
import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { BalanceAsOf, HistoryReadPort, HistoryStore } from "../ports/leaderboards.js";
import { fromPair, fromTriple, statement, type SqliteDb } from "./db.js";

/**
 * Balances as they stood at a time (API.md "Leaderboards and history", `asOf`), read from the
 * rows that carry their own times: credits (created_at_ms), received_history (finalized_at_ms)
 * and the address's own batches (created, cancelled, finalized). Amounts are summed here with
 * BigInt, exactly: credits.amount_units is text, and a sum() of the `_w` limbs over many rows
 * could overflow SQLite's 64-bit integers.
 *
 * Every query reads one index range of addresses [low, high] (one address: low = high):
 * credits and received_history by their address-first keys, batches by batches_listing
 * (contract, created_at_ms, seq), so an address's balance is three ranges however large the ledger.
 */

interface CreditRow {
  address: string;
  point_type: string;
  amount_units: string;
}

interface ReceiptRow {
  address: string;
  point_type: string;
  amount_q: bigint;
  amount_w: bigint;
  amount_f: bigint;
}

interface SentRow {
  address: string;
  point_type: string;
  total_w: bigint;
  total_f: bigint;
  finalized_at_ms: bigint | null;
  cancelled_at_ms: bigint | null;
}

const CREDITS_SQL = `SELECT address, point_type, amount_units FROM credits
  WHERE address BETWEEN ? AND ? AND created_at_ms <= ?`;
const RECEIPTS_SQL = `SELECT address, point_type, amount_q, amount_w, amount_f FROM received_history
  WHERE address BETWEEN ? AND ? AND finalized_at_ms <= ?`;
// INDEXED BY: the partial indexes that also lead with contract (batches_pending_by_contract,
// batches_finalized) hold only some batches; this read needs every batch created by then.
const SENT_SQL = `SELECT contract AS address, point_type, total_w, total_f, finalized_at_ms, cancelled_at_ms
  FROM batches INDEXED BY batches_listing WHERE contract BETWEEN ? AND ? AND created_at_ms <= ?`;

/** The balances of one address range of the given point types; a key is `address point_type`; absent: zero. */
function balancesInRange(db: SqliteDb, pointTypes: ReadonlySet<string>, low: string, high: string, asOfMs: number): Map<string, Balance> {
  const balances = new Map<string, Balance>();
  const add = (address: string, pointType: string, change: Partial<Balance>) => {
    if (!pointTypes.has(pointType)) return;
    const key = `${address} ${pointType}`;
    const before = balances.get(key) ?? ZERO_BALANCE;
    balances.set(key, {
      earnedCumulative: before.earnedCumulative + (change.earnedCumulative ?? 0n),
      receivedCumulative: before.receivedCumulative + (change.receivedCumulative ?? 0n),
      finalizedSentCumulative: before.finalizedSentCumulative + (change.finalizedSentCumulative ?? 0n),
      pendingSent: before.pendingSent + (change.pendingSent ?? 0n),
    });
  };
  const asOf = BigInt(asOfMs);
  for (const row of statement(db, CREDITS_SQL).all(low, high, asOfMs) as CreditRow[]) {
    add(row.address, row.point_type, { earnedCumulative: BigInt(row.amount_units) });
  }
  for (const row of statement(db, RECEIPTS_SQL).all(low, high, asOfMs) as ReceiptRow[]) {
    add(row.address, row.point_type, { receivedCumulative: fromTriple(row.amount_q, row.amount_w, row.amount_f) });
  }
  for (const row of statement(db, SENT_SQL).all(low, high, asOfMs) as SentRow[]) {
    const total = fromPair(row.total_w, row.total_f);
    if (row.finalized_at_ms !== null && row.finalized_at_ms <= asOf) add(row.address, row.point_type, { finalizedSentCumulative: total });
    else if (row.cancelled_at_ms === null || row.cancelled_at_ms > asOf) add(row.address, row.point_type, { pendingSent: total });
  }
  return balances;
}

/** HistoryStore.getBalancesAsOf: one consistent read (a read transaction) of three ranges of one address. */
export function getBalancesAsOf<T extends PointType>(
  db: SqliteDb,
  address: AddressKey,
  pointTypes: readonly T[],
  asOfMs: number,
): Record<T, Balance> {
  const read = db.transaction(() => balancesInRange(db, new Set(pointTypes), address, address, asOfMs));
  const found = read();
  const balances = {} as Record<T, Balance>;
  for (const pointType of pointTypes) balances[pointType] = found.get(`${address} ${pointType}`) ?? ZERO_BALANCE;
  return balances;
}

/**
 * HistoryReadPort.readBalancesAsOf: the balances at asOfMs of the addresses in (after, through]
 * with any history of the point type, by address. Run inside the caller's read transaction.
 */
function readBalancesAsOf(db: SqliteDb, pointType: PointType, afterAddress: string, throughAddress: string, asOfMs: number): BalanceAsOf[] {
  const found = balancesInRange(db, new Set([pointType]), afterAddress, throughAddress, asOfMs);
  const balances: BalanceAsOf[] = [];
  for (const [key, balance] of found) {
    const address = key.slice(0, key.indexOf(" ")) as AddressKey;
    // BETWEEN includes `after`, which the previous page already measured.
    if (address !== afterAddress) balances.push({ address, pointType, balance });
  }
  return balances.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

export const history = { readBalancesAsOf } satisfies HistoryReadPort<SqliteDb, "sync">;

/** The port's history reads over the connection `current()` returns (index.ts may reopen it). */
export function historyOperations(current: () => SqliteDb) {
  return {
    getBalancesAsOf: async (address, pointTypes, asOfMs) => getBalancesAsOf(current(), address, pointTypes, asOfMs),
  } satisfies HistoryStore;
}
