import type { AddressKey } from "../../domain/address.js";
import { storedActorText } from "../../domain/actors.js";
import type { Actor } from "../../domain/api-keys.js";
import type { Batch, BatchStatus, BatchWithTransfers, NewBatch, Transfer } from "../../domain/batch.js";
import { FINALIZE_RETRY_DELAYS_MS } from "../../domain/finalize-retry.js";
import type { BatchPage, BatchQuery, DueBatch, StoredBatch, StoredFinalizeFailure } from "../ports/batches.js";
import { toBatch as batchOf, toStoredBatch, statusTimeColumn, toStoredFailure, type FailureColumns } from "../rows.js";
import { toNullableNumber, toNumber, toUnits, type Queryable } from "./db.js";

export interface BatchRow {
  seq: string;
  contract: string;
  batch_id: string;
  point_type: string;
  status: string;
  total_units: string;
  transfer_count: number;
  seconds_to_finalize: number;
  created_at_ms: string;
  finalize_at_ms: string;
  updated_at_ms: string | null;
  finalized_at_ms: string | null;
  cancelled_at_ms: string | null;
  submitted_by: unknown;
  cancelled_by: unknown;
}

/**
 * Named columns rather than `*`: a prepared statement keeps its result shape, so a later migration
 * that adds a column must not break the statements of processes already running.
 */
export const BATCH_COLUMNS = `seq, contract, batch_id, point_type, status, total_units, transfer_count, seconds_to_finalize,
  created_at_ms, finalize_at_ms, updated_at_ms, finalized_at_ms, cancelled_at_ms, submitted_by, cancelled_by`;

export function toBatch(row: BatchRow): Batch {
  return batchOf(row, toUnits(row.total_units));
}

function toStored(row: BatchRow | undefined): StoredBatch | undefined {
  return row ? toStoredBatch(row, toUnits(row.total_units)) : undefined;
}

export async function findBatchRow(db: Queryable, contract: AddressKey, batchId: string): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-find-batch",
    text: `SELECT ${BATCH_COLUMNS} FROM batches WHERE contract = $1 AND batch_id = $2`,
    values: [contract, batchId],
  });
  return rows[0];
}

export async function findBatch(db: Queryable, contract: AddressKey, batchId: string): Promise<StoredBatch | undefined> {
  return toStored(await findBatchRow(db, contract, batchId));
}

/** Reads the batch and holds its row lock until the transaction ends (cancel vs. finalize). */
export async function lockBatch(db: Queryable, contract: AddressKey, batchId: string): Promise<StoredBatch | undefined> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-lock-batch",
    text: `SELECT ${BATCH_COLUMNS} FROM batches WHERE contract = $1 AND batch_id = $2 FOR UPDATE`,
    values: [contract, batchId],
  });
  return toStored(rows[0]);
}

export async function readTransfers(db: Queryable, seq: string): Promise<Transfer[]> {
  const { rows } = await db.query<[string, string]>({
    name: "pl-read-transfers",
    text: "SELECT to_address, amount_units FROM transfers WHERE seq = $1 ORDER BY idx",
    values: [seq],
    rowMode: "array",
  });
  return rows.map(([toAddress, amount]) => ({ toAddress: toAddress as AddressKey, amount: toUnits(amount) }));
}

async function withTransfers(db: Queryable, row: BatchRow): Promise<BatchWithTransfers> {
  return { ...toBatch(row), transfers: await readTransfers(db, row.seq) };
}

/** The batch and its transfers: written with their batch row and never changed, so two reads agree. */
export async function readBatch(db: Queryable, contract: AddressKey, batchId: string): Promise<BatchWithTransfers | null> {
  const row = await findBatchRow(db, contract, batchId);
  return row ? withTransfers(db, row) : null;
}

/**
 * Inserts the batch row (PENDING) unless (contract, batchId) is taken; returns the new row or
 * undefined. A concurrent insert of the same batchId makes this wait for that transaction: if it
 * commits, this one inserts nothing, so exactly one submission of a batchId is accepted.
 */
export async function insertBatch(db: Queryable, batch: NewBatch, finalizeAtMs: number, submittedBy: Actor): Promise<string | undefined> {
  const { rows } = await db.query<{ seq: string }>({
    name: "pl-insert-batch",
    text: `INSERT INTO batches (contract, batch_id, point_type, status, total_units, transfer_count,
             seconds_to_finalize, created_at_ms, finalize_at_ms, submitted_by)
           VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $7, $8, $9::jsonb)
           ON CONFLICT (contract, batch_id) DO NOTHING
           RETURNING seq`,
    values: [
      batch.contract,
      batch.batchId,
      batch.pointType,
      batch.total.toString(),
      batch.transfers.length,
      batch.secondsToFinalize,
      batch.createdAtMs,
      finalizeAtMs,
      storedActorText(submittedBy),
    ],
  });
  return rows[0]?.seq;
}

