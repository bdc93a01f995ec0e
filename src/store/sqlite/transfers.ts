import type { AddressKey } from "../../domain/address.js";
import type { BatchStatus, PointType } from "../../domain/batch.js";
import { InvariantViolation } from "../../domain/errors.js";
import type { AccountBalance, AccountQuery, TransferPage, TransferPosition, TransferQuery, TransferRow } from "../ports/transfers.js";
import type { TransfersPort } from "../ports/transfers.js";
import { toBalance, type AccountRow } from "./accounts.js";
import { fromPair, statement, toNullableNumber, toNumber, type SqliteDb } from "./db.js";

/**
 * Transfers listing and the balances export: keyset pages, so an export of any size pages through
 * in constant memory. Each page is one read; pages are not one snapshot (an export that runs while
 * batches finalize shows each row as it was when its page was read; snapshots.ts is the
 * consistent read).
 */

const MAX_INTEGER = 2n ** 63n - 1n;

type TransferDbRow = [bigint, string, string, string, bigint, bigint, bigint | null, bigint, string, bigint, bigint];
/** A row of SCAN_TRANSFERS_SQL: 0 and a match, or 1 and the scan's last position (seq, created_at_ms and idx only). */
type ScannedDbRow = [bigint, ...TransferDbRow];

/**
 * Newest first: batches by (created_at_ms, seq) descending through batches_listing, each batch's
 * transfers by idx descending through the transfers key. The plain `created_at_ms <= ?` bound lets
 * the index start at the cursor; the exact position test then drops what the cursor already passed.
 * Without a cursor the bounds are the largest values (no `IS NULL OR`, which would hide the range
 * from the planner).
 */
const AFTER_CURSOR = `b.contract = :contract
    AND b.created_at_ms <= :afterCreatedAt
    AND (b.created_at_ms < :afterCreatedAt OR b.seq < :afterSeq OR (b.seq = :afterSeq AND t.idx < :afterIdx))`;
const LISTING_ORDER = "b.created_at_ms DESC, b.seq DESC, t.idx DESC";
const TRANSFER_COLUMNS = `b.seq, b.batch_id, b.point_type, b.status, b.created_at_ms, b.finalize_at_ms, b.finalized_at_ms,
         t.idx, t.to_address, t.amount_w, t.amount_f`;

/** Without a filter every transfer is a match: the page reads `limit` rows. */
const LIST_TRANSFERS_SQL = `
  SELECT ${TRANSFER_COLUMNS}
  FROM batches b JOIN transfers t ON t.seq = b.seq
  WHERE ${AFTER_CURSOR}
  ORDER BY ${LISTING_ORDER}
  LIMIT :limit`;

/**
 * With a filter: the matches among the next :scanLimit transfers (the inner LIMIT; filters outside
 * it, so a rare recipient, type or status cannot walk the whole contract), and, when they are
 * fewer than :limit, the position of the :scanLimit-th transfer, where the next page resumes. No
 * index on to_address: measured, it made inserting 2,000,000 transfers take 145-167 s instead of
 * 7.6 s; the bound keeps the lookup's cost per page fixed instead (MAX_TRANSFERS_SCANNED_PER_PAGE).
 * A full page skips the second part: its LIMIT is 0, and a LIMIT 0 runs nothing (a WHERE there
 * would still walk the rows). One statement, so both parts read the same rows. The final ORDER BY
 * sorts at most :limit + 1 rows.
 */
