import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { MAX_POINTS_UNITS } from "../../domain/points.js";
import type { Balance, Balances } from "../store.js";
import { toUnits, type Queryable } from "./db.js";

const ZERO_BALANCE: Balance = {
  earnedCumulative: 0n,
  receivedCumulative: 0n,
  finalizedSentCumulative: 0n,
  pendingSent: 0n,
};

/** available = earned + received − finalizedSent − pending, as SQL over an account row `a`. */
export const AVAILABLE_SQL = "(a.earned_units + a.received_units - a.finalized_sent_units - a.pending_units)";

/** Named columns rather than `*`, so a later migration cannot change a prepared statement's result. */
const BALANCE_COLUMNS = "point_type, earned_units, received_units, finalized_sent_units, pending_units";

interface AccountRow {
  point_type: PointType;
  earned_units: string;
  received_units: string;
  finalized_sent_units: string;
  pending_units: string;
}

export function toBalance(row: AccountRow): Balance {
  return {
    earnedCumulative: toUnits(row.earned_units),
    receivedCumulative: toUnits(row.received_units),
    finalizedSentCumulative: toUnits(row.finalized_sent_units),
    pendingSent: toUnits(row.pending_units),
  };
}

export async function readBalance(db: Queryable, address: AddressKey, pointType: PointType): Promise<Balance> {
  const { rows } = await db.query<AccountRow>({
    name: "pl-read-balance",
    text: `SELECT ${BALANCE_COLUMNS} FROM accounts WHERE address = $1 AND point_type = $2`,
    values: [address, pointType],
  });
  return rows[0] ? toBalance(rows[0]) : ZERO_BALANCE;
}

export async function readBalances(db: Queryable, address: AddressKey): Promise<Balances> {
  const balances = { PHASE2_POINTS: ZERO_BALANCE, PHASE2_GOLD: ZERO_BALANCE };
  const { rows } = await db.query<AccountRow>({
    name: "pl-read-balances",
    text: `SELECT ${BALANCE_COLUMNS} FROM accounts WHERE address = $1`,
    values: [address],
  });
  for (const row of rows) balances[row.point_type] = toBalance(row);
  return balances;
}

/**
 * pendingSent += amount if available ≥ amount, as one guarded UPDATE: the row lock it takes makes
 * concurrent reservations queue, and each re-checks the guard against the row it finally locks,
 * so no interleaving can overdraw. False when the account lacks the funds or has no row.
 */
export async function reservePending(db: Queryable, address: AddressKey, pointType: PointType, amount: bigint): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-reserve-pending",
    text: `UPDATE accounts a SET pending_units = a.pending_units + $3::numeric
           WHERE a.address = $1 AND a.point_type = $2 AND ${AVAILABLE_SQL} >= $3::numeric`,
    values: [address, pointType, amount.toString()],
  });
  return rowCount === 1;
}

/**
 * The reservation path for an account without a row: only a zero-point batch (possible when the
 * minimum transfer size is configured to 0) fits in a zero balance; it creates the row, as SQLite does.
 */
export async function reserveOnEmptyAccount(db: Queryable, address: AddressKey, pointType: PointType, amount: bigint): Promise<boolean> {
  if (amount !== 0n) return false;
  await db.query({
    name: "pl-touch-account",
    text: "INSERT INTO accounts (address, point_type) VALUES ($1, $2) ON CONFLICT (address, point_type) DO NOTHING",
    values: [address, pointType],
  });
  return true;
}

/** pendingSent −= amount (a cancelled batch); the CHECK keeps it from going below 0. */
export async function releasePending(db: Queryable, address: AddressKey, pointType: PointType, amount: bigint): Promise<void> {
  const { rowCount } = await db.query({
    name: "pl-release-pending",
    text: "UPDATE accounts SET pending_units = pending_units - $3::numeric WHERE address = $1 AND point_type = $2",
    values: [address, pointType, amount.toString()],
  });
  assertInvariant(rowCount === 1, `no account row for ${address} ${pointType} holding a pending batch`);
}

/**
 * earnedCumulative += amount unless that passes MAX_POINTS_UNITS; creates the account if needed.
 * False means the credit would overflow.
 */
export async function addEarned(db: Queryable, address: AddressKey, pointType: PointType, amount: bigint): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-add-earned",
    text: `INSERT INTO accounts AS a (address, point_type, earned_units)
           SELECT $1, $2, $3::numeric WHERE $3::numeric <= $4::numeric
           ON CONFLICT (address, point_type) DO UPDATE SET earned_units = a.earned_units + excluded.earned_units
           WHERE a.earned_units + excluded.earned_units <= $4::numeric`,
    values: [address, pointType, amount.toString(), MAX_POINTS_UNITS.toString()],
  });
  return rowCount === 1;
}

/**
 * Applies a finalized batch to every account it touches in ONE statement: the sender moves
 * `total` from pendingSent to finalizedSentCumulative, each recipient's receivedCumulative grows
 * by its transfer. All rows are locked in address order within that one statement, so two
 * finalizations whose senders and recipients overlap (A pays B while B pays A) lock in the same
 * order and cannot deadlock; a separate sender UPDATE first would lock out of order.
 * The proposed row carries the sender's move in finalized_sent_units (non-negative, so it passes
 * the CHECKs); the sender row always exists, since it holds the batch's pendingSent.
 * Returns the number of accounts changed and the smallest available balance among them.
 */
export async function settleBatch(
  db: Queryable,
  seq: string,
  sender: AddressKey,
  pointType: PointType,
  total: bigint,
): Promise<{ accounts: number; minAvailable: bigint }> {
  const { rows } = await db.query<{ accounts: string; min_available: string | null }>({
    name: "pl-settle-batch",
    text: `WITH moved AS (
             INSERT INTO accounts AS a (address, point_type, received_units, finalized_sent_units)
             SELECT address, $2, received, sent FROM (
               SELECT to_address AS address, amount_units AS received, 0::numeric AS sent FROM transfers WHERE seq = $1
               UNION ALL
               SELECT $3, 0::numeric, $4::numeric
             ) moves
             ORDER BY address
             ON CONFLICT (address, point_type) DO UPDATE SET
               received_units = a.received_units + excluded.received_units,
               finalized_sent_units = a.finalized_sent_units + excluded.finalized_sent_units,
               pending_units = a.pending_units - excluded.finalized_sent_units
             RETURNING ${AVAILABLE_SQL} AS available
           )
           SELECT count(*) AS accounts, min(available) AS min_available FROM moved`,
    values: [seq, pointType, sender, total.toString()],
  });
  const row = rows[0]!;
  return { accounts: Number(row.accounts), minAvailable: row.min_available === null ? 0n : BigInt(row.min_available) };
}
