import type { AddressKey } from "../../domain/address.js";
import type { Batch, BatchStatus, BatchWithTransfers, NewBatch, PointType, Transfer } from "../../domain/batch.js";
import type { BatchPage, BatchQuery } from "../store.js";
import { fromPair, statement, toNullableNumber, toNumber, toPair, type SqliteDb } from "./db.js";

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
}

export function toBatch(row: BatchRow): Batch {
  return {
    contract: row.contract as AddressKey,
    batchId: row.batch_id,
    pointType: row.point_type as PointType,
    status: row.status as BatchStatus,
    total: fromPair(row.total_w, row.total_f),
    transferCount: toNumber(row.transfer_count),
    secondsToFinalize: toNumber(row.seconds_to_finalize),
    createdAtMs: toNumber(row.created_at_ms),
    finalizeAtMs: toNumber(row.finalize_at_ms),
    updatedAtMs: toNullableNumber(row.updated_at_ms),
    finalizedAtMs: toNullableNumber(row.finalized_at_ms),
    cancelledAtMs: toNullableNumber(row.cancelled_at_ms),
  };
}

export function findBatchRow(db: SqliteDb, contract: AddressKey, batchId: string): BatchRow | undefined {
  return statement(db, "SELECT * FROM batches WHERE contract = ? AND batch_id = ?").get(contract, batchId) as
    | BatchRow
    | undefined;
}

export function readBatchBySeq(db: SqliteDb, seq: bigint | number): BatchRow {
  return statement(db, "SELECT * FROM batches WHERE seq = ?").get(seq) as BatchRow;
}

export function readTransfers(db: SqliteDb, seq: bigint): Transfer[] {
  const rows = statement(db, "SELECT to_address, amount_w, amount_f FROM transfers WHERE seq = ? ORDER BY idx")
    .raw(true)
    .all(seq) as [string, bigint, bigint][];
  return rows.map(([toAddress, whole, fraction]) => ({
    toAddress: toAddress as AddressKey,
    amount: fromPair(whole, fraction),
  }));
}

export function withTransfers(db: SqliteDb, row: BatchRow): BatchWithTransfers {
  return { ...toBatch(row), transfers: readTransfers(db, row.seq) };
}

/** Inserts the batch row (PENDING) and all its transfers; returns the batch's seq. */
export function insertBatch(db: SqliteDb, batch: NewBatch): number {
  const finalizeAtMs = batch.createdAtMs + batch.secondsToFinalize * 1000;
  const info = statement(
    db,
    `INSERT INTO batches (contract, batch_id, point_type, status, total_w, total_f, transfer_count,
       seconds_to_finalize, created_at_ms, finalize_at_ms)
     VALUES (?, ?, ?, 'PENDING', ?, ?, ?, ?, ?, ?)`,
  ).run(
    batch.contract,
    batch.batchId,
    batch.pointType,
    ...toPair(batch.total),
    batch.transfers.length,
    batch.secondsToFinalize,
    batch.createdAtMs,
    finalizeAtMs,
  );
  const seq = Number(info.lastInsertRowid);
  insertTransfers(db, seq, batch.transfers);
  return seq;
}

function transferInsertSql(rows: number): string {
  return `INSERT INTO transfers (seq, idx, to_address, amount_w, amount_f) VALUES ${"(?, ?, ?, ?, ?), ".repeat(rows - 1)}(?, ?, ?, ?, ?)`;
}

function insertTransfers(db: SqliteDb, seq: number, transfers: Transfer[]): void {
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

export function setStatus(
  db: SqliteDb,
  seq: bigint,
  from: BatchStatus,
  to: BatchStatus,
  nowMs: number,
): boolean {
  const timeColumn = to === "FINALIZED" ? "finalized_at_ms" : to === "CANCELLED" ? "cancelled_at_ms" : "updated_at_ms";
  const changes = statement(
    db,
    `UPDATE batches SET status = ?, updated_at_ms = ?, ${timeColumn} = ? WHERE seq = ? AND status = ?`,
  ).run(to, nowMs, nowMs, seq, from).changes;
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

export function dueBatchSeqs(db: SqliteDb, nowMs: number, limit: number): bigint[] {
  return statement(
    db,
    "SELECT seq FROM batches WHERE status = 'PENDING' AND finalize_at_ms <= ? ORDER BY finalize_at_ms, seq LIMIT ?",
  )
    .pluck(true)
    .all(nowMs, limit) as bigint[];
}

export function nextFinalizeAtMs(db: SqliteDb): number | null {
  const value = statement(db, "SELECT MIN(finalize_at_ms) FROM batches WHERE status = 'PENDING'")
    .pluck(true)
    .get() as bigint | null;
  return value === null ? null : Number(value);
}