const SCAN_TRANSFERS_SQL = `
  WITH hits AS MATERIALIZED (
    SELECT * FROM (
      SELECT ${TRANSFER_COLUMNS}
      FROM batches b JOIN transfers t ON t.seq = b.seq
      WHERE ${AFTER_CURSOR}
      ORDER BY ${LISTING_ORDER}
      LIMIT :scanLimit)
    WHERE (:pointType IS NULL OR point_type = :pointType)
      AND (:status IS NULL OR status = :status)
      AND (:toAddress IS NULL OR to_address = :toAddress)
    LIMIT :limit)
  SELECT 0 AS scan_end, * FROM hits
  UNION ALL
  SELECT 1, seq, NULL, NULL, NULL, created_at_ms, NULL, NULL, idx, NULL, NULL, NULL FROM (
    SELECT b.seq, b.created_at_ms, t.idx
    FROM batches b JOIN transfers t ON t.seq = b.seq
    WHERE ${AFTER_CURSOR}
    ORDER BY ${LISTING_ORDER}
    LIMIT CASE WHEN (SELECT count(*) FROM hits) < :limit THEN 1 ELSE 0 END OFFSET :scanLimit - 1)
  ORDER BY scan_end, created_at_ms DESC, seq DESC, idx DESC`;

export function listTransfers(db: SqliteDb, contract: AddressKey, query: TransferQuery): TransferPage {
  const params = {
    contract,
    afterCreatedAt: query.after?.createdAtMs ?? Number.MAX_SAFE_INTEGER,
    afterSeq: query.after === undefined ? MAX_INTEGER : BigInt(query.after.seq),
    afterIdx: query.after?.index ?? Number.MAX_SAFE_INTEGER,
    limit: query.limit,
  };
  if (query.toAddress === undefined && query.pointType === undefined && query.status === undefined) {
    const rows = statement(db, LIST_TRANSFERS_SQL).raw(true).all(params) as TransferDbRow[];
    const last = rows.at(-1);
    return { transfers: rows.map(toTransfer), next: rows.length === query.limit && last ? positionOf(last) : null };
  }
  if (!Number.isSafeInteger(query.scanLimit) || query.scanLimit < 1) throw new InvariantViolation(`scanLimit ${query.scanLimit}`);
  const rows = statement(db, SCAN_TRANSFERS_SQL)
    .raw(true)
    .all({
      ...params,
      scanLimit: query.scanLimit,
      pointType: query.pointType ?? null,
      status: query.status ?? null,
      toAddress: query.toAddress ?? null,
    }) as ScannedDbRow[];
  const hits = rows.filter((row) => row[0] === 0n).map((row) => row.slice(1) as TransferDbRow);
  const scanEnd = rows.find((row) => row[0] === 1n)?.slice(1) as TransferDbRow | undefined;
  const last = hits.length === query.limit ? hits.at(-1) : scanEnd;
  return { transfers: hits.map(toTransfer), next: last ? positionOf(last) : null };
}

function toTransfer(row: TransferDbRow): TransferRow {
  return {
    batchId: row[1],
    pointType: row[2] as PointType,
    status: row[3] as BatchStatus,
    createdAtMs: toNumber(row[4]),
    finalizeAtMs: toNumber(row[5]),
    finalizedAtMs: toNullableNumber(row[6]),
    toAddress: row[8] as AddressKey,
    amount: fromPair(row[9], row[10]),
  };
}

function positionOf(row: TransferDbRow): TransferPosition {
  return { createdAtMs: toNumber(row[4]), seq: String(row[0]), index: toNumber(row[7]) };
}

const LIST_ACCOUNTS_SQL = `
  SELECT * FROM accounts
  WHERE (address, point_type) > (:afterAddress, :afterPointType)
    AND (:pointType IS NULL OR point_type = :pointType)
  ORDER BY address, point_type
  LIMIT :limit`;

export function listAccountBalances(db: SqliteDb, query: AccountQuery): AccountBalance[] {
  const rows = statement(db, LIST_ACCOUNTS_SQL).all({
    // '' sorts before every address: the first page.
    afterAddress: query.after?.address ?? "",
    afterPointType: query.after?.pointType ?? "",
    pointType: query.pointType ?? null,
    limit: query.limit,
  }) as (AccountRow & { address: string; point_type: string })[];
  return rows.map((row) => ({ address: row.address as AddressKey, pointType: row.point_type, balance: toBalance(row) }));
}

/** The transfer and balance exports, synchronously. */
export const transfers = { listTransfers, listAccountBalances } satisfies TransfersPort<SqliteDb, "sync">;
