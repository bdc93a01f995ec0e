/**
 * Operators on chain (API.md): what the operator registry says of a contract, and what the ledger
 * does about it. Pure rules; the registry is read by src/chain/, the change is written by
 * src/ledger/chain-operators.ts.
 */
import type { AddressKey } from "./address.js";
import type { ChainActor } from "./api-keys.js";

export const CHAIN_BLOCK_TAGS = ["finalized", "safe", "latest"] as const;
export type ChainBlockTag = (typeof CHAIN_BLOCK_TAGS)[number];

/** CHAIN_RPC_URL and the settings beside it (src/config.ts). */
export interface ChainConfig {
  rpcUrl: string;
  /** OPERATOR_REGISTRY_ADDRESS; null: the chain's id decides (DEFAULT_REGISTRIES). */
  registryAddress: AddressKey | null;
  blockTag: ChainBlockTag;
  /** CHAIN_TIMEOUT_MS: the longest one read of the chain may take before it is CHAIN_UNAVAILABLE. */
  timeoutMs: number;
  /** CHAIN_POLL_SECONDS: the longest a change visible at the tag waits before the ledger follows it. */
  pollSeconds: number;
}

/** Blast's Points contract by chain id: Blast (81457) and Blast Sepolia (168587773). */
export const DEFAULT_REGISTRIES: Readonly<Record<number, AddressKey>> = {
  81457: "0x2536fe9ab3f511540f2f9e2ec2a805005c3dd800" as AddressKey,
  168587773: "0x2fc95838c71e76ec69ff817983bff17c710f34e0" as AddressKey,
};

/** The operator a banned contract has, as Blast's registry (and `operators(address)`) shows it. */
export const BANNED_OPERATOR_KEY = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" as AddressKey;

/** A block as it was read at the tag. */
export interface ChainBlock {
  number: number;
  /** 0x-prefixed, lowercase. */
  hash: string;
}

/** What the registry says of one contract at one block. */
export interface RegistryStatus {
  /** null: none, or banned. */
  operator: AddressKey | null;
  banned: boolean;
}

/** A registry answer read at `block`. */
export interface ChainObservation extends RegistryStatus {
  block: ChainBlock;
}

/**
 * The registry's raw answer as a status: readStatus's `isBanned`, or (a registry with only
 * `operators`) the operator 0xbBbB…bBbB; the zero address is no operator.
 */
export function registryStatus(operator: AddressKey, isBanned: boolean): RegistryStatus {
  if (isBanned || operator === BANNED_OPERATOR_KEY) return { operator: null, banned: true };
  if (/^0x0{40}$/.test(operator)) return { operator: null, banned: false };
  return { operator, banned: false };
}

/** Why `operator` may not sign in for a contract the registry says `status` of: null when it may. */
export function signInRefusal(status: RegistryStatus, operator: AddressKey, blockNumber: number): string | null {
  if (status.banned) return `the contract is banned in the operator registry at block ${blockNumber}`;
  if (status.operator === null) return `the contract has no operator in the operator registry at block ${blockNumber}`;
  if (status.operator !== operator)
    return `operatorAddress is not the contract's operator in the operator registry at block ${blockNumber}`;
  return null;
}

/** The actor of a change found by a read of the registry (no transaction: API.md, Operators on chain). */
export function chainReadActor(chainId: number, blockNumber: number): ChainActor {
  return { type: "chain", chainId, blockNumber, transactionHash: null };
}

export type ChainOperatorTransition =
  { kind: "unchanged" } | { kind: "changed"; operator: AddressKey | null; previous: AddressKey | null; banned: boolean };

/**
 * The ledger's operator `current` (null: none) against what the chain says: a change when they
 * differ. A banned contract and one without operator both leave the ledger without one; the event
 * says which (`banned`).
 */
export function chainOperatorTransition(current: AddressKey | null, observed: RegistryStatus): ChainOperatorTransition {
  if (current === observed.operator) return { kind: "unchanged" };
  return { kind: "changed", operator: observed.operator, previous: current, banned: observed.banned };
}
