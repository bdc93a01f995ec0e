import type { AddressKey } from "../../domain/address.js";
import type { Challenge, NewChallenge, NewToken, TokenGrant } from "../store.js";
import { toNumber, type Queryable } from "./db.js";

export async function readOperator(db: Queryable, contract: AddressKey): Promise<AddressKey | null> {
  const { rows } = await db.query<{ operator: string }>({
    name: "pl-read-operator",
    text: "SELECT operator FROM operators WHERE contract = $1",
    values: [contract],
  });
  return (rows[0]?.operator as AddressKey | undefined) ?? null;
}

/**
 * Registers or changes the operator; a change deletes the contract's tokens. Call inside a
 * transaction. The upsert's WHERE leaves an unchanged operator (and its tokens) alone.
 */
export async function writeOperator(db: Queryable, contract: AddressKey, operator: AddressKey, nowMs: number): Promise<void> {
  const { rowCount } = await db.query({
    name: "pl-write-operator",
    text: `INSERT INTO operators AS o (contract, operator, updated_at_ms) VALUES ($1, $2, $3)
           ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, updated_at_ms = excluded.updated_at_ms
           WHERE o.operator <> excluded.operator`,
    values: [contract, operator, nowMs],
  });
  if (rowCount === 0) return;
  await db.query({ name: "pl-delete-tokens", text: "DELETE FROM tokens WHERE contract = $1", values: [contract] });
}

export async function insertChallenge(db: Queryable, challenge: NewChallenge): Promise<void> {
  await db.query({
    name: "pl-insert-challenge",
    text: `INSERT INTO challenges (challenge_id, contract, operator, message, created_at_ms, expires_at_ms)
           VALUES ($1, $2, $3, $4, $5, $6)`,
    values: [
      challenge.challengeId,
      challenge.contract,
      challenge.operator,
      challenge.message,
      challenge.createdAtMs,
      challenge.expiresAtMs,
    ],
  });
}

interface ChallengeRow {
  challenge_id: string;
  contract: string;
  operator: string;
  message: string;
  created_at_ms: string;
  expires_at_ms: string;
}

/** Marks an unused, unexpired challenge used (the guard makes it single-use) and returns it. */
export async function takeChallenge(db: Queryable, challengeId: string, nowMs: number): Promise<Challenge | null> {
  const { rows } = await db.query<ChallengeRow>({
    name: "pl-take-challenge",
    text: `UPDATE challenges SET used = true
           WHERE challenge_id = $1 AND used = false AND expires_at_ms > $2
           RETURNING challenge_id, contract, operator, message, created_at_ms, expires_at_ms`,
    values: [challengeId, nowMs],
  });
  const row = rows[0];
  if (!row) return null;
  return {
    challengeId: row.challenge_id,
    contract: row.contract as AddressKey,
    operator: row.operator as AddressKey,
    message: row.message,
    createdAtMs: toNumber(row.created_at_ms),
    expiresAtMs: toNumber(row.expires_at_ms),
  };
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
  await db.query({ name: "pl-purge-challenges", text: "DELETE FROM challenges WHERE expires_at_ms <= $1", values: [nowMs] });
  await db.query({ name: "pl-purge-tokens", text: "DELETE FROM tokens WHERE expires_at_ms <= $1", values: [nowMs] });
}
