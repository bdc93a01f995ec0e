import type { AddressKey } from "../../domain/address.js";
import { MAX_UNSOLVED_CHALLENGES_PER_OPERATOR } from "../../domain/limits.js";
import { operatorTransition } from "../../domain/transitions.js";
import type { NewChallenge, NewToken, OperatorPage, OperatorQuery, TokenGrant } from "../store.js";
import { statement, toNumber, type SqliteDb } from "./db.js";
import { appendEvents } from "./events.js";

export function readOperator(db: SqliteDb, contract: AddressKey): AddressKey | null {
  const operator = statement(db, "SELECT operator FROM operators WHERE contract = ?").pluck(true).get(contract);
  return (operator as AddressKey | undefined) ?? null;
}

/** Registers or changes the operator; a change deletes the contract's tokens. */
export function writeOperator(db: SqliteDb, contract: AddressKey, operator: AddressKey, nowMs: number): void {
  const transition = operatorTransition(contract, readOperator(db, contract), operator, nowMs);
  if (transition.kind === "unchanged") return;
  statement(
    db,
    `INSERT INTO operators (contract, operator, updated_at_ms) VALUES (?, ?, ?)
     ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, updated_at_ms = excluded.updated_at_ms`,
  ).run(contract, operator, nowMs);
  if (transition.revokeTokens) statement(db, "DELETE FROM tokens WHERE contract = ?").run(contract);
  appendEvents(db, transition.events);
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
 * MAX_UNSOLVED_CHALLENGES_PER_OPERATOR remain (run inside one transaction).
 */
export function insertChallenge(db: SqliteDb, challenge: NewChallenge): void {
  statement(
    db,
    `DELETE FROM challenges WHERE contract = ? AND operator = ? AND used = 0 AND challenge_id NOT IN (
       SELECT challenge_id FROM challenges WHERE contract = ? AND operator = ? AND used = 0
       ORDER BY created_at_ms DESC, challenge_id LIMIT ?)`,
  ).run(challenge.contract, challenge.operator, challenge.contract, challenge.operator, MAX_UNSOLVED_CHALLENGES_PER_OPERATOR - 1);
  statement(
    db,
    `INSERT INTO challenges (challenge_id, contract, operator, message, created_at_ms, expires_at_ms)
     VALUES (?, ?, ?, ?, ?, ?)`,
  ).run(challenge.challengeId, challenge.contract, challenge.operator, challenge.message, challenge.createdAtMs, challenge.expiresAtMs);
}

interface ChallengeRow {
  challenge_id: string;
  contract: string;
  operator: string;
  message: string;
  created_at_ms: bigint;
  expires_at_ms: bigint;
}

/** Marks an unused, unexpired challenge used (the guard makes it single-use) and returns it. */
export function takeChallenge(db: SqliteDb, challengeId: string, nowMs: number): NewChallenge | null {
  const row = statement(db, "UPDATE challenges SET used = 1 WHERE challenge_id = ? AND used = 0 AND expires_at_ms > ? RETURNING *").get(
    challengeId,
    nowMs,
  ) as ChallengeRow | undefined;
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
  statement(db, "DELETE FROM challenges WHERE expires_at_ms <= ?").run(nowMs);
  statement(db, "DELETE FROM tokens WHERE expires_at_ms <= ?").run(nowMs);
}
