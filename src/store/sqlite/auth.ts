import type { AddressKey } from "../../domain/address.js";
import { PURGE_USED_NONCES_LIMIT } from "../../domain/limits.js";
import type { AuthPort, NewToken, OperatorPage, OperatorQuery, TokenGrant } from "../ports/auth.js";
import { operatorPage } from "../rows.js";
import { statement, toNumber, type SqliteDb } from "./db.js";

export function readOperator(db: SqliteDb, contract: AddressKey): AddressKey | null {
  const operator = statement(db, "SELECT operator FROM operators WHERE contract = ?").pluck(true).get(contract);
  return (operator as AddressKey | undefined) ?? null;
}

/** Registers `operator`, or changes a different one to it; false when the row already named it. */
function upsertOperator(db: SqliteDb, contract: AddressKey, operator: AddressKey, nowMs: number): boolean {
  const { changes } = statement(
    db,
    `INSERT INTO operators (contract, operator, updated_at_ms) VALUES (?, ?, ?)
     ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, updated_at_ms = excluded.updated_at_ms
     WHERE operators.operator <> excluded.operator`,
  ).run(contract, operator, nowMs);
  return changes === 1;
}

function deleteOperator(db: SqliteDb, contract: AddressKey, operator: AddressKey): boolean {
  return statement(db, "DELETE FROM operators WHERE contract = ? AND operator = ?").run(contract, operator).changes === 1;
}

function deleteTokens(db: SqliteDb, contract: AddressKey): void {
  statement(db, "DELETE FROM tokens WHERE contract = ?").run(contract);
}

/**
 * One page of registered contracts by address: a range read of the primary key (keyset, no
 * OFFSET), one row more than asked to know whether another page follows.
 */
export function listOperators(db: SqliteDb, query: OperatorQuery): OperatorPage {
  const rows = statement(db, "SELECT contract, operator, updated_at_ms FROM operators WHERE contract > ? ORDER BY contract LIMIT ?").all(
    // '' sorts before every address: the first page.
    query.after ?? "",
    query.limit + 1,
  ) as { contract: string; operator: string; updated_at_ms: bigint }[];
  return operatorPage(rows, query.limit);
}

/**
 * The stored challenge key, or `candidate` stored now. Read first, so a database that has one is
 * not written to; of processes racing to store theirs, the first insert wins and all read it.
 */
export function readOrStoreServerKey(db: SqliteDb, name: string, candidate: Buffer): Buffer {
  const read = () => statement(db, "SELECT secret FROM server_keys WHERE name = ?").pluck(true).get(name) as Buffer | undefined;
  const stored = read();
  if (stored) return stored;
  statement(db, "INSERT INTO server_keys (name, secret) VALUES (?, ?) ON CONFLICT (name) DO NOTHING").run(name, candidate);
  return read()!;
}

/** True when the nonce was not used before; the primary key makes the first insert the only one. */
export function insertUsedNonce(db: SqliteDb, nonce: string, expiresAtMs: number): boolean {
  const { changes } = statement(
    db,
    "INSERT INTO used_challenge_nonces (nonce, expires_at_ms) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
  ).run(nonce, expiresAtMs);
  return changes === 1;
}

export function insertToken(db: SqliteDb, token: NewToken): void {
  statement(db, "INSERT INTO tokens (token_hash, contract, operator, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?)").run(
    token.tokenHash,
    token.contract,
    token.operator,
    token.createdAtMs,
    token.expiresAtMs,
  );
}

/** A token counts only while unexpired and while its operator is still the contract's operator. */
export function lookupToken(db: SqliteDb, tokenHash: Buffer, nowMs: number): TokenGrant | null {
  const row = statement(
    db,
    `SELECT t.contract, t.operator, t.expires_at_ms FROM tokens t
     JOIN operators o ON o.contract = t.contract AND o.operator = t.operator
     WHERE t.token_hash = ? AND t.expires_at_ms > ?`,
  ).get(tokenHash, nowMs) as { contract: string; operator: string; expires_at_ms: bigint } | undefined;
  if (!row) return null;
  return {
    contract: row.contract as AddressKey,
    operator: row.operator as AddressKey,
    expiresAtMs: toNumber(row.expires_at_ms),
  };
}

export function deleteExpired(db: SqliteDb, nowMs: number): void {
  statement(
    db,
    `DELETE FROM used_challenge_nonces WHERE nonce IN (
       SELECT nonce FROM used_challenge_nonces WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?)`,
  ).run(nowMs, PURGE_USED_NONCES_LIMIT);
  statement(db, "DELETE FROM tokens WHERE expires_at_ms <= ?").run(nowMs);
}

/** The operators and tokens tables for src/ledger/operator.ts, synchronously. */
export const auth = {
  deleteOperator,
  // One process writes, and its write transaction holds the database: a read is as good as a lock.
  lockOperator: readOperator,
  upsertOperator,
  deleteTokens,
  readOperator,
  listOperators,
  readOrStoreServerKey,
  insertUsedNonce,
  insertToken,
  lookupToken,
  deleteExpired,
} satisfies AuthPort<SqliteDb, "sync">;
