import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  http,
  parseAbi,
  type Address,
  type PublicClient,
} from "viem";
import { checksumAddress, parseAddress, type AddressKey } from "../domain/address.js";
import { registryStatus, type ChainBlock, type ChainBlockTag, type RegistryStatus } from "../domain/chain.js";
import { ChainReadError, type RegistryReader } from "./registry.js";

/**
 * The operator registry read over an EVM JSON-RPC endpoint with viem (./registry.ts's adapter).
 * Every answer is bounded in time (`timeoutMs` a request, and the same for a whole method) and in
 * size (MAX_RPC_RESPONSE_BYTES, read as it arrives: a hostile endpoint cannot make the process hold
 * more), and no request is retried here: the caller answers 503 and the follower tries again at its
 * next poll. Many contracts are read at once through Multicall3 run deployless (its code sent with
 * the call), so the registry is read on any chain, whether Multicall3 is deployed there or not.
 */

export const REGISTRY_ABI = parseAbi([
  "function readStatus(address contractAddress) view returns (address operator, bool isBanned, uint256 codeLength)",
  "function operators(address contractAddress) view returns (address)",
]);

/** The largest answer read from the endpoint: a full multicall of STATUSES_PER_CALL readStatus results is ≈ 250 KB of JSON. */
export const MAX_RPC_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Contracts read in one eth_call (and one `statuses`) (≈ 6 M gas of readStatus: under every node's eth_call gas cap). */
export const STATUSES_PER_CALL = 500;

type RegistryInterface = "readStatus" | "operators";

/** fetch, with the answer's body read up to `limitBytes` and refused past it. */
function boundedFetch(limitBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > limitBytes) {
      await response.body?.cancel();
      throw new ChainReadError(`the RPC endpoint's answer is ${declared} bytes, more than ${limitBytes}`);
    }
    const body = await readAtMost(response, limitBytes);
    const contentType = response.headers.get("content-type");
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: contentType === null ? {} : { "content-type": contentType },
    });
  };
}

