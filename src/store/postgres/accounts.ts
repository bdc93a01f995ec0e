import { ZERO_BALANCE } from "../../domain/balance.js";
import type { AddressKey } from "../../domain/address.js";
import { DEFAULT_POINT_TYPES, type DefaultPointType, type PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import type { Balance } from "../../domain/balance.js";
import type { Balances, BalanceWrite } from "../ports/accounts.js";
import type { StoredBatch } from "../ports/batches.js";
import { toUnits, type Queryable } from "./db.js";

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

/** One balance per asked point type, zero where the address has no row; rows of other types are left out. */
export async function readBalances<T extends PointType = DefaultPointType>(
  db: Queryable,
  address: AddressKey,
  pointTypes: readonly T[] = DEFAULT_POINT_TYPES as unknown as readonly T[],
): Promise<Balances<T>> {
  const balances = {} as Balances<T>;
  for (const pointType of pointTypes) balances[pointType] = ZERO_BALANCE;
  const { rows } = await db.query<AccountRow>({
    name: "pl-read-balances",
    text: `SELECT ${BALANCE_COLUMNS} FROM accounts WHERE address = $1`,
    values: [address],
  });
  for (const row of rows) {
    if (Object.hasOwn(balances, row.point_type)) balances[row.point_type as T] = toBalance(row);
  }
  return balances;
}

/**
 * Reads one account and locks its row until the transaction ends, so the transition decided
 * from it (domain/transitions.ts) is applied to exactly what it saw: concurrent reservations
 * queue on the lock. A missing row reads as zero (nothing to lock: nothing to overdraw).
 */
export async function lockBalance(db: Queryable, address: AddressKey, pointType: PointType): Promise<Balance> {
  const { rows } = await db.query<AccountRow>({
    name: "pl-lock-balance",
    text: `SELECT ${BALANCE_COLUMNS} FROM accounts WHERE address = $1 AND point_type = $2 FOR UPDATE`,
    values: [address, pointType],
  });
  return rows[0] ? toBalance(rows[0]) : ZERO_BALANCE;
}

/**
 * Stores a checked change (src/ledger/balance.ts) by adding it to the row: the flow read the
 * account locked (lockBalance), so this gives its `after`; a change that only adds (a credit to
 * an account another transaction may create meanwhile) cannot lose that transaction's amounts.
 * Creates the row when there is none (a first credit). The table's CHECKs keep every counter
 * non-negative as a last line behind the domain's check.
 */
export async function writeBalance(db: Queryable, address: AddressKey, pointType: PointType, { change }: BalanceWrite): Promise<void> {
  const deltas = [
    change.earnedCumulative ?? 0n,
    change.receivedCumulative ?? 0n,
    change.finalizedSentCumulative ?? 0n,
    change.pendingSent ?? 0n,
  ].map((delta) => delta.toString());
  const { rowCount } = await db.query({
    name: "pl-change-balance",
    text: `UPDATE accounts SET earned_units = earned_units + $3::numeric, received_units = received_units + $4::numeric,
             finalized_sent_units = finalized_sent_units + $5::numeric, pending_units = pending_units + $6::numeric
           WHERE address = $1 AND point_type = $2`,
    values: [address, pointType, ...deltas],
  });
  if (rowCount === 1) return;
  await db.query({
    name: "pl-create-balance",
    text: `INSERT INTO accounts (address, point_type, earned_units, received_units, finalized_sent_units, pending_units)
           VALUES ($1, $2, $3::numeric, $4::numeric, $5::numeric, $6::numeric)`,
    values: [address, pointType, ...deltas],
  });
}

/**
 * Applies a finalized batch to every account it touches in ONE statement: the sender moves
 * the batch total (senderChange, from domain/transitions.ts) from pendingSent to finalizedSentCumulative, each recipient's receivedCumulative grows
 * by its transfer. All rows are locked in address order within that one statement, so two
 * finalizations whose senders and recipients overlap (A pays B while B pays A) lock in the same
 * order and cannot deadlock; a separate sender UPDATE first would lock out of order.
 * The proposed row carries the sender's move in finalized_sent_units (non-negative, so it passes
 * the CHECKs); the sender row always exists, since it holds the batch's pendingSent.
 * Returns the number of accounts changed.
 */
export async function settleBatch(db: Queryable, batch: StoredBatch, { change: senderChange }: BalanceWrite): Promise<number> {
  // The finalize transition moves the total from pendingSent to finalizedSentCumulative; the
  // statement carries that one amount (the proposed row must pass the CHECKs, so no negatives).
  const moved = senderChange.finalizedSentCumulative ?? 0n;
  assertInvariant(senderChange.pendingSent === -moved, "a settlement moves pendingSent to finalizedSentCumulative");
  const { rows } = await db.query<{ accounts: string }>({
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
             RETURNING 1
           )
           SELECT count(*) AS accounts FROM moved`,
    values: [batch.seq, batch.pointType, batch.contract, moved.toString()],
  });
  return Number(rows[0]!.accounts);
}
