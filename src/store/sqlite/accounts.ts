import type { AddressKey } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { assertInvariant } from "../../domain/errors.js";
import { availableOf, type Balance, type Balances } from "../store.js";
import { fromPair, statement, toPair, type SqliteDb } from "./db.js";

const ZERO_BALANCE: Balance = {
  earnedCumulative: 0n,
  receivedCumulative: 0n,
  finalizedSentCumulative: 0n,
  pendingSent: 0n,
};

interface AccountRow {
  earned_w: bigint;
  earned_f: bigint;
  received_w: bigint;
  received_f: bigint;
  finalized_sent_w: bigint;
  finalized_sent_f: bigint;
  pending_w: bigint;
  pending_f: bigint;
}

function toBalance(row: AccountRow): Balance {
  return {
    earnedCumulative: fromPair(row.earned_w, row.earned_f),
    receivedCumulative: fromPair(row.received_w, row.received_f),
    finalizedSentCumulative: fromPair(row.finalized_sent_w, row.finalized_sent_f),
    pendingSent: fromPair(row.pending_w, row.pending_f),
  };
}

export function readBalance(db: SqliteDb, address: AddressKey, pointType: PointType): Balance {
  const row = statement(db, "SELECT * FROM accounts WHERE address = ? AND point_type = ?").get(address, pointType) as
    | AccountRow
    | undefined;
  return row ? toBalance(row) : ZERO_BALANCE;
}

export function readBalances(db: SqliteDb, address: AddressKey): Balances {
  const balances = { PHASE2_POINTS: ZERO_BALANCE, PHASE2_GOLD: ZERO_BALANCE };
  const rows = statement(db, "SELECT * FROM accounts WHERE address = ?").all(address) as (AccountRow & {
    point_type: PointType;
  })[];
  for (const row of rows) balances[row.point_type] = toBalance(row);
  return balances;
}

/** Writes a whole account; asserts invariant 1 (available ≥ 0) before anything is stored. */
export function writeBalance(db: SqliteDb, address: AddressKey, pointType: PointType, balance: Balance): void {
  assertInvariant(availableOf(balance) >= 0n, `available < 0 for ${address} ${pointType}`);
  assertInvariant(balance.pendingSent >= 0n, `pendingSent < 0 for ${address} ${pointType}`);
  statement(
    db,
    `INSERT INTO accounts (address, point_type, earned_w, earned_f, received_w, received_f,
       finalized_sent_w, finalized_sent_f, pending_w, pending_f)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (address, point_type) DO UPDATE SET
       earned_w = excluded.earned_w, earned_f = excluded.earned_f,
       received_w = excluded.received_w, received_f = excluded.received_f,
       finalized_sent_w = excluded.finalized_sent_w, finalized_sent_f = excluded.finalized_sent_f,
       pending_w = excluded.pending_w, pending_f = excluded.pending_f`,
  ).run(
    address,
    pointType,
    ...toPair(balance.earnedCumulative),
    ...toPair(balance.receivedCumulative),
    ...toPair(balance.finalizedSentCumulative),
    ...toPair(balance.pendingSent),
  );
}

/**
 * Adds every transfer of batch `seq` to its recipient's receivedCumulative in one statement.
 * The pair is added with a carry: all right-hand sides read the row's old values.
 */
export function creditRecipients(db: SqliteDb, seq: number, pointType: PointType): number {
  return statement(
    db,
    `INSERT INTO accounts (address, point_type, received_w, received_f)
     SELECT to_address, ?, amount_w, amount_f FROM transfers WHERE seq = ?
     ON CONFLICT (address, point_type) DO UPDATE SET
       received_w = received_w + excluded.received_w + (received_f + excluded.received_f) / 1000000000000,
       received_f = (received_f + excluded.received_f) % 1000000000000`,
  ).run(pointType, seq).changes;
}
