import type { AddressKey } from "../../domain/address.js";
import { storedActorText } from "../../domain/actors.js";
import type { Actor } from "../../domain/api-keys.js";
import type { Batch, BatchStatus, BatchWithTransfers, NewBatch, Transfer } from "../../domain/batch.js";
import { FINALIZE_RETRY_DELAYS_MS } from "../../domain/finalize-retry.js";
import type { BatchPage, BatchQuery, BatchesPort, DueBatch, StoredBatch, StoredFinalizeFailure } from "../ports/batches.js";
import { toBatch as batchOf, toStoredBatch, statusTimeColumn, toStoredFailure, type FailureColumns } from "../rows.js";
import { fromPair, statement, toNumber, toPair, type SqliteDb } from "./db.js";

/** Rows per multi-VALUES insert statement: fewer statement executions, bounded parameter count. */
const TRANSFER_ROWS_PER_STATEMENT = 100;

export interface BatchRow {
  seq: bigint;
  contract: string;
  batch_id: string;
  point_type: string;
  status: string;
  total_w: bigint;
  total_f: bigint;
  transfer_count: bigint;
  seconds_to_finalize: bigint;
  created_at_ms: bigint;
  finalize_at_ms: bigint;
  updated_at_ms: bigint | null;
  finalized_at_ms: bigint | null;
  cancelled_at_ms: bigint | null;
  submitted_by: string;
  cancelled_by: string | null;
}

function totalOf(row: BatchRow): bigint {
  return fromPair(row.total_w, row.total_f);
}

export function toBatch(row: BatchRow): Batch {
  return batchOf(row, totalOf(row));
}

function toStored(row: BatchRow | undefined): StoredBatch | undefined {
  return row ? toStoredBatch(row, totalOf(row)) : undefined;
}

export function findBatchRow(db: SqliteDb, contract: AddressKey, batchId: string): BatchRow | undefined {
  return statement(db, "SELECT * FROM batches WHERE contract = ? AND batch_id = ?").get(contract, batchId) as BatchRow | undefined;
}

function findBatch(db: SqliteDb, contract: AddressKey, batchId: string): StoredBatch | undefined {
  return toStored(findBatchRow(db, contract, batchId));
}

export function readTransfers(db: SqliteDb, seq: bigint | string): Transfer[] {
  const rows = statement(db, "SELECT to_address, amount_w, amount_f FROM transfers WHERE seq = ? ORDER BY idx")
    .raw(true)
    .all(BigInt(seq)) as [string, bigint, bigint][];
  return rows.map(([toAddress, whole, fraction]) => ({
    toAddress: toAddress as AddressKey,
    amount: fromPair(whole, fraction),
  }));
}

function withTransfers(db: SqliteDb, row: BatchRow): BatchWithTransfers {
  return { ...toBatch(row), transfers: readTransfers(db, row.seq) };
}

/** The batch and its transfers, in one read transaction (a consistent view). */
function readBatch(db: SqliteDb, contract: AddressKey, batchId: string): BatchWithTransfers | null {
  const row = findBatchRow(db, contract, batchId);
  return row ? db.transaction(() => withTransfers(db, row))() : null;
}

/**
 * Inserts the batch row (PENDING) unless (contract, batchId) is taken; returns its seq, or
 * undefined. One process writes, so nothing races it; the flow rolls back a refused submission.
 */
function insertBatch(db: SqliteDb, batch: NewBatch, finalizeAtMs: number, submittedBy: Actor): string | undefined {
  const info = statement(
    db,
    `INSERT INTO batches (contract, batch_id, point_type, status, total_w, total_f, transfer_count,
       seconds_to_finalize, created_at_ms, finalize_at_ms, submitted_by)
     VALUES (?, ?, ?, 'PENDING', ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (contract, batch_id) DO NOTHING`,
  ).run(
    batch.contract,
    batch.batchId,
    batch.pointType,
    ...toPair(batch.total),
    batch.transfers.length,
    batch.secondsToFinalize,
    batch.createdAtMs,
    finalizeAtMs,
    storedActorText(submittedBy),
  );
  return info.changes === 1 ? info.lastInsertRowid.toString() : undefined;
}

function transferInsertSql(rows: number): string {
  return `INSERT INTO transfers (seq, idx, to_address, amount_w, amount_f) VALUES ${"(?, ?, ?, ?, ?), ".repeat(rows - 1)}(?, ?, ?, ?, ?)`;
}

