import { ZERO_BALANCE, type Balance } from "../../domain/balance.js";
import type { AddressKey } from "../../domain/address.js";
import { DEFAULT_POINT_TYPES, type DefaultPointType, type PointType } from "../../domain/batch.js";
import type { AccountsPort, Balances, BalanceWrite } from "../ports/accounts.js";
import type { StoredBatch } from "../ports/batches.js";
import { fromPair, fromTriple, statement, toPair, toTriple, type SqliteDb } from "./db.js";

export interface AccountRow {
  earned_w: bigint;
  earned_f: bigint;
  received_q: bigint;
  received_w: bigint;
  received_f: bigint;
  finalized_sent_q: bigint;
  finalized_sent_w: bigint;
  finalized_sent_f: bigint;
  pending_w: bigint;
  pending_f: bigint;
}

/** Also used by verify.ts, which reads every account row. */
export function toBalance(row: AccountRow): Balance {
  return {
    earnedCumulative: fromPair(row.earned_w, row.earned_f),
    receivedCumulative: fromTriple(row.received_q, row.received_w, row.received_f),
    finalizedSentCumulative: fromTriple(row.finalized_sent_q, row.finalized_sent_w, row.finalized_sent_f),
    pendingSent: fromPair(row.pending_w, row.pending_f),
  };
}

export function readBalance(db: SqliteDb, address: AddressKey, pointType: PointType): Balance {
  const row = statement(db, "SELECT * FROM accounts WHERE address = ? AND point_type = ?").get(address, pointType) as
    AccountRow | undefined;
  return row ? toBalance(row) : ZERO_BALANCE;
}

/** One balance per asked point type, zero where the address has no row; rows of other types are left out. */
export function readBalances<T extends PointType = DefaultPointType>(
  db: SqliteDb,
  address: AddressKey,
  pointTypes: readonly T[] = DEFAULT_POINT_TYPES as unknown as readonly T[],
): Balances<T> {
  const balances = {} as Balances<T>;
  for (const pointType of pointTypes) balances[pointType] = ZERO_BALANCE;
  const rows = statement(db, "SELECT * FROM accounts WHERE address = ?").all(address) as (AccountRow & {
    point_type: PointType;
  })[];
  for (const row of rows) {
    if (Object.hasOwn(balances, row.point_type)) balances[row.point_type as T] = toBalance(row);
  }
  return balances;
}

/**
 * Writes a whole account: `after`, checked by the flow (src/ledger/balance.ts). One process
 * writes, inside the transaction that read the balance, so `after` is before + change.
 */
function writeBalance(db: SqliteDb, address: AddressKey, pointType: PointType, { after: balance }: BalanceWrite): void {
  statement(
    db,
    `INSERT INTO accounts (address, point_type, earned_w, earned_f, received_q, received_w, received_f,
       finalized_sent_q, finalized_sent_w, finalized_sent_f, pending_w, pending_f)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (address, point_type) DO UPDATE SET
       earned_w = excluded.earned_w, earned_f = excluded.earned_f,
       received_q = excluded.received_q, received_w = excluded.received_w, received_f = excluded.received_f,
       finalized_sent_q = excluded.finalized_sent_q, finalized_sent_w = excluded.finalized_sent_w,
       finalized_sent_f = excluded.finalized_sent_f,
       pending_w = excluded.pending_w, pending_f = excluded.pending_f`,
  ).run(
    address,
    pointType,
    ...toPair(balance.earnedCumulative),
    ...toTriple(balance.receivedCumulative),
    ...toTriple(balance.finalizedSentCumulative),
    ...toPair(balance.pendingSent),
  );
}

/**
 * Adds every transfer of batch `seq` to its recipient's receivedCumulative in one statement.
 * The triple is added with carries (all right-hand sides read the row's old values): a fraction
 * carry of at most 1 into `_w`, then `_w` (≤ 10^18: a new row holds one amount) plus the amount's whole points (≤ 10^18,
 * MAX_POINTS_UNITS) plus 1 is at most 2·10^18 < 2^63, and whatever passes 10^18 carries into `_q`.
 * So no number of round trips can overflow a column; `_q` grows by at most 1 per transfer.
 */
function creditRecipients(db: SqliteDb, seq: bigint, pointType: PointType): number {
  return statement(
    db,
    `INSERT INTO accounts (address, point_type, received_w, received_f)
     SELECT to_address, ?, amount_w, amount_f FROM transfers WHERE seq = ?
     ON CONFLICT (address, point_type) DO UPDATE SET
       received_q = received_q
         + (received_w + excluded.received_w + (received_f + excluded.received_f) / 1000000000000) / 1000000000000000000,
       received_w = (received_w + excluded.received_w + (received_f + excluded.received_f) / 1000000000000) % 1000000000000000000,
       received_f = (received_f + excluded.received_f) % 1000000000000`,
  ).run(pointType, seq).changes;
}

/** The sender's checked change, then every recipient's (creditRecipients); the accounts changed. */
function settleBatch(db: SqliteDb, batch: StoredBatch, sender: BalanceWrite): number {
  writeBalance(db, batch.contract, batch.pointType, sender);
  return 1 + creditRecipients(db, BigInt(batch.seq), batch.pointType);
}

/** The accounts table for the ledger flows (src/ledger/), synchronously. */
export const accounts = {
  // One process writes, and its write transaction holds the database: a read is as good as a lock.
  lockBalance: readBalance,
  readBalance,
  writeBalance,
  settleBatch,
  readBalances,
} satisfies AccountsPort<SqliteDb, "sync">;
