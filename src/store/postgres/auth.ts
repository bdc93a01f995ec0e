import type { AddressKey } from "../../domain/address.js";
import { MAX_UNSOLVED_CHALLENGES_PER_OPERATOR } from "../../domain/limits.js";
import type { NewChallenge, NewToken, OperatorPage, OperatorQuery, TokenGrant } from "../store.js";
import { operatorTransition } from "../../domain/transitions.js";
import { toNumber, type PgClient, type Queryable } from "./db.js";
import { appendEvents } from "./events.js";

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
export async function writeOperator(db: PgClient, contract: AddressKey, operator: AddressKey, nowMs: number): Promise<void> {
  const current = await db.query<{ operator: string }>({
    name: "pl-lock-operator",
    text: "SELECT operator FROM operators WHERE contract = $1 FOR UPDATE",
    values: [contract],
  });
  const transition = operatorTransition(contract, (current.rows[0]?.operator as AddressKey | undefined) ?? null, operator, nowMs);
  if (transition.kind === "unchanged") return;
  const { rowCount } = await db.query({
    name: "pl-write-operator",
    text: `INSERT INTO operators AS o (contract, operator, updated_at_ms) VALUES ($1, $2, $3)
           ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, updated_at_ms = excluded.updated_at_ms
           WHERE o.operator <> excluded.operator`,
    values: [contract, operator, nowMs],
  });
  // Two first registrations racing: the loser's upsert changes nothing, and its transition (decided
  // before the winner's row existed) is dropped with its event.
  if (rowCount === 0) return;
  if (transition.revokeTokens)
    await db.query({ name: "pl-delete-tokens", text: "DELETE FROM tokens WHERE contract = $1", values: [contract] });
  await appendEvents(db, transition.events);
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
  const more = rows.length > query.limit;
  const page = more ? rows.slice(0, query.limit) : rows;
  return {
    operators: page.map((row) => ({
      contract: row.contract as AddressKey,
      operator: row.operator as AddressKey,
      updatedAtMs: toNumber(row.updated_at_ms),
    })),
    next: more ? (page[page.length - 1]!.contract as AddressKey) : null,
  };
}

/**
 * Stores a challenge, first dropping this operator's oldest unsolved ones so that at most
 * MAX_UNSOLVED_CHALLENGES_PER_OPERATOR remain (two racing requests may leave one more for a moment).
 */
export async function insertChallenge(db: Queryable, challenge: NewChallenge): Promise<void> {
  await db.query({
    name: "pl-trim-challenges",
    text: `DELETE FROM challenges WHERE contract = $1 AND operator = $2 AND NOT used AND challenge_id NOT IN (
             SELECT challenge_id FROM challenges WHERE contract = $1 AND operator = $2 AND NOT used
             ORDER BY created_at_ms DESC, challenge_id LIMIT $3)`,
    values: [challenge.contract, challenge.operator, MAX_UNSOLVED_CHALLENGES_PER_OPERATOR - 1],
  });
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
export async function takeChallenge(db: Queryable, challengeId: string, nowMs: number): Promise<NewChallenge | null> {
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
