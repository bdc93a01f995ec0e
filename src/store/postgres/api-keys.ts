import type { AddressKey } from "../../domain/address.js";
import type { ApiKey } from "../../domain/api-keys.js";
import type { ApiKeyUse, NewApiKey } from "../ports/api-keys.js";
import { API_KEY_COLUMNS, API_KEY_INSERT_COLUMNS, apiKeyInsertValues, apiKeyOfRow, type ApiKeyColumns } from "../rows.js";
import { toNumber, type Queryable } from "./db.js";

/**
 * A transaction-scoped advisory lock per contract, then the count: two instances creating keys
 * for one contract at once would otherwise both count 99 and both insert. (The operators row
 * cannot serve: the admin may create keys for a contract that has no operator yet.)
 */
export async function lockAndCountUnrevoked(db: Queryable, contract: AddressKey): Promise<number> {
  await db.query({
    name: "pl-lock-api-keys",
    text: "SELECT pg_advisory_xact_lock(hashtext('api_keys:' || $1))",
    values: [contract],
  });
  const { rows } = await db.query<{ count: string }>({
    name: "pl-count-api-keys",
    text: "SELECT count(*) AS count FROM api_keys WHERE contract = $1 AND revoked_at_ms IS NULL",
    values: [contract],
  });
  return toNumber(rows[0]!.count);
}

export async function insertApiKey(db: Queryable, apiKey: NewApiKey): Promise<void> {
  await db.query({
    name: "pl-insert-api-key",
    text: `INSERT INTO api_keys (${API_KEY_INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    values: apiKeyInsertValues(apiKey),
  });
}

export async function readApiKey(db: Queryable, contract: AddressKey, id: string): Promise<ApiKey | null> {
  const { rows } = await db.query<ApiKeyColumns>({
    name: "pl-read-api-key",
    text: `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1 AND contract = $2`,
    values: [id, contract],
  });
  return rows[0] === undefined ? null : apiKeyOfRow(rows[0]);
}

/** At most MAX_API_KEYS unrevoked keys, and revoked ones: a contract's list is small. */
export async function listApiKeys(db: Queryable, contract: AddressKey): Promise<ApiKey[]> {
  const { rows } = await db.query<ApiKeyColumns>({
    name: "pl-list-api-keys",
    text: `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE contract = $1 ORDER BY created_at_ms, id`,
    values: [contract],
  });
  return rows.map(apiKeyOfRow);
}

export async function revokeKey(db: Queryable, contract: AddressKey, id: string, nowMs: number): Promise<ApiKey | null> {
  const { rows } = await db.query<ApiKeyColumns>({
    name: "pl-revoke-api-key",
    text: `UPDATE api_keys SET revoked_at_ms = $1, revoked_reason = 'revoked'
           WHERE id = $2 AND contract = $3 AND revoked_at_ms IS NULL RETURNING ${API_KEY_COLUMNS}`,
    values: [nowMs, id, contract],
  });
  return rows[0] === undefined ? null : apiKeyOfRow(rows[0]);
}

export async function revokeOperatorKeys(db: Queryable, contract: AddressKey, operator: AddressKey, nowMs: number): Promise<ApiKey[]> {
  const { rows } = await db.query<ApiKeyColumns>({
    name: "pl-revoke-operator-api-keys",
    text: `UPDATE api_keys SET revoked_at_ms = $1, revoked_reason = 'operator_changed'
           WHERE contract = $2 AND created_by_operator = $3 AND revoked_at_ms IS NULL RETURNING ${API_KEY_COLUMNS}`,
    values: [nowMs, contract, operator],
  });
  return rows.map(apiKeyOfRow).sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
}

export async function lookupApiKey(db: Queryable, secretHash: Buffer): Promise<ApiKey | null> {
  const { rows } = await db.query<ApiKeyColumns>({
    name: "pl-lookup-api-key",
    text: `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE secret_hash = $1`,
    values: [secretHash],
  });
  return rows[0] === undefined ? null : apiKeyOfRow(rows[0]);
}

/** One statement for every key seen since the last flush; a later use never moves backwards. */
export async function writeLastUses(db: Queryable, uses: readonly ApiKeyUse[]): Promise<void> {
  if (uses.length === 0) return;
  await db.query({
    name: "pl-write-api-key-uses",
    text: `UPDATE api_keys k SET last_used_at_ms = u.at
           FROM unnest($1::text[], $2::bigint[]) AS u(id, at)
           WHERE k.id = u.id AND (k.last_used_at_ms IS NULL OR k.last_used_at_ms < u.at)`,
    values: [uses.map((use) => use.id), uses.map((use) => use.lastUsedAtMs)],
  });
}
