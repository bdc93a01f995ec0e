import type { AddressKey } from "../../domain/address.js";
import type { ApiKey } from "../../domain/api-keys.js";
import type { ApiKeysPort, ApiKeyUse, NewApiKey } from "../ports/api-keys.js";
import { API_KEY_COLUMNS, API_KEY_INSERT_COLUMNS, apiKeyInsertValues, apiKeyOfRow, type ApiKeyColumns } from "../rows.js";
import { statement, toNumber, type SqliteDb } from "./db.js";

/** One process writes, inside an IMMEDIATE transaction: counting is as good as holding a lock. */
function lockAndCountUnrevoked(db: SqliteDb, contract: AddressKey): number {
  return toNumber(statement(db, "SELECT count(*) FROM api_keys WHERE contract = ? AND revoked_at_ms IS NULL").pluck(true).get(contract));
}

function insertApiKey(db: SqliteDb, apiKey: NewApiKey): void {
  statement(db, `INSERT INTO api_keys (${API_KEY_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
    ...apiKeyInsertValues(apiKey),
  );
}

function readApiKey(db: SqliteDb, contract: AddressKey, id: string): ApiKey | null {
  const row = statement(db, `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = ? AND contract = ?`).get(id, contract);
  return row === undefined ? null : apiKeyOfRow(row as ApiKeyColumns);
}

/** At most MAX_API_KEYS unrevoked keys, and revoked ones: a contract's list is small. */
function listApiKeys(db: SqliteDb, contract: AddressKey): ApiKey[] {
  const rows = statement(db, `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE contract = ? ORDER BY created_at_ms, id`).all(contract);
  return (rows as ApiKeyColumns[]).map(apiKeyOfRow);
}

function revokeKey(db: SqliteDb, contract: AddressKey, id: string, nowMs: number): ApiKey | null {
  const row = statement(
    db,
    `UPDATE api_keys SET revoked_at_ms = ?, revoked_reason = 'revoked'
     WHERE id = ? AND contract = ? AND revoked_at_ms IS NULL RETURNING ${API_KEY_COLUMNS}`,
  ).get(nowMs, id, contract);
  return row === undefined ? null : apiKeyOfRow(row as ApiKeyColumns);
}

function revokeOperatorKeys(db: SqliteDb, contract: AddressKey, operator: AddressKey, nowMs: number): ApiKey[] {
  const rows = statement(
    db,
    `UPDATE api_keys SET revoked_at_ms = ?, revoked_reason = 'operator_changed'
     WHERE contract = ? AND created_by_operator = ? AND revoked_at_ms IS NULL RETURNING ${API_KEY_COLUMNS}`,
  ).all(nowMs, contract, operator);
  return (rows as ApiKeyColumns[]).map(apiKeyOfRow).sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
}

function lookupApiKey(db: SqliteDb, secretHash: Buffer): ApiKey | null {
  const row = statement(db, `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE secret_hash = ?`).get(secretHash);
  return row === undefined ? null : apiKeyOfRow(row as ApiKeyColumns);
}

function writeLastUses(db: SqliteDb, uses: readonly ApiKeyUse[]): void {
  const update = statement(db, "UPDATE api_keys SET last_used_at_ms = ? WHERE id = ? AND (last_used_at_ms IS NULL OR last_used_at_ms < ?)");
  for (const use of uses) update.run(use.lastUsedAtMs, use.id, use.lastUsedAtMs);
}

/** The api_keys table, synchronously. */
export const apiKeys = {
  lockAndCountUnrevoked,
  insertApiKey,
  readApiKey,
  listApiKeys,
  revokeKey,
  revokeOperatorKeys,
  lookupApiKey,
  writeLastUses,
} satisfies ApiKeysPort<SqliteDb, "sync">;
