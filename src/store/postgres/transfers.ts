import type { AddressKey } from "../../domain/address.js";
import type { BatchStatus, PointType } from "../../domain/batch.js";
import { InvariantViolation } from "../../domain/errors.js";
import type { AccountBalance, AccountQuery, TransferPage, TransferPosition, TransferQuery, TransferRow } from "../ports/transfers.js";
import type { TransfersPort } from "../ports/transfers.js";
import { toBalance } from "./accounts.js";
import { toNullableNumber, toNumber, toUnits, type Queryable } from "./db.js";

/**
 * Transfers listing and the balances export: keyset pages, each one autocommit statement, so an
 * export of any size holds no connection or snapshot between pages and runs in constant memory.
 * Pages are not one snapshot (snapshots.ts is the consistent read): a row is shown as it was when
 * its page was read.
 */

interface TransferDbRow {
  seq: string;
  batch_id: string;
  point_type: string;
  status: string;
  created_at_ms: string;
  finalize_at_ms: string;
  finalized_at_ms: string | null;
  idx: number;
  to_address: string;
  amount_units: string;
}

/** A row of the scan: scan_end false and a match, or true and the scan's last position (seq, created_at_ms and idx only). */
interface ScannedDbRow extends TransferDbRow {
  scan_end: boolean;
}

const MAX_BIGINT = 2n ** 63n - 1n;

/**
 * Newest first: batches through batches_listing backwards, each batch's transfers through the
 * transfers key (an incremental sort on idx under the LIMIT). `created_at_ms <= cursor` is the
 * index bound; the row comparison drops what the cursor passed.
 */
const AFTER_CURSOR = `b.contract = $1
    AND b.created_at_ms <= $2
    AND (b.created_at_ms, b.seq, t.idx) < ($2, $3::bigint, $4)`;
const LISTING_ORDER = "b.created_at_ms DESC, b.seq DESC, t.idx DESC";
const TRANSFER_COLUMNS = `b.seq, b.batch_id, b.point_type, b.status, b.created_at_ms, b.finalize_at_ms, b.finalized_at_ms,
         t.idx, t.to_address, t.amount_units`;

/** Without a filter every transfer is a match: the page reads `limit` rows. */
const LIST_TRANSFERS_SQL = `
  SELECT ${TRANSFER_COLUMNS}
  FROM batches b JOIN transfers t ON t.seq = b.seq
  WHERE ${AFTER_CURSOR}
  ORDER BY ${LISTING_ORDER}
  LIMIT $5`;

/**
 * With a filter: the matches among the next $6 transfers (the inner LIMIT; filters outside it, so
 * a rare recipient, type or status cannot walk the whole contract), and, when they are fewer than
 * $5, the position of the $6-th transfer, where the next page resumes. No index on to_address: it
 * would slow every batch's insert (sqlite/transfers.ts has the measurement); the bound keeps a
 * lookup's cost per page fixed. The inner LIMIT also keeps the planner on the ordered walk: with
 * the filter beside the join it estimates a rare address as a few rows and seq-scans every
 * transfer (measured: 130-190 ms whatever the bound). A full page skips the second part: the
 * WHERE is a one-time filter, checked before its scan runs (sqlite/transfers.ts needs a LIMIT 0
 * instead; here a LIMIT the planner cannot read is estimated at 10% of the table, a cost that
 * switches JIT compilation on: +28 ms a page). One statement, one snapshot, so both parts read the
 * same rows. The final ORDER BY sorts at most $5 + 1 rows.
 */
