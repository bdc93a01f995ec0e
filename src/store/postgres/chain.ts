import type { AddressKey } from "../../domain/address.js";
import type { ChainBlock, ChainObservation } from "../../domain/chain.js";
import type { ChainFollowClaim, ChainPort, FollowedContract } from "../ports/chain.js";
import { toNullableNumber, type Queryable } from "./db.js";

/**
 * Operators on chain on PostgreSQL (ports/chain.ts). Several instances read the registry: the
 * conditional upsert of a contract's row takes its row lock (a first insert waits on the primary
 * key), so two instances following one change serialize on it, and the second finds the
 * operator already changed: one change, one event. A read older than the stored block changes
 * nothing, so an instance whose RPC endpoint lags cannot flap a change back.
 */

export async function observe(db: Queryable, contract: AddressKey, observation: ChainObservation, nowMs: number, force: boolean) {
  const { rowCount } = await db.query({
    name: "pl-chain-observe",
    text: `INSERT INTO chain_operators AS c (contract, operator, banned, block_number, block_hash, read_at_ms)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (contract) DO UPDATE SET operator = excluded.operator, banned = excluded.banned,
             block_number = excluded.block_number, block_hash = excluded.block_hash, read_at_ms = excluded.read_at_ms
           WHERE $7 OR c.block_number <= excluded.block_number`,
    values: [contract, observation.operator, observation.banned, observation.block.number, observation.block.hash, nowMs, force],
  });
  return rowCount === 1;
}

export async function followedContracts(db: Queryable, after: AddressKey | null, limit: number): Promise<FollowedContract[]> {
  const { rows } = await db.query<{ contract: string; operator: string | null; banned: boolean }>({
    name: "pl-chain-followed",
    text: "SELECT contract, operator, banned FROM chain_operators WHERE contract > $1 ORDER BY contract LIMIT $2",
    values: [after ?? "", limit],
  });
  return rows.map((row) => ({ contract: row.contract as AddressKey, operator: row.operator as AddressKey | null, banned: row.banned }));
}

interface FollowRow {
  block_number: string | null;
  block_hash: string | null;
}

function followClaim(row: FollowRow): ChainFollowClaim {
  const number = toNullableNumber(row.block_number);
  return { last: number === null || row.block_hash === null ? null : { number, hash: row.block_hash } };
}

export async function takeFollowLease(db: Queryable, token: string, nowMs: number, leaseMs: number): Promise<ChainFollowClaim | null> {
  const { rows } = await db.query<FollowRow>({
    name: "pl-chain-take-lease",
    text: `UPDATE chain_follow SET lease_token = $1, lease_until_ms = $2 + $3
           WHERE id = 1 AND (lease_token IS NULL OR lease_token = $1 OR lease_until_ms <= $2)
           RETURNING block_number, block_hash`,
    values: [token, nowMs, leaseMs],
  });
  return rows[0] === undefined ? null : followClaim(rows[0]);
}

export async function advanceFollow(db: Queryable, token: string, block: ChainBlock, nowMs: number): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "pl-chain-advance",
    text: "UPDATE chain_follow SET block_number = $2, block_hash = $3, read_at_ms = $4 WHERE id = 1 AND lease_token = $1",
    values: [token, block.number, block.hash, nowMs],
  });
  return rowCount === 1;
}

export const postgresChain = { observe, followedContracts, takeFollowLease, advanceFollow } satisfies ChainPort<Queryable, "async">;
