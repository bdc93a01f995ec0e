import { ZERO_BALANCE, type Balance } from "../../domain/balance.js";
import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { straddlingDayRead, straddlingDayUnits, type BatchStateAsOf } from "../../domain/history.js";
import type { BalanceAsOf, HistoryReadPort, HistoryStore } from "../ports/leaderboards.js";
import { fromTriple, statement, toNumber, type SqliteDb } from "./db.js";
import { readProjectionFirst } from "./projection-file.js";
import { ADDRESS_TEXT, addressBytes } from "./leaderboards.js";

/**
 * Balances as they stood at a time (API.md "Leaderboards and history", `asOf`), read from the
 * rows that carry their own times: credits (created_at_ms), received_daily (per UTC day, with its
 * first and last receipt times: the projection's, src/ledger/projection.ts), the batches finalized
 * that it has not applied yet (projection_queue), and the address's own batches (created,
 * cancelled, finalized).
 *
 * Each read is one index range of addresses: one address (`= ?`, which lets batches_listing
 * (contract, created_at_ms, seq) bound the creation time too) or a snapshot page's (after, through]
 * (`BETWEEN`, the previous page's last address dropped). credits and received_daily are read by
 * their address-first keys.
 *
 * Sums are exact. SQLite's sum() of 64-bit integers stops with an overflow error, so received
 * and sent amounts are summed in SQL as limbs small enough never to overflow (whole points split
 * at 10^9, fractions at 10^6: over 9·10^9 rows each) and joined with BigInt here: a contract's
 * 20,000 batches are summed in about 14 ms where reading them as rows took 85 ms.
 * credits.amount_units is text wider than 64 bits: summed here, with BigInt (an address has
 * few credits).
 */

type Range = { kind: "one"; address: string } | { kind: "between"; low: string; high: string };

const RANGE_SQL = { one: (column: string) => `${column} = @low`, between: (column: string) => `${column} BETWEEN @low AND @high` };

/** whole points (< 2^63) and fraction (< 10^12) columns as four sums that cannot overflow. */
const LIMB_SUMS = (w: string, f: string) =>
  `sum(${w} / 1000000000) AS wh, sum(${w} % 1000000000) AS wl, sum(${f} / 1000000) AS fh, sum(${f} % 1000000) AS fl`;

const creditsSql = (range: Range["kind"]) =>
  `SELECT address, point_type, amount_units FROM credits WHERE ${RANGE_SQL[range]("address")} AND created_at_ms <= @asOf`;

// received_daily (keyed by the address's 20 bytes and the board): the days whose last receipt was
// by then count whole; a day whose receipts straddle the time (first ≤ asOf < last: only asOf's
// own day can) is read from that day's batches of its board (PARTIAL_RECEIPTS_SQL), on the
// shorter side of asOf (domain/history.ts straddlingDayRead). The scan reads each batch's
// transfers, so it costs the batches of the side it reads.
const RECEIPTS_RANGE_SQL = {
  one: "r.address = @lowBytes",
  between: "r.address BETWEEN @lowBytes AND @highBytes",
};

const receiptsSql = (range: Range["kind"]) =>
  `SELECT ${ADDRESS_TEXT("r.address")} AS address, bo.point_type, sum(r.amount_q) AS q, ${LIMB_SUMS("r.amount_w", "r.amount_f")}
   FROM received_daily r JOIN boards bo ON bo.board = r.board
   WHERE ${RECEIPTS_RANGE_SQL[range]} AND r.last_at_ms <= @asOf GROUP BY r.address, bo.point_type`;

const straddlingDaysSql = (range: Range["kind"]) =>
  `SELECT ${ADDRESS_TEXT("r.address")} AS address, bo.point_type, bo.contract, r.first_at_ms, r.last_at_ms,
     r.amount_q, r.amount_w, r.amount_f
   FROM received_daily r JOIN boards bo ON bo.board = r.board
   WHERE ${RECEIPTS_RANGE_SQL[range]} AND r.first_at_ms <= @asOf AND r.last_at_ms > @asOf`;

/** Part of a straddling day: the address's transfers in its board's batches finalized in [from, to]. */
const PARTIAL_RECEIPTS_SQL = `SELECT ${LIMB_SUMS("t.amount_w", "t.amount_f")}
   FROM batches b INDEXED BY batches_finalized JOIN transfers t ON t.seq = b.seq
   WHERE b.contract = @contract AND b.point_type = @pointType AND b.status = 'FINALIZED'
     AND b.finalized_at_ms BETWEEN @from AND @to AND t.to_address = @address`;

interface StraddlingDay {
  address: string;
  point_type: string;
  contract: string;
  first_at_ms: bigint;
  last_at_ms: bigint;
  amount_q: bigint;
  amount_w: bigint;
  amount_f: bigint;
}

/** A straddling day's receipts by asOfMs, read on the side domain/history.ts straddlingDayRead picks. */
function readStraddlingDay(db: SqliteDb, day: StraddlingDay, asOfMs: number): bigint {
  const read = straddlingDayRead(toNumber(day.first_at_ms), toNumber(day.last_at_ms), asOfMs);
  const sums = statement(db, PARTIAL_RECEIPTS_SQL).get({
    contract: day.contract,
    pointType: day.point_type,
    address: day.address,
    from: read.fromMs,
    to: read.toMs,
  }) as Limbs;
  return straddlingDayUnits(read, fromTriple(day.amount_q, day.amount_w, day.amount_f), unitsOf(sums));
}

