import type { AddressKey } from "../../domain/address.js";
import type { ChainBlock, ChainObservation, RegistryStatus } from "../../domain/chain.js";
import type { Io, Out } from "./io.js";

/**
 * Operators on chain, as the database keeps them (API.md, Operators on chain;
 * src/ledger/chain-operators.ts): one row per followed contract, what the registry said of it
 * and at which block (chain_operators), and one row for the follower (chain_follow): the last
 * block it read every followed contract at, and the lease that lets one instance follow at a time.
 * The chain itself is read by src/chain/ (the registry's port and its viem adapter).
 */

/** What the follower holds: the last block it followed to (null before the first pass). */
export interface ChainFollowClaim {
  last: ChainBlock | null;
}

/** A followed contract and what the registry last said of it (the follower writes only where the chain now says otherwise). */
export interface FollowedContract extends RegistryStatus {
  contract: AddressKey;
}

/** The table primitives each adapter's chain.ts gives (`satisfies` this). */
export interface ChainPort<Db, out M extends Io = Io> {
  /**
   * Stores `observation` as the contract's chain state, locking its row until the transaction
   * ends, when it was read at a block at or after the stored one (or `force`: a reorganisation
   * made the stored block void); false: an older read, nothing written.
   */
  observe(db: Db, contract: AddressKey, observation: ChainObservation, nowMs: number, force: boolean): Out<M, boolean>;
  /** Up to `limit` followed contracts after `after` (null: from the first), by address. */
  followedContracts(db: Db, after: AddressKey | null, limit: number): Out<M, FollowedContract[]>;
  /** Takes or renews the follower's lease until nowMs + leaseMs when it ran out or is `token`'s; null while another holds it. */
  takeFollowLease(db: Db, token: string, nowMs: number, leaseMs: number): Out<M, ChainFollowClaim | null>;
  /** Records the block the follower read every followed contract at, while `token` holds the lease; false: it was lost. */
  advanceFollow(db: Db, token: string, block: ChainBlock, nowMs: number): Out<M, boolean>;
}

/** How one observation changed the ledger. */
export type ChainApplied = "changed" | "unchanged" | "stale";

/** What sign-in and the follow job ask of the database (src/ledger/chain-operators.ts runs each once for both). */
export interface ChainStore {
  /**
   * Follows what the registry said of `contract` (read at observation.block of chain `chainId`): a
   * change of operator or a ban revokes the tokens and the keys the previous operator created and
   * records operator.changed with the chain actor, in one transaction; once across every instance.
   */
  applyChainObservation(
    contract: AddressKey,
    observation: ChainObservation,
    chainId: number,
    nowMs: number,
    force: boolean,
  ): Promise<ChainApplied>;
  chainFollowedPage(after: AddressKey | null, limit: number): Promise<FollowedContract[]>;
  claimChainFollow(token: string, nowMs: number, leaseMs: number): Promise<ChainFollowClaim | null>;
  advanceChainFollow(token: string, block: ChainBlock, nowMs: number): Promise<boolean>;
}