function insertTransfers(db: SqliteDb, seqText: string, transfers: readonly Transfer[]): void {
  const seq = BigInt(seqText);
  for (let start = 0; start < transfers.length; start += TRANSFER_ROWS_PER_STATEMENT) {
    const end = Math.min(start + TRANSFER_ROWS_PER_STATEMENT, transfers.length);
    const params: (number | bigint | string)[] = new Array((end - start) * 5);
    let p = 0;
    for (let i = start; i < end; i++) {
      const transfer = transfers[i]!;
      const [whole, fraction] = toPair(transfer.amount);
      params[p++] = seq;
      params[p++] = i;
      params[p++] = transfer.toAddress;
      params[p++] = whole;
      params[p++] = fraction;
    }
    statement(db, transferInsertSql(end - start)).run(params);
  }
}

function setStatus(db: SqliteDb, seq: string, from: BatchStatus, to: BatchStatus, nowMs: number, cancelledBy: Actor | null): boolean {
  const sql = `UPDATE batches SET status = ?, updated_at_ms = ?, ${statusTimeColumn(to)} = ?, cancelled_by = ? WHERE seq = ? AND status = ?`;
  const by = cancelledBy === null ? null : storedActorText(cancelledBy);
  const changes = statement(db, sql).run(to, nowMs, nowMs, by, BigInt(seq), from).changes;
  return changes === 1;
}

export function listBatches(db: SqliteDb, contract: AddressKey, query: BatchQuery): BatchPage {
  const where = ["contract = ?"];
  const params: (string | number)[] = [contract];
  if (query.pointType) {
    where.push("point_type = ?");
    params.push(query.pointType);
  }
  if (query.status) {
    where.push("status = ?");
    params.push(query.status);
  }
  if (query.createdBeforeMs !== undefined) {
    where.push("created_at_ms < ?");
    params.push(query.createdBeforeMs);
  }
  if (query.createdAfterMs !== undefined) {
    where.push("created_at_ms > ?");
    params.push(query.createdAfterMs);
  }
  const direction = query.sort === "ASC" ? ">" : "<";
  if (query.after) {
    where.push(`(created_at_ms ${direction} ? OR (created_at_ms = ? AND seq ${direction} ?))`);
    params.push(query.after.createdAtMs, query.after.createdAtMs, Number(query.after.seq));
  }
  const order = query.sort === "ASC" ? "ASC" : "DESC";
  const rows = statement(
    db,
    `SELECT * FROM batches WHERE ${where.join(" AND ")} ORDER BY created_at_ms ${order}, seq ${order} LIMIT ?`,
  ).all(...params, query.limit + 1) as BatchRow[];
  const more = rows.length > query.limit;
  const page = more ? rows.slice(0, query.limit) : rows;
  const last = page[page.length - 1];
  return {
    batches: page.map(toBatch),
    next: more && last ? { createdAtMs: toNumber(last.created_at_ms), seq: last.seq.toString() } : null,
  };
}

/**
 * What makes a PENDING batch claimable at @now: it is due, and not waiting out the backoff of a
 * failed finalization (src/ledger/finalize.ts).
 */
const CLAIMABLE_SQL = "status = 'PENDING' AND finalize_at_ms <= @now AND (finalize_retry_at_ms IS NULL OR finalize_retry_at_ms <= @now)";

/**
 * Up to `limit` claimable batches in fair order: round-robin by contract. `turn` numbers each
 * contract's claimable batches oldest first (finalizeAt, then seq); every contract's first turn
 * comes before any contract's second. Within a turn contracts go in address order, starting after
 * `afterContract` (the last one the caller served): a round cut short by the caller's time budget
 * resumes there, so a contract waits for at most one batch of every other contract, never for
 * another's backlog. (Ordering a turn by finalizeAt instead would put a backlog's old heads first
 * in every round and starve a later contract whenever rounds are cut short.)
 *
 * Cost does not grow with the backlog: `pending` walks the contracts that have PENDING batches
 * (one seek each in batches_pending_by_contract), `heads` keeps those with a claimable batch, and
 * each of those contributes at most the batches that can reach the first `limit` (if n contracts
 * have one, the limit-th batch's turn is at most limit − n + 1). About 1 ms for 520 contracts with
 * 10,000 due batches and 0.3 ms for 2 contracts with 360,000; a ranking of every due batch took
 * 0.45 µs per due batch (160 ms for 360,000, all of it holding the event loop).
 */
