import type { AddressKey } from "../../domain/address.js";
import { PURGE_USED_NONCES_LIMIT } from "../../domain/limits.js";
import type { NewToken, OperatorPage, OperatorQuery, TokenGrant } from "../ports/auth.js";
import { operatorPage } from "../rows.js";
import { toNumber, type Queryable } from "./db.js";

export async function readOperator(db: Queryable, contract: AddressKey): Promise<AddressKey | null> {
  return selectOperator(db, contract, false);
}

/** The contract's operator, its row locked until the transaction ends. */
export async function lockOperator(db: Queryable, contract: AddressKey): Promise<AddressKey | null> {
  return selectOperator(db, contract, true);
}

async function selectOperator(db: Queryable, contract: AddressKey, lock: boolean): Promise<AddressKey | null> {
  const { rows } = await db.query<{ operator: string }>({
    name: lock ? "pl-lock-operator" : "pl-read-operator",
    text: `SELECT operator FROM operators WHERE contract = $1${lock ? " FOR UPDATE" : ""}`,
    values: [contract],
  });
  return (rows[0]?.operator as AddressKey | undefined) ?? null;
}

/** The upsert's WHERE leaves an unchanged operator (and its tokens) alone: false then. */
export async function upsertOperator(db: Queryable, contract: AddressKey, operator: AddressKey, nowMs: number): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-write-operator",
    text: `INSERT INTO operators AS o (contract, operator, updated_at_ms) VALUES ($1, $2, $3)
           ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, updated_at_ms = excluded.updated_at_ms
           WHERE o.operator <> excluded.operator`,
    values: [contract, operator, nowMs],
  });
  return rowCount === 1;
}

export async function deleteOperator(db: Queryable, contract: AddressKey, operator: AddressKey): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-delete-operator",
    text: "DELETE FROM operators WHERE contract = $1 AND operator = $2",
    values: [contract, operator],
  });
  return rowCount === 1;
}

export async function deleteTokens(db: Queryable, contract: AddressKey): Promise<void> {
  await db.query({ name: "pl-delete-tokens", text: "DELETE FROM tokens WHERE contract = $1", values: [contract] });
}

/**
 * One page of registered contracts by address: a range read of the primary key (keyset, no
 * OFFSET), one row more than asked to know whether another page follows.
 */
export async function listOperators(db: Queryable, query: OperatorQuery): Promise<OperatorPage> {
  const { rows } = await db.query<{ contract: string; operator: string; updated_at_ms: string }>({
    name: "pl-list-operators",
    text: "SELECT contract, operator, updated_at_ms FROM operators WHERE contract > $1 ORDER BY contract LIMIT $2",
    // '' sorts before every address: the first page.
    values: [query.after ?? "", query.limit + 1],
  });
  return operatorPage(rows, query.limit);
}

/**
 * The stored challenge key, or `candidate` stored now. Read first, so a database that has one is
 * not written to; of instances racing to store theirs, the first insert wins and all read it.
 */
export async function readOrStoreServerKey(db: Queryable, name: string, candidate: Buffer): Promise<Buffer> {
  const read = async () => {
    const { rows } = await db.query<{ secret: Buffer }>({
      name: "pl-read-server-key",
      text: "SELECT secret FROM server_keys WHERE name = $1",
      values: [name],
    });
    return rows[0]?.secret;
  };
  const stored = await read();
  if (stored) return stored;
  await db.query({
    name: "pl-store-server-key",
    text: "INSERT INTO server_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    values: [name, candidate],
  });
  return (await read())!;
}

/** True when the nonce was not used before; the primary key lets one insert win across instances. */
export async function insertUsedNonce(db: Queryable, nonce: string, expiresAtMs: number): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-use-challenge-nonce",
    text: "INSERT INTO used_challenge_nonces (nonce, expires_at_ms) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
    values: [nonce, expiresAtMs],
  });
  return rowCount === 1;
}

export async function insertToken(db: Queryable, token: NewToken): Promise<void> {
  await db.query({
    name: "pl-insert-token",
    text: "INSERT INTO tokens (token_hash, contract, operator, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5)",
    values: [token.tokenHash, token.contract, token.operator, token.createdAtMs, token.expiresAtMs],
  });
}

/** A token counts only while unexpired and while its operator is still the contract's operator. */
export async function lookupToken(db: Queryable, tokenHash: Buffer, nowMs: number): Promise<TokenGrant | null> {
  const { rows } = await db.query<{ contract: string; operator: string; expires_at_ms: string }>({
    name: "pl-lookup-token",
    text: `SELECT t.contract, t.operator, t.expires_at_ms FROM tokens t
           JOIN operators o ON o.contract = t.contract AND o.operator = t.operator
           WHERE t.token_hash = $1 AND t.expires_at_ms > $2`,
    values: [tokenHash, nowMs],
  });
  const row = rows[0];
  if (!row) return null;
  return {
    contract: row.contract as AddressKey,
    operator: row.operator as AddressKey,
    expiresAtMs: toNumber(row.expires_at_ms),
  };
}

export async function deleteExpired(db: Queryable, nowMs: number): Promise<void> {
  await db.query({
    name: "pl-purge-used-nonces",
    text: `DELETE FROM used_challenge_nonces WHERE nonce IN (
             SELECT nonce FROM used_challenge_nonces WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2)`,
    values: [nowMs, PURGE_USED_NONCES_LIMIT],
  });
  await db.query({ name: "pl-purge-tokens", text: "DELETE FROM tokens WHERE expires_at_ms <= $1", values: [nowMs] });
}
