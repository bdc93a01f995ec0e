import type { Clock } from "../clock.js";
import { checksumAddress, type AddressKey } from "../domain/address.js";
import { DEFAULT_REGISTRIES, type ChainBlock, type ChainConfig, type ChainObservation, type RegistryStatus } from "../domain/chain.js";
import { chainUnavailable, type ApiError } from "../domain/errors.js";
import { isoTime } from "../domain/json.js";
import { ChainReadError, type RegistryReader } from "./registry.js";
import { ViemRegistryReader } from "./viem-registry.js";

/**
 * Operators on chain (API.md), as one process sees the chain: which chain and registry, the last
 * successful read at the block tag, and whether the RPC endpoint answers now (GET /v1/chain).
 * Sign-in (src/http/routes/auth.ts) and the follower (src/worker/chain-follow.ts) read the
 * registry through it; a failed read is CHAIN_UNAVAILABLE with a Retry-After, never a guess.
 */

/** The chain has no default registry and none is configured: start-up stops with this line. */
export class UnknownChainError extends Error {
  constructor(readonly chainId: number) {
    super(
      `CHAIN_RPC_URL is chain ${chainId}, which has no default operator registry (Blast 81457, Blast Sepolia 168587773): set OPERATOR_REGISTRY_ADDRESS to its registry's address`,
    );
    this.name = "UnknownChainError";
  }
}

/** GET /v1/chain (API.md, Operators on chain). */
export interface ChainView {
  chainId: number | null;
  registry: string | null;
  blockTag: string;
  blockNumber: number | null;
  readAt: string | null;
  state: "ok" | "unavailable";
}

export class ChainOperators {
  private knownChainId: number | null = null;
  private unknownChain: UnknownChainError | null = null;
  private lastRead: { block: ChainBlock; readAtMs: number } | null = null;
  private failing = false;

  constructor(
    readonly config: ChainConfig,
    readonly reader: RegistryReader,
    private readonly clock: Clock,
  ) {}

  /** Retry-After of a CHAIN_UNAVAILABLE: the follower's poll, when it reads the chain again. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.config.pollSeconds));
  }

  /** The registry when known: configured, or the chain's default once its id was read. */
  get registry(): AddressKey | null {
    if (this.config.registryAddress !== null) return this.config.registryAddress;
    return this.knownChainId === null ? null : (DEFAULT_REGISTRIES[this.knownChainId] ?? null);
  }

  /** /readyz: not ready while the registry waits for the chain's id (or the chain has none). */
  get ready(): boolean {
    return this.registry !== null;
  }

  /**
   * Reads the chain's id once (start-up, then each follower pass until it is known): throws
   * UnknownChainError when no registry is configured and the chain has no default one, and
   * ChainReadError when the endpoint does not answer.
   */
  async identify(): Promise<{ chainId: number; registry: AddressKey }> {
    if (this.unknownChain !== null) throw this.unknownChain;
    if (this.knownChainId === null) this.knownChainId = await this.noted(this.reader.chainId());
    const registry = this.registry;
    if (registry === null) throw (this.unknownChain = new UnknownChainError(this.knownChainId));
    return { chainId: this.knownChainId, registry };
  }

  /** The block at CHAIN_BLOCK_TAG, recorded as the last read. */
  async head(): Promise<ChainBlock> {
    const block = await this.noted(this.reader.block(this.config.blockTag));
    this.lastRead = { block, readAtMs: this.clock.now() };
    return block;
  }

  /** What the registry says of `contracts` (at most STATUSES_PER_READ) at `block`. */
  async statuses(registry: AddressKey, contracts: readonly AddressKey[], block: ChainBlock): Promise<RegistryStatus[]> {
    return this.noted(this.reader.statuses(registry, contracts, block));
  }

  /** Sign-in's read: the contract's status at the tag, with the chain's id; CHAIN_UNAVAILABLE when the chain does not answer. */
  async observe(contract: AddressKey): Promise<{ chainId: number; observation: ChainObservation }> {
    try {
      const { chainId, registry } = await this.identify();
      const block = await this.head();
      const [status] = await this.statuses(registry, [contract], block);
      return { chainId, observation: { ...status!, block } };
    } catch (error) {
      throw this.unavailable(error);
    }
  }

  /** The API error a failed read becomes. */
  unavailable(error: unknown): ApiError {
    if (error instanceof UnknownChainError) return chainUnavailable(error.message, this.retryAfterSeconds);
    if (error instanceof ChainReadError) return chainUnavailable(`the chain could not be read: ${error.message}`, this.retryAfterSeconds);
    throw error;
  }

  view(): ChainView {
    const registry = this.registry;
    return {
      chainId: this.knownChainId,
      registry: registry === null ? null : checksumAddress(registry),
      blockTag: this.config.blockTag,
      blockNumber: this.lastRead?.block.number ?? null,
      readAt: this.lastRead === null ? null : isoTime(this.lastRead.readAtMs),
      state: this.failing || this.registry === null ? "unavailable" : "ok",
    };
  }

  /** Notes whether the endpoint answered (GET /v1/chain's state). */
  private async noted<T>(read: Promise<T>): Promise<T> {
    try {
      const value = await read;
      this.failing = false;
      return value;
    } catch (error) {
      this.failing = true;
      throw error;
    }
  }
}

/** The process's ChainOperators under CHAIN_RPC_URL (null: operators are set by an administrator). */
export function chainOperatorsOf(config: { chain: ChainConfig | null }, clock: Clock): ChainOperators | null {
  return config.chain === null
    ? null
    : new ChainOperators(config.chain, new ViemRegistryReader(config.chain.rpcUrl, config.chain.timeoutMs), clock);
}

/**
 * Start-up's read of the chain's id: an endpoint that does not answer is retried by the follower
 * (sign-ins answer 503 meanwhile, and /readyz too while the registry waits for the id); a chain
 * without a registry stops the start (UnknownChainError, one line).
 */
export async function identifyAtStart(chain: ChainOperators, warn: (message: string) => void): Promise<void> {
  try {
    await chain.identify();
  } catch (error) {
    if (!(error instanceof ChainReadError)) throw error;
    warn(`the chain could not be read at start-up (${error.message}); sign-ins answer 503 until it answers`);
  }
}