async function readAtMost(response: Response, limitBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (response.body === null) return new Uint8Array(new ArrayBuffer(0));
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limitBytes) {
      await reader.cancel();
      throw new ChainReadError(`the RPC endpoint's answer is more than ${limitBytes} bytes`);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(new ArrayBuffer(total));
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** The call reverted or found no code: the registry lacks that function (or is no contract). */
function isMissingFunction(error: unknown): boolean {
  return (
    error instanceof BaseError &&
    error.walk((cause) => cause instanceof ContractFunctionRevertedError || cause instanceof ContractFunctionZeroDataError) !== null
  );
}

/** A short, URL-free account of what failed (viem's long messages name the endpoint, which may hold a key). */
function describe(error: unknown): string {
  if (error instanceof ChainReadError) return error.message;
  if (error instanceof BaseError) {
    const inner = error.walk((cause) => cause instanceof ChainReadError);
    if (inner instanceof ChainReadError) return inner.message;
    return error.shortMessage;
  }
  return error instanceof Error ? error.name : "unknown failure";
}

function toBlock(number: bigint | null, hash: string | null): ChainBlock {
  if (number === null || hash === null || number < 0n || number > BigInt(Number.MAX_SAFE_INTEGER) || !/^0x[0-9a-f]{64}$/i.test(hash)) {
    throw new ChainReadError("the RPC endpoint answered a malformed block");
  }
  return { number: Number(number), hash: hash.toLowerCase() };
}

function toStatus(value: unknown, via: RegistryInterface): RegistryStatus {
  const [operator, isBanned] = via === "readStatus" ? (value as readonly [Address, boolean, bigint]) : [value as Address, false];
  const key = parseAddress(operator);
  if (key === null || typeof isBanned !== "boolean") throw new ChainReadError("the operator registry answered a malformed status");
  return registryStatus(key, isBanned);
}

export class ViemRegistryReader implements RegistryReader {
  private readonly client: PublicClient;
  /** Which function each registry answers (decided by its first read; a registry's code does not change it). */
  private readonly interfaces = new Map<AddressKey, RegistryInterface>();

  constructor(
    rpcUrl: string,
    private readonly timeoutMs: number,
  ) {
    this.client = createPublicClient({
      transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 0, fetchFn: boundedFetch(MAX_RPC_RESPONSE_BYTES) }),
    });
  }

  chainId(): Promise<number> {
    return this.bounded("reading the chain's id", async () => {
      const id = await this.client.getChainId();
      if (!Number.isSafeInteger(id) || id <= 0) throw new ChainReadError("the RPC endpoint answered a malformed chain id");
      return id;
    });
  }

  block(tag: ChainBlockTag): Promise<ChainBlock> {
    return this.bounded(`reading the ${tag} block`, async () => {
      const block = await this.client.getBlock({ blockTag: tag });
      return toBlock(block.number, block.hash);
    });
  }

  blockHash(number: number): Promise<string | null> {
    return this.bounded(`reading block ${number}`, async () => {
      try {
        const block = await this.client.getBlock({ blockNumber: BigInt(number) });
        return toBlock(block.number, block.hash).hash;
      } catch (error) {
        if (error instanceof BaseError && error.name === "BlockNotFoundError") return null;
        throw error;
      }
    });
  }

  statuses(registry: AddressKey, contracts: readonly AddressKey[], block: ChainBlock): Promise<RegistryStatus[]> {
    if (contracts.length > STATUSES_PER_CALL)
      throw new RangeError(`at most ${STATUSES_PER_CALL} contracts a read, got ${contracts.length}`);
    return this.bounded("reading the operator registry", async () => {
      const via = await this.interfaceOf(registry, block);
      if (contracts.length === 1) return [toStatus(await this.readOne(registry, via, contracts[0]!, block), via)];
      const statuses: RegistryStatus[] = [];
      if (contracts.length > 0) {
        const results = await this.client.multicall({
          contracts: contracts.map((contract) => ({
            address: checksumAddress(registry),
            abi: REGISTRY_ABI,
            functionName: via,
            args: [checksumAddress(contract)],
          })),
          allowFailure: false,
          blockNumber: BigInt(block.number),
          deployless: true,
          batchSize: 0,
        });
        for (const result of results) statuses.push(toStatus(result, via));
      }
      return statuses;
    });
  }

  private readOne(registry: AddressKey, via: RegistryInterface, contract: AddressKey, block: ChainBlock): Promise<unknown> {
    return this.client.readContract({
      address: checksumAddress(registry),
      abi: REGISTRY_ABI,
      functionName: via,
      args: [checksumAddress(contract)],
      blockNumber: BigInt(block.number),
    });
  }

  /** readStatus where the registry has it (Blast, ours), else `operators`; neither: no registry at that address. */
  private async interfaceOf(registry: AddressKey, block: ChainBlock): Promise<RegistryInterface> {
    const known = this.interfaces.get(registry);
    if (known !== undefined) return known;
    const probe = "0x0000000000000000000000000000000000000001" as AddressKey;
    for (const via of ["readStatus", "operators"] as const) {
      try {
        toStatus(await this.readOne(registry, via, probe, block), via);
        this.interfaces.set(registry, via);
        return via;
      } catch (error) {
        if (!isMissingFunction(error)) throw error;
      }
    }
    throw new ChainReadError(
      `${checksumAddress(registry)} answers neither readStatus nor operators at block ${block.number}: it is not an operator registry`,
    );
  }

  /** Runs `work` within timeoutMs, every failure a ChainReadError that says what was being read. */
  private async bounded<T>(what: string, work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new ChainReadError(`${what}: no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([work(), deadline]);
    } catch (error) {
      throw error instanceof ChainReadError && error.message.startsWith(what)
        ? error
        : new ChainReadError(`${what}: ${describe(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }
}