function fairDueBatches(db: SqliteDb, nowMs: number, limit: number, afterContract: string): DueBatch[] {
  const rows = statement(
    db,
    `WITH RECURSIVE pending(contract) AS MATERIALIZED (
       SELECT (SELECT contract FROM batches WHERE status = 'PENDING' ORDER BY contract LIMIT 1)
       UNION ALL
       SELECT (SELECT b.contract FROM batches b WHERE b.status = 'PENDING' AND b.contract > pending.contract ORDER BY b.contract LIMIT 1)
       FROM pending WHERE pending.contract IS NOT NULL
     ),
     heads(contract) AS MATERIALIZED (
       SELECT contract FROM pending WHERE EXISTS (SELECT 1 FROM batches WHERE contract = pending.contract AND ${CLAIMABLE_SQL})
     ),
     due(seq, contract, finalize_at_ms) AS (
       SELECT b.seq, b.contract, b.finalize_at_ms FROM heads JOIN batches b ON b.seq IN (
         SELECT seq FROM batches WHERE contract = heads.contract AND ${CLAIMABLE_SQL}
         ORDER BY finalize_at_ms, seq LIMIT MAX(1, @limit - (SELECT count(*) FROM heads) + 1))
     )
     SELECT seq, contract FROM (
       SELECT seq, contract, ROW_NUMBER() OVER (PARTITION BY contract ORDER BY finalize_at_ms, seq) AS turn FROM due
     ) ORDER BY turn, contract <= @after, contract LIMIT @limit`,
  )
    .raw(true)
    .all({ now: nowMs, limit, after: afterContract }) as [bigint, string][];
  return rows.map(([seq, contract]) => ({ seq: seq.toString(), contract }));
}

/** Batch `seq` if it is still claimable (one process writes: nothing to lock or skip). */
function claimBatch(db: SqliteDb, seq: string, nowMs: number): StoredBatch | undefined {
  return toStored(
    statement(db, `SELECT * FROM batches WHERE seq = @seq AND ${CLAIMABLE_SQL}`).get({ seq: BigInt(seq), now: nowMs }) as
      BatchRow | undefined,
  );
}

/**
 * Stores a failed finalization on a PENDING batch: one more failure, the error, and the time
 * before which no claim takes it again (domain/finalize-retry.ts: FINALIZE_RETRY_DELAYS_MS, looked
 * up by the failures before this one). Returns what it stored, or undefined if the batch is no
 * longer PENDING.
 */
function recordFinalizeFailure(db: SqliteDb, seq: string, nowMs: number, errorText: string): StoredFinalizeFailure | undefined {
  const row = statement(
    db,
    `UPDATE batches SET
       finalize_failures = finalize_failures + 1,
       finalize_retry_at_ms = @now + json_extract(@delays, '$[' || MIN(finalize_failures, @lastDelay) || ']'),
       finalize_error = @error
     WHERE seq = @seq AND status = 'PENDING'
     RETURNING contract, batch_id, finalize_failures, finalize_retry_at_ms`,
  ).get({
    seq: BigInt(seq),
    now: nowMs,
    delays: JSON.stringify(FINALIZE_RETRY_DELAYS_MS),
    lastDelay: BigInt(FINALIZE_RETRY_DELAYS_MS.length - 1),
    error: errorText,
  }) as FailureColumns | undefined;
  return row && toStoredFailure(row);
}

/** PENDING batches whose last finalization failed: a count over the small batches_failing index. */
export function countFailingBatches(db: SqliteDb): number {
  const count = statement(db, "SELECT count(*) FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL")
    .pluck(true)
    .get() as bigint;
  return Number(count);
}

/** PENDING batches due before `dueBeforeMs`, counted up to `limit` over the batches_due index. */
export function countOverdueBatches(db: SqliteDb, dueBeforeMs: number, limit: number): number {
  const count = statement(
    db,
    "SELECT count(*) FROM (SELECT 1 FROM batches WHERE status = 'PENDING' AND finalize_at_ms < ? ORDER BY finalize_at_ms LIMIT ?)",
  )
    .pluck(true)
    .get(dueBeforeMs, limit) as bigint;
  return Number(count);
}

/**
 * The earliest time a claim can find something: the oldest finalizeAt among batches that never
 * failed, or the earliest retry of one that did. Each side reads the first entry of an index.
 */
export function nextFinalizeAtMs(db: SqliteDb): number | null {
  const value = statement(
    db,
    `SELECT MIN(COALESCE(due, retry), COALESCE(retry, due)) FROM (SELECT
       (SELECT finalize_at_ms FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NULL
        ORDER BY finalize_at_ms LIMIT 1) AS due,
       (SELECT MIN(finalize_retry_at_ms) FROM batches WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL) AS retry)`,
  )
    .pluck(true)
    .get() as bigint | null;
  return value === null ? null : Number(value);
}

/** The batches and transfers tables for the ledger flows (src/ledger/), synchronously. */
export const batches = {
  insertBatch,
  insertTransfers,
  findBatch,
  // One process writes, and its write transaction holds the database: a read is as good as a lock.
  lockBatch: findBatch,
  readTransfers,
  setStatus,
  fairDueBatches,
  claimBatch,
  recordFinalizeFailure,
  readBatch,
  listBatches,
  nextFinalizeAtMs,
  countFailingBatches,
  countOverdueBatches,
} satisfies BatchesPort<SqliteDb, "sync">;