// The batches finalized by then that the projection has not applied yet (projection_queue past
// the projection file's through, so none of them is in received_daily): the address's transfers in
// each, read from the batch's own rows (a scan of its transfers: the queue is short under normal
// load, a second of batches).
const queuedReceiptsSql = (range: Range["kind"]) =>
  `SELECT t.to_address AS address, b.point_type, ${LIMB_SUMS("t.amount_w", "t.amount_f")}
   FROM projection_queue q JOIN batches b ON b.seq = q.seq JOIN transfers t ON t.seq = q.seq
   WHERE q.finalized_at_ms <= @asOf AND q.finalized_at_ms > (SELECT through_ms FROM projection_through WHERE id = 1)
     AND ${RANGE_SQL[range]("t.to_address")}
   GROUP BY t.to_address, b.point_type`;

/**
 * domain/history.ts batchStateAsOf of a batch's finalized and cancelled times (NULL: never) at
 * asOf, in SQL: 'finalized', 'cancelled' or 'pending' (test/history-rules.test.ts pins the two).
 */
export const batchStateSql = (finalizedAt: string, cancelledAt: string, asOf: string) =>
  `CASE WHEN ${finalizedAt} <= ${asOf} THEN 'finalized' WHEN ${cancelledAt} <= ${asOf} THEN 'cancelled' ELSE 'pending' END`;

// A batch created by then, summed by where it stood then (batchStateSql).
// INDEXED BY: the partial indexes that also lead with contract hold only some batches.
const sentSql = (range: Range["kind"]) =>
  `SELECT contract AS address, point_type, ${batchStateSql("finalized_at_ms", "cancelled_at_ms", "@asOf")} AS state,
     ${LIMB_SUMS("total_w", "total_f")}
   FROM batches INDEXED BY batches_listing WHERE ${RANGE_SQL[range]("contract")} AND created_at_ms <= @asOf
   GROUP BY contract, point_type, state`;

/** The four sums of LIMB_SUMS. */
interface Limbs {
  wh: bigint | null;
  wl: bigint | null;
  fh: bigint | null;
  fl: bigint | null;
}

interface LimbSums extends Limbs {
  address: string;
  point_type: string;
}

/** Units of the limb sums (see LIMB_SUMS), with `q` 10^18-point limbs. */
function unitsOf(row: Limbs, q: bigint = 0n): bigint {
  // sum() over no rows is NULL.
  const whole = (row.wh ?? 0n) * 1_000_000_000n + (row.wl ?? 0n);
  const fraction = (row.fh ?? 0n) * 1_000_000n + (row.fl ?? 0n);
  return fromTriple(q, whole, fraction);
}

/** The balances of one address range of the given point types, by `address point_type`; absent: zero. */
function balancesInRange(db: SqliteDb, pointTypes: ReadonlySet<string>, range: Range, asOfMs: number): Map<string, Balance> {
  const balances = new Map<string, Balance>();
  const add = (address: string, pointType: string, field: keyof Balance, units: bigint) => {
    if (!pointTypes.has(pointType)) return;
    const key = `${address} ${pointType}`;
    const balance = { ...(balances.get(key) ?? ZERO_BALANCE) };
    balance[field] += units;
    balances.set(key, balance);
  };
  const params =
    range.kind === "one"
      ? { low: range.address, lowBytes: addressBytes(range.address), asOf: asOfMs }
      : { low: range.low, high: range.high, lowBytes: addressBytes(range.low), highBytes: addressBytes(range.high), asOf: asOfMs };
  for (const row of statement(db, creditsSql(range.kind)).all(params) as { address: string; point_type: string; amount_units: string }[]) {
    add(row.address, row.point_type, "earnedCumulative", BigInt(row.amount_units));
  }
  for (const row of statement(db, receiptsSql(range.kind)).all(params) as (LimbSums & { q: bigint })[]) {
    add(row.address, row.point_type, "receivedCumulative", unitsOf(row, row.q));
  }
  for (const day of statement(db, straddlingDaysSql(range.kind)).all(params) as StraddlingDay[]) {
    add(day.address, day.point_type, "receivedCumulative", readStraddlingDay(db, day, asOfMs));
  }
  for (const row of statement(db, queuedReceiptsSql(range.kind)).all(params) as LimbSums[]) {
    add(row.address, row.point_type, "receivedCumulative", unitsOf(row));
  }
  for (const row of statement(db, sentSql(range.kind)).all(params) as (LimbSums & { state: BatchStateAsOf })[]) {
    if (row.state === "finalized") add(row.address, row.point_type, "finalizedSentCumulative", unitsOf(row));
    else if (row.state === "pending") add(row.address, row.point_type, "pendingSent", unitsOf(row));
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
  const found = db.transaction(() => {
    readProjectionFirst(db);
    return balancesInRange(db, new Set(pointTypes), { kind: "one", address }, asOfMs);
  })();
  const balances = {} as Record<T, Balance>;
  for (const pointType of pointTypes) balances[pointType] = found.get(`${address} ${pointType}`) ?? ZERO_BALANCE;
  return balances;
}

/**
 * HistoryReadPort.readBalancesAsOf: the balances at asOfMs of the addresses in (after, through]
 * with any history of the point type, by address. Run inside the caller's read transaction.
 */
function readBalancesAsOf(db: SqliteDb, pointType: PointType, afterAddress: string, throughAddress: string, asOfMs: number): BalanceAsOf[] {
  const range: Range = { kind: "between", low: afterAddress, high: throughAddress };
  const balances: BalanceAsOf[] = [];
  for (const [key, balance] of balancesInRange(db, new Set([pointType]), range, asOfMs)) {
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