/** All transfers of a batch in one statement: two arrays, unnested with their position as idx. */
export async function insertTransfers(db: Queryable, seq: string, transfers: readonly Transfer[]): Promise<void> {
  const addresses: string[] = new Array(transfers.length);
  const amounts: string[] = new Array(transfers.length);
  for (let i = 0; i < transfers.length; i++) {
    const transfer = transfers[i]!;
    addresses[i] = transfer.toAddress;
    amounts[i] = transfer.amount.toString();
  }
  await db.query({
    name: "pl-insert-transfers",
    text: `INSERT INTO transfers (seq, idx, to_address, amount_units)
           SELECT $1, t.ord - 1, t.to_address, t.amount_units
           FROM unnest($2::text[], $3::numeric[]) WITH ORDINALITY AS t(to_address, amount_units, ord)`,
    values: [seq, addresses, amounts],
  });
}

/** Changes the status only if it still is `from` (recording who cancelled, for CANCELLED); true when it did. */
export async function setStatus(
  db: Queryable,
  seq: string,
  from: BatchStatus,
  to: BatchStatus,
  nowMs: number,
  cancelledBy: Actor | null,
): Promise<boolean> {
  const { rowCount } = await db.query({
    name: `pl-set-status-${to}`,
    text: `UPDATE batches SET status = $3, updated_at_ms = $4, ${statusTimeColumn(to)} = $4, cancelled_by = $5::jsonb
           WHERE seq = $1 AND status = $2`,
    values: [seq, from, to, nowMs, cancelledBy === null ? null : storedActorText(cancelledBy)],
  });
  return rowCount === 1;
}

/**
 * What makes a PENDING batch claimable at $1: it is due, and not waiting out the backoff of a
 * failed finalization (src/ledger/finalize.ts).
 */
const CLAIMABLE_SQL = "status = 'PENDING' AND finalize_at_ms <= $1 AND (finalize_retry_at_ms IS NULL OR finalize_retry_at_ms <= $1)";

/**
 * Up to `limit` claimable batches in fair order: round-robin by contract. `turn` numbers each
 * contract's claimable batches oldest first (finalizeAt, then seq); every contract's first turn
 * comes before any contract's second. Within a turn contracts go in address order, starting after
 * `afterContract` (the last one this instance served), so consecutive calls resume the round
 * instead of starting over with the same contracts: a contract waits for at most one batch of
 * every other contract, never for another's backlog.
 *
 * Cost does not grow with the backlog: `pending` walks the contracts that have PENDING batches (a
 * loose index scan: one seek each in batches_pending_by_contract), `heads` keeps those with a
 * claimable batch, and each contributes at most the batches that can reach the first `limit` (if
 * n contracts have one, the limit-th batch's turn is at most limit − n + 1).
 * A plain read, no lock: src/ledger/finalize.ts claims each one with claimBatch, which re-checks it.
 */
export async function fairDueBatches(db: Queryable, nowMs: number, limit: number, afterContract: string): Promise<DueBatch[]> {
  const { rows } = await db.query<DueBatch>({
    name: "pl-fair-due-batches",
    text: `WITH RECURSIVE pending(contract) AS (
             (SELECT contract FROM batches WHERE status = 'PENDING' ORDER BY contract LIMIT 1)
             UNION ALL
             SELECT (SELECT b.contract FROM batches b WHERE b.status = 'PENDING' AND b.contract > p.contract ORDER BY b.contract LIMIT 1)
             FROM pending p WHERE p.contract IS NOT NULL
           ),
           heads AS MATERIALIZED (
             SELECT p.contract FROM pending p
             WHERE p.contract IS NOT NULL AND EXISTS (SELECT 1 FROM batches WHERE contract = p.contract AND ${CLAIMABLE_SQL})
           ),
           due AS (
             SELECT d.seq, h.contract, d.finalize_at_ms FROM heads h CROSS JOIN LATERAL (
               SELECT seq, finalize_at_ms FROM batches WHERE contract = h.contract AND ${CLAIMABLE_SQL}
               ORDER BY finalize_at_ms, seq LIMIT GREATEST(1, $2 - (SELECT count(*) FROM heads) + 1)) d
           )
           SELECT seq, contract FROM (
             SELECT seq, contract, finalize_at_ms, row_number() OVER (PARTITION BY contract ORDER BY finalize_at_ms, seq) AS turn FROM due
           ) ranked ORDER BY turn, contract <= $3, contract LIMIT $2`,
    values: [nowMs, limit, afterContract],
  });
  return rows;
}

/**
 * Locks batch `seq` if it is still claimable (PENDING, due, not backing off). SKIP LOCKED passes
 * over a batch another finalizer (or a cancel) holds, so instances share one ranking's work
 * instead of queueing on one row; the row is re-checked once locked (READ COMMITTED re-evaluates
 * the WHERE on the latest version), so one whose failure another instance just stored is left
 * to its backoff, and the status guard that follows makes a finalization happen once.
 */
