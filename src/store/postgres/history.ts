import { ZERO_BALANCE, type Balance } from "../../domain/balance.js";
import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import type { BalanceAsOf, HistoryReadPort, HistoryStore } from "../ports/leaderboards.js";
import { toUnits, type Queryable } from "./db.js";

/**
 * Balances as they stood at a time (API.md "Leaderboards and history", `asOf`), read from the
 * rows that carry their own times: credits (created_at_ms), received_daily (per UTC day, with its
 * first and last receipt times: the projection's, src/ledger/projection.ts), the finalized batches
 * it has not applied yet (projection_queue), and the address's own batches (created, cancelled,
 * finalized), summed exactly in NUMERIC.
 *
 * One statement reads one index range of addresses [$1, $2] (one address: $1 = $2) from each:
 * credits and received_daily by their address-first keys, batches by batches_listing
 * (contract, created_at_ms, seq). One statement is one snapshot of the database: a batch
 * finalizing meanwhile is in it wholly or not at all.
 *
 * received_daily, read once in its key's order and summed per address before the union (a page
 * of a snapshot asOf reads ≈ 9 rows an address; two scans and a sort of them all took twice as
 * long at 10,000,000 transfers): the days whose last receipt was by then count whole; a day whose
 * receipts straddle the time (first ≤ asOf < last: only asOf's own day can) is read from that
 * day's batches of its contract (batches_finalized), by a subquery that runs for those rows only,
 * on the shorter side of asOf (domain/history.ts straddlingDayRead, in SQL: straddlingReadSql).
 * Each batch read costs its transfers, so this reads the batches of one side only.
 *
 * The batches finalized by then that the projection has not applied yet (projection_queue) are
 * added from their own transfers (a scan of each queued batch's: the queue is short under normal
 * load, a second of batches). All of them finalized after its through, so none is in
 * received_daily, nor in a straddling day's [first, last] (whose last receipt is an applied one);
 * the pass that applies them deletes them from the queue in the same commit, so the statement's
 * one snapshot counts each once.
 */
const partialReceiptsSql = (from: string, to: string) => `(
             SELECT coalesce(sum(t.amount_units), 0) FROM batches b JOIN transfers t ON t.seq = b.seq
             WHERE b.contract = d.contract AND b.point_type = d.point_type AND b.status = 'FINALIZED'
               AND b.finalized_at_ms BETWEEN ${from} AND ${to} AND t.to_address = d.address)`;

/**
 * domain/history.ts straddlingDayRead of a received_daily row `d` (first_at_ms, last_at_ms) at
 * asOf, in SQL: `before` is true when it reads the receipts of [before.from, before.to], false
 * when those of [after.from, after.to] (test/history-rules.test.ts pins the two).
 */
export function straddlingReadSql(d: string, asOf: string) {
  return {
    before: `${asOf} - ${d}.first_at_ms <= ${d}.last_at_ms - ${asOf}`,
    beforeRange: { from: `${d}.first_at_ms`, to: asOf },
    afterRange: { from: `${asOf} + 1`, to: `${d}.last_at_ms` },
  };
}

/**
 * domain/history.ts batchStateAsOf of a batch's finalized and cancelled times (NULL: never) at
 * asOf, in SQL: 'finalized', 'cancelled' or 'pending' (test/history-rules.test.ts pins the two).
 */
export const batchStateSql = (finalizedAt: string, cancelledAt: string, asOf: string) =>
  `CASE WHEN ${finalizedAt} <= ${asOf} THEN 'finalized' WHEN ${cancelledAt} <= ${asOf} THEN 'cancelled' ELSE 'pending' END`;

const STRADDLING = straddlingReadSql("d", "$4");
const BATCH_STATE = batchStateSql("finalized_at_ms", "cancelled_at_ms", "$4");

