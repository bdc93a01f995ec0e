import type { AddressKey } from "../../domain/address.js";
import type { ChainBlock, ChainObservation } from "../../domain/chain.js";
import type { ChainFollowClaim, ChainPort, FollowedContract } from "../ports/chain.js";
import { statement, toNullableNumber, type SqliteDb } from "./db.js";

/**
 * Operators on chain on SQLite (ports/chain.ts), as PostgreSQL's: one writer, so the conditional
 * upsert decides alone; a read older than the stored block changes nothing.
 */

function observe(db: SqliteDb, contract: AddressKey, observation: ChainObservation, nowMs: number, force: boolean): boolean {
  const { changes } = statement(
    db,
    `INSERT INTO chain_operators (contract, operator, banned, block_number, block_hash, read_at_ms) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, banned = excluded.banned,
       block_number = excluded.block_number, block_hash = excluded.block_hash, read_at_ms = excluded.read_at_ms
     WHERE ? OR chain_operators.block_number <= excluded.block_number`,
  ).run(contract, observation.operator, observation.banned ? 1 : 0, observation.block.number, observation.block.hash, nowMs, force ? 1 : 0);
  return changes === 1;
}

function followedContracts(db: SqliteDb, after: AddressKey | null, limit: number): FollowedContract[] {
  const rows = statement(db, "SELECT contract, operator, banned FROM chain_operators WHERE contract > ? ORDER BY contract LIMIT ?").all(
    after ?? "",
    limit,
  ) as { contract: AddressKey; operator: AddressKey | null; banned: bigint | number }[];
  return rows.map((row) => ({ contract: row.contract, operator: row.operator, banned: Number(row.banned) === 1 }));
}

interface FollowRow {
  block_number: bigint | null;
  block_hash: string | null;
}

function followClaim(row: FollowRow): ChainFollowClaim {
  const number = toNullableNumber(row.block_number);
  return { last: number === null || row.block_hash === null ? null : { number, hash: row.block_hash } };
}

function takeFollowLease(db: SqliteDb, token: string, nowMs: number, leaseMs: number): ChainFollowClaim | null {
  const row = statement(
    db,
    `UPDATE chain_follow SET lease_token = ?, lease_until_ms = ? + ?
     WHERE id = 1 AND (lease_token IS NULL OR lease_token = ? OR lease_until_ms <= ?)
     RETURNING block_number, block_hash`,
  ).get(token, nowMs, leaseMs, token, nowMs) as FollowRow | undefined;
  return row === undefined ? null : followClaim(row);
}

function advanceFollow(db: SqliteDb, token: string, block: ChainBlock, nowMs: number): boolean {
  const { changes } = statement(
    db,
    "UPDATE chain_follow SET block_number = ?, block_hash = ?, read_at_ms = ? WHERE id = 1 AND lease_token = ?",
  ).run(block.number, block.hash, nowMs, token);
  return changes === 1;
}

export const sqliteChain = { observe, followedContracts, takeFollowLease, advanceFollow } satisfies ChainPort<SqliteDb, "sync">;
