import type { AddressKey } from "../domain/address.js";
import type { ChainBlock, ChainBlockTag, RegistryStatus } from "../domain/chain.js";

/**
 * The operator registry on a chain, as the service reads it (API.md, Operators on chain): the
 * port; ./viem-registry.ts is its adapter over an EVM JSON-RPC endpoint. Every method either
 * answers within its time bound with a well-formed value or throws ChainReadError: a timeout, an
 * error answer, an answer too large or malformed, a registry that is no registry. Never a guess.
 */
export interface RegistryReader {
  /** eth_chainId. */
  chainId(): Promise<number>;
  /** The block at `tag` (number and hash). */
  block(tag: ChainBlockTag): Promise<ChainBlock>;
  /** The hash of block `number` on the chain as it is now; null when the chain is shorter. */
  blockHash(number: number): Promise<string | null>;
  /**
   * What `registry` says of each contract at `block`, in their order: through readStatus, or
   * (a registry that has only `operators`) through that, a ban being the operator 0xbBbB…bBbB.
   * At most STATUSES_PER_READ contracts (./viem-registry.ts) a read.
   */
  statuses(registry: AddressKey, contracts: readonly AddressKey[], block: ChainBlock): Promise<RegistryStatus[]>;
}

/** Why the chain could not be read; the message is safe to show (it never holds the RPC URL). */
export class ChainReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ChainReadError";
  }
}
