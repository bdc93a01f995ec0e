import type { AddressKey } from "../domain/address.js";
import { storedActor } from "../domain/actors.js";
import {
  creatingOperatorOf,
  SYSTEM_ACTOR,
  type Actor,
  type ApiKey,
  type ApiKeyRevokedReason,
  type ApiKeyScope,
} from "../domain/api-keys.js";
import type { Batch, BatchStatus, PointType } from "../domain/batch.js";
import { upgradedEventData, type EventType, type LedgerEvent } from "../domain/events.js";
import type { NewApiKey } from "./ports/api-keys.js";
import type { OperatorPage } from "./ports/auth.js";
import type { NewCredit } from "./ports/credits.js";
import type { StoredBatch, StoredFinalizeFailure } from "./ports/batches.js";
import type { StoredEvent } from "./ports/events.js";

/**
 * Row translation both adapters share. Integer columns arrive as bigint (better-sqlite3's safe
 * integers) or as decimal strings (pg's BIGINT); epoch milliseconds and counts fit a double
 * exactly, so Number() reads either. Amounts are not read here: each adapter stores them its way.
 */
type IntegerColumn = bigint | string | number;

/** The batches columns both schemas share (amounts aside). */
export interface BatchColumns {
  seq: IntegerColumn;
  contract: string;
  batch_id: string;
  point_type: string;
  status: string;
  transfer_count: IntegerColumn;
  seconds_to_finalize: IntegerColumn;
  created_at_ms: IntegerColumn;
  finalize_at_ms: IntegerColumn;
  updated_at_ms: IntegerColumn | null;
  finalized_at_ms: IntegerColumn | null;
  cancelled_at_ms: IntegerColumn | null;
  /** The actor as stored: JSON text (SQLite) or the parsed JSONB (PostgreSQL). */
  submitted_by: unknown;
  cancelled_by: unknown;
}

function nullableNumber(value: IntegerColumn | null): number | null {
  return value === null ? null : Number(value);
}

/** A batch row and its total (read by the adapter from its own amount columns). */
export function toBatch(row: BatchColumns, total: bigint): Batch {
  return {
    contract: row.contract as AddressKey,
    batchId: row.batch_id,
    pointType: row.point_type as PointType,
    status: row.status as BatchStatus,
    total,
    transferCount: Number(row.transfer_count),
    secondsToFinalize: Number(row.seconds_to_finalize),
    createdAtMs: Number(row.created_at_ms),
    finalizeAtMs: Number(row.finalize_at_ms),
    updatedAtMs: nullableNumber(row.updated_at_ms),
    finalizedAtMs: nullableNumber(row.finalized_at_ms),
    cancelledAtMs: nullableNumber(row.cancelled_at_ms),
    submittedBy: storedActor(row.submitted_by),
    cancelledBy: cancelledByOf(row),
  };
}

/**
 * A batch cancelled before actors were recorded has no cancelled_by (the migration wrote no row):
 * like every change of that time, it was the system's as far as the ledger knows.
 */
function cancelledByOf(row: BatchColumns): Actor | null {
  if (row.cancelled_by !== null) return storedActor(row.cancelled_by);
  return row.status === "CANCELLED" ? SYSTEM_ACTOR : null;
}

/** toBatch with the row's key, for the ledger flows. */
export function toStoredBatch(row: BatchColumns, total: bigint): StoredBatch {
  return { ...toBatch(row, total), seq: row.seq.toString() };
}

/** The column each status change stamps besides updated_at_ms. */
export function statusTimeColumn(to: BatchStatus): string {
  return to === "FINALIZED" ? "finalized_at_ms" : to === "CANCELLED" ? "cancelled_at_ms" : "updated_at_ms";
}

/** One keyset page of operators from `limit + 1` rows read after the previous page's last contract. */
export function operatorPage(rows: { contract: string; operator: string; updated_at_ms: IntegerColumn }[], limit: number): OperatorPage {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return {
    operators: page.map((row) => ({
      contract: row.contract as AddressKey,
      operator: row.operator as AddressKey,
      updatedAtMs: Number(row.updated_at_ms),
    })),
    next: more ? (page[page.length - 1]!.contract as AddressKey) : null,
  };
}