const BALANCES_AS_OF_SQL = `
  SELECT address, point_type, sum(earned) AS earned, sum(received) AS received,
         sum(finalized_sent) AS finalized_sent, sum(pending) AS pending
  FROM (
    SELECT address, point_type, amount_units AS earned, 0::numeric AS received, 0::numeric AS finalized_sent, 0::numeric AS pending
    FROM credits WHERE address BETWEEN $1 AND $2 AND point_type = ANY($3::text[]) AND created_at_ms <= $4
    UNION ALL
    SELECT d.address, d.point_type, 0,
           sum(CASE WHEN d.last_at_ms <= $4 THEN d.amount_units
                    WHEN ${STRADDLING.before} THEN ${partialReceiptsSql(STRADDLING.beforeRange.from, STRADDLING.beforeRange.to)}
                    ELSE d.amount_units - ${partialReceiptsSql(STRADDLING.afterRange.from, STRADDLING.afterRange.to)} END),
           0, 0
    FROM received_daily d
    WHERE d.address BETWEEN $1 AND $2 AND d.point_type = ANY($3::text[]) AND d.first_at_ms <= $4
    GROUP BY d.address, d.point_type
    UNION ALL
    SELECT t.to_address, b.point_type, 0, sum(t.amount_units), 0, 0
    FROM projection_queue q JOIN batches b ON b.seq = q.seq JOIN transfers t ON t.seq = q.seq
    WHERE q.finalized_at_ms <= $4 AND t.to_address BETWEEN $1 AND $2 AND b.point_type = ANY($3::text[])
    GROUP BY t.to_address, b.point_type
    UNION ALL
    SELECT contract, point_type, 0,
           0,
           CASE ${BATCH_STATE} WHEN 'finalized' THEN total_units ELSE 0 END,
           CASE ${BATCH_STATE} WHEN 'pending' THEN total_units ELSE 0 END
    FROM batches WHERE contract BETWEEN $1 AND $2 AND point_type = ANY($3::text[]) AND created_at_ms <= $4
  ) AS history
  GROUP BY address, point_type
  ORDER BY address, point_type`;

interface HistoryRow {
  address: string;
  point_type: string;
  earned: string;
  received: string;
  finalized_sent: string;
  pending: string;
}

function toBalance(row: HistoryRow): Balance {
  return {
    earnedCumulative: toUnits(row.earned),
    receivedCumulative: toUnits(row.received),
    finalizedSentCumulative: toUnits(row.finalized_sent),
    pendingSent: toUnits(row.pending),
  };
}

async function balancesInRange(
  db: Queryable,
  pointTypes: readonly string[],
  low: string,
  high: string,
  asOfMs: number,
): Promise<HistoryRow[]> {
  const { rows } = await db.query<HistoryRow>({
    name: "pl-balances-as-of",
    text: BALANCES_AS_OF_SQL,
    values: [low, high, pointTypes, asOfMs],
  });
  return rows;
}

/** HistoryStore.getBalancesAsOf: one statement over three ranges of one address (and its straddling day's batches). */
export async function getBalancesAsOf<T extends PointType>(
  db: Queryable,
  address: AddressKey,
  pointTypes: readonly T[],
  asOfMs: number,
): Promise<Record<T, Balance>> {
  const balances = {} as Record<T, Balance>;
  for (const pointType of pointTypes) balances[pointType] = ZERO_BALANCE;
  for (const row of await balancesInRange(db, pointTypes, address, address, asOfMs)) {
    balances[row.point_type as T] = toBalance(row);
  }
  return balances;
}

/**
 * HistoryReadPort.readBalancesAsOf: the balances at asOfMs of the addresses in (after, through]
 * with any history of the point type, by address. Run inside the caller's REPEATABLE READ transaction.
 */
async function readBalancesAsOf(
  db: Queryable,
  pointType: PointType,
  afterAddress: string,
  throughAddress: string,
  asOfMs: number,
): Promise<BalanceAsOf[]> {
  const rows = await balancesInRange(db, [pointType], afterAddress, throughAddress, asOfMs);
  // BETWEEN includes `after`, which the previous page already measured.
  return rows
    .filter((row) => row.address !== afterAddress)
    .map((row) => ({ address: row.address as AddressKey, pointType, balance: toBalance(row) }));
}

export const history = { readBalancesAsOf } satisfies HistoryReadPort<Queryable, "async">;

/** The port's history reads on `pool`, each through `run` (index.ts: the pool's guard). */
export function historyOperations(pool: Queryable, run: <T>(work: () => Promise<T>) => Promise<T>) {
  return {
    getBalancesAsOf: (address, pointTypes, asOfMs) => run(() => getBalancesAsOf(pool, address, pointTypes, asOfMs)),
  } satisfies HistoryStore;
}