const SCAN_TRANSFERS_SQL = `
  WITH hits AS (
    SELECT * FROM (
      SELECT ${TRANSFER_COLUMNS}
      FROM batches b JOIN transfers t ON t.seq = b.seq
      WHERE ${AFTER_CURSOR}
      ORDER BY ${LISTING_ORDER}
      LIMIT $6) scanned
    WHERE ($7::text IS NULL OR point_type = $7)
      AND ($8::text IS NULL OR status = $8)
      AND ($9::text IS NULL OR to_address = $9)
    LIMIT $5)
  SELECT false AS scan_end, * FROM hits
  UNION ALL
  SELECT true, seq, NULL, NULL, NULL, created_at_ms, NULL, NULL, idx, NULL, NULL FROM (
    SELECT b.seq, b.created_at_ms, t.idx
    FROM batches b JOIN transfers t ON t.seq = b.seq
    WHERE ${AFTER_CURSOR}
    ORDER BY ${LISTING_ORDER}
    OFFSET $6 - 1 LIMIT 1) last_scanned
  WHERE (SELECT count(*) FROM hits) < $5
  ORDER BY scan_end, created_at_ms DESC, seq DESC, idx DESC`;

export async function listTransfers(db: Queryable, contract: AddressKey, query: TransferQuery): Promise<TransferPage> {
  const after = query.after;
  const afterCursor = [
    contract,
    after?.createdAtMs ?? Number.MAX_SAFE_INTEGER,
    after === undefined || BigInt(after.seq) > MAX_BIGINT ? MAX_BIGINT.toString() : after.seq,
    after?.index ?? 2 ** 31 - 1,
    query.limit,
  ];
  if (query.toAddress === undefined && query.pointType === undefined && query.status === undefined) {
    const { rows } = await db.query<TransferDbRow>({ name: "pl-list-transfers", text: LIST_TRANSFERS_SQL, values: afterCursor });
    const last = rows.at(-1);
    return { transfers: rows.map(toTransfer), next: rows.length === query.limit && last ? positionOf(last) : null };
  }
  if (!Number.isSafeInteger(query.scanLimit) || query.scanLimit < 1) throw new InvariantViolation(`scanLimit ${query.scanLimit}`);
  const { rows } = await db.query<ScannedDbRow>({
    name: "pl-scan-transfers",
    text: SCAN_TRANSFERS_SQL,
    values: [...afterCursor, query.scanLimit, query.pointType ?? null, query.status ?? null, query.toAddress ?? null],
  });
  const hits = rows.filter((row) => !row.scan_end);
  const scanEnd = rows.find((row) => row.scan_end);
  const last = hits.length === query.limit ? hits.at(-1) : scanEnd;
  return { transfers: hits.map(toTransfer), next: last ? positionOf(last) : null };
}

function toTransfer(row: TransferDbRow): TransferRow {
  return {
    batchId: row.batch_id,
    pointType: row.point_type as PointType,
    status: row.status as BatchStatus,
    createdAtMs: toNumber(row.created_at_ms),
    finalizeAtMs: toNumber(row.finalize_at_ms),
    finalizedAtMs: toNullableNumber(row.finalized_at_ms),
    toAddress: row.to_address as AddressKey,
    amount: toUnits(row.amount_units),
  };
}

function positionOf(row: TransferDbRow): TransferPosition {
  return { createdAtMs: toNumber(row.created_at_ms), seq: row.seq, index: row.idx };
}

interface AccountDbRow {
  address: string;
  point_type: string;
  earned_units: string;
  received_units: string;
  finalized_sent_units: string;
  pending_units: string;
}

export async function listAccountBalances(db: Queryable, query: AccountQuery): Promise<AccountBalance[]> {
  const { rows } = await db.query<AccountDbRow>({
    name: "pl-list-account-balances",
    text: `SELECT address, point_type, earned_units, received_units, finalized_sent_units, pending_units
           FROM accounts
           WHERE (address, point_type) > ($1, $2) AND ($3::text IS NULL OR point_type = $3)
           ORDER BY address, point_type
           LIMIT $4`,
    // '' sorts before every address: the first page.
    values: [query.after?.address ?? "", query.after?.pointType ?? "", query.pointType ?? null, query.limit],
  });
  return rows.map((row) => ({ address: row.address as AddressKey, pointType: row.point_type, balance: toBalance(row) }));
}

/** The transfer and balance exports, over pg. */
export const transfers = { listTransfers, listAccountBalances } satisfies TransfersPort<Queryable, "async">;