/** What a stored finalization failure returns (RETURNING of recordFinalizeFailure). */
export interface FailureColumns {
  contract: string;
  batch_id: string;
  finalize_failures: IntegerColumn;
  finalize_retry_at_ms: IntegerColumn;
}

export function toStoredFailure(row: FailureColumns): StoredFinalizeFailure {
  return {
    contract: row.contract as AddressKey,
    batchId: row.batch_id,
    failures: Number(row.finalize_failures),
    retryAtMs: Number(row.finalize_retry_at_ms),
  };
}

/** A credit's row values, in the column order (address, credit_id, point_type, amount_units, created_at_ms, asset, block). */
export function creditColumns(credit: NewCredit): [string, string, string, string, number, string | null, number | null] {
  return [
    credit.address,
    credit.creditId,
    credit.pointType,
    credit.amount.toString(),
    credit.createdAtMs,
    credit.asset ?? null,
    credit.block ?? null,
  ];
}

/** The api_keys columns both schemas share (the secret's hash is never read back). */
export interface ApiKeyColumns {
  id: string;
  contract: string;
  name: string;
  scopes: string;
  prefix: string;
  created_at_ms: IntegerColumn;
  created_by: string;
  expires_at_ms: IntegerColumn | null;
  last_used_at_ms: IntegerColumn | null;
  revoked_at_ms: IntegerColumn | null;
  revoked_reason: string | null;
}

/** The columns a key is read with, in either dialect. */
export const API_KEY_COLUMNS =
  "id, contract, name, scopes, prefix, created_at_ms, created_by, expires_at_ms, last_used_at_ms, revoked_at_ms, revoked_reason";

export function apiKeyOfRow(row: ApiKeyColumns): ApiKey {
  return {
    id: row.id,
    contract: row.contract as AddressKey,
    name: row.name,
    scopes: row.scopes.split(",") as ApiKeyScope[],
    prefix: row.prefix,
    createdAtMs: Number(row.created_at_ms),
    createdBy: JSON.parse(row.created_by) as Actor,
    expiresAtMs: nullableNumber(row.expires_at_ms),
    lastUsedAtMs: nullableNumber(row.last_used_at_ms),
    revokedAtMs: nullableNumber(row.revoked_at_ms),
    revokedReason: row.revoked_reason as ApiKeyRevokedReason | null,
  };
}

/** The row values of a new key, in API_KEY_INSERT_COLUMNS order. */
export const API_KEY_INSERT_COLUMNS =
  "id, contract, name, scopes, prefix, secret_hash, created_at_ms, created_by, created_by_operator, expires_at_ms";

export function apiKeyInsertValues({ key, secretHash }: NewApiKey): unknown[] {
  return [
    key.id,
    key.contract,
    key.name,
    key.scopes.join(","),
    key.prefix,
    secretHash,
    key.createdAtMs,
    JSON.stringify(key.createdBy),
    creatingOperatorOf(key.createdBy),
    key.expiresAtMs,
  ];
}

/** The events columns both schemas share (the data aside: JSON text in SQLite, JSONB in PostgreSQL). */
export interface EventColumns {
  event_id: string;
  type: string;
  stream: string | null;
  occurred_at_ms: IntegerColumn;
  /** The actor as stored: JSON text (SQLite) or the parsed JSONB (PostgreSQL). */
  actor: unknown;
  log_index: IntegerColumn | null;
}

/** An event row at `position` (each adapter spells its own), its stored data upgraded to today's shape. */
export function eventOfRow(row: EventColumns, position: string, data: LedgerEvent["data"]): StoredEvent {
  const type = row.type as EventType;
  return {
    position,
    event: {
      id: row.event_id,
      type,
      stream: row.stream as AddressKey | null,
      occurredAtMs: Number(row.occurred_at_ms),
      actor: storedActor(row.actor),
      data: upgradedEventData(type, data),
      logIndex: nullableNumber(row.log_index),
    },
  };
}