export async function claimBatch(db: Queryable, seq: string, nowMs: number): Promise<StoredBatch | undefined> {
  const { rows } = await db.query<BatchRow>({
    name: "pl-lock-claimable-batch",
    text: `SELECT ${BATCH_COLUMNS} FROM batches WHERE seq = $2 AND ${CLAIMABLE_SQL} FOR UPDATE SKIP LOCKED`,
    values: [nowMs, seq],
  });
  return toStored(rows[0]);
}

/**
 * Stores a failed finalization on a PENDING batch: one more failure, the error, and the time
 * before which no claim takes it again (domain/finalize-retry.ts: FINALIZE_RETRY_DELAYS_MS, looked
 * up by the failures before this one). Returns what it stored, or undefined if the batch is no
 * longer PENDING (another instance finalized it meanwhile).
 */
export async function recordFinalizeFailure(
  db: Queryable,
  seq: string,
  nowMs: number,
  errorText: string,
): Promise<StoredFinalizeFailure | undefined> {
  const { rows } = await db.query<FailureColumns>({
    name: "pl-record-finalize-failure",
    text: `UPDATE batches SET
             finalize_failures = finalize_failures + 1,
             finalize_retry_at_ms = $2::bigint + ($3::bigint[])[LEAST(finalize_failures, $4::integer) + 1],
             finalize_error = $5
           WHERE seq = $1 AND status = 'PENDING'
           RETURNING contract, batch_id, finalize_failures, finalize_retry_at_ms`,
    values: [seq, nowMs, FINALIZE_RETRY_DELAYS_MS, FINALIZE_RETRY_DELAYS_MS.length - 1, errorText],
  });
  return rows[0] && toStoredFailure(rows[0]);
}

/** PENDING batches whose last finalization failed: a count over the small batches_failing index. */
export async function countFailingBatches(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ count: string }>({
    name: "pl-count-failing-batches",
    text: "SELECT count(*) AS count FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL",
  });
  return Number(rows[0]!.count);
}

/** PENDING batches due before `dueBeforeMs`, counted up to `limit` over the batches_due index. */
export async function countOverdueBatches(db: Queryable, dueBeforeMs: number, limit: number): Promise<number> {
  const { rows } = await db.query<{ count: string }>({
    name: "pl-count-overdue-batches",
    text: `SELECT count(*) AS count FROM (SELECT 1 FROM batches WHERE status = 'PENDING' AND finalize_at_ms < $1
             ORDER BY finalize_at_ms LIMIT $2) AS overdue`,
    values: [dueBeforeMs, limit],
  });
  return Number(rows[0]!.count);
}

export async function listBatches(db: Queryable, contract: AddressKey, query: BatchQuery): Promise<BatchPage> {
  const params: (string | number)[] = [contract];
  const where = ["contract = $1"];
  const param = (value: string | number) => `$${params.push(value)}`;
  if (query.pointType) where.push(`point_type = ${param(query.pointType)}`);
  if (query.status) where.push(`status = ${param(query.status)}`);
  if (query.createdBeforeMs !== undefined) where.push(`created_at_ms < ${param(query.createdBeforeMs)}`);
  if (query.createdAfterMs !== undefined) where.push(`created_at_ms > ${param(query.createdAfterMs)}`);
  const direction = query.sort === "ASC" ? ">" : "<";
  if (query.after) {
    // Row comparison: strictly after (createdAt, seq) in the listing order, and index-friendly.
    const seq = param(clampToBigint(query.after.seq));
    where.push(`(created_at_ms, seq) ${direction} (${param(query.after.createdAtMs)}, ${seq}::bigint)`);
  }
  const order = query.sort === "ASC" ? "ASC" : "DESC";
  const { rows } = await db.query<BatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM batches WHERE ${where.join(" AND ")}
     ORDER BY created_at_ms ${order}, seq ${order} LIMIT ${param(query.limit + 1)}`,
    params,
  );
  const more = rows.length > query.limit;
  const page = more ? rows.slice(0, query.limit) : rows;
  const last = page[page.length - 1];
  return {
    batches: page.map(toBatch),
    next: more && last ? { createdAtMs: toNumber(last.created_at_ms), seq: last.seq } : null,
  };
}

const MAX_BIGINT = 2n ** 63n - 1n;

/** A cursor's seq may exceed BIGINT; no stored seq does, so the largest BIGINT orders the same. */
function clampToBigint(seq: string): string {
  return BigInt(seq) > MAX_BIGINT ? MAX_BIGINT.toString() : seq;
}

/**
 * The earliest time a claim can find something: the oldest finalizeAt among batches that never
 * failed, or the earliest retry of one that did (LEAST ignores a NULL side). Each side reads the
 * first entry of an index.
 */
export async function nextFinalizeAtMs(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ next: string | null }>({
    name: "pl-next-claimable-at",
    text: `SELECT LEAST(
             (SELECT finalize_at_ms FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NULL
              ORDER BY finalize_at_ms LIMIT 1),
             (SELECT MIN(finalize_retry_at_ms) FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL)
           ) AS next`,
  });
  return toNullableNumber(rows[0]?.next ?? null);
}
