import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  deploylessCallViaBytecodeBytecode,
  http,
  numberToHex,
  parseAbi,
  type Address,
  type PublicClient,
} from "viem";
import { checksumAddress, parseAddress, type AddressKey } from "../domain/address.js";
import { registryStatus, type ChainBlock, type ChainBlockTag, type RegistryStatus } from "../domain/chain.js";
import { ChainReadError, type RegistryReader } from "./registry.js";
import { MULTICALL3_CREATION_CODE } from "./multicall3.js";

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

/** The largest answer read from the endpoint: STATUSES_PER_READ readStatus results in one eth_call are ≈ 450 KB of JSON. */
export const MAX_RPC_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Contracts one `statuses` reads at most: one eth_call where Multicall3 is deployed (≈ 9 M gas of readStatus, under the usual 50 M eth_call cap). */
export const STATUSES_PER_READ = 1000;
/** Multicall3's address on every chain it is deployed on (github.com/mds1/multicall). */
export const MULTICALL3_ADDRESS: `0x${string}` = "0xcA11bde05977b3631167028862bE2a173976CA11";
/**
 * Contracts read in one deployless eth_call, where Multicall3 is not deployed. That call is a
 * contract creation: its init code carries every call (≈ 224 bytes each after ≈ 6 KB of code;
 * EIP-3860 caps init code at 49,152 bytes), and it returns the results as the created contract's
 * code (≈ 224 bytes each; EIP-170 caps it at 24,576). On anvil 500 failed with "Transaction
 * creation failed" and 150 with CreateContractSizeLimit; 100 is ≈ 22 KB of results.
 */
export const DEPLOYLESS_STATUSES_PER_CALL = 100;

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

/**
 * Multicall3's aggregate3((address target, bool allowFailure, bytes callData)[]) of one registry
 * call per contract, encoded by hand: the layout is fixed (each call 36 bytes), and viem's
 * general encoder and decoder cost ≈ 13–23 ms of CPU for 100 calls, which at 10,000 followed
 * contracts every 5 s was a third of a core (docs/performance.md, Operators on chain).
 */
const AGGREGATE3_SELECTOR = "82ad56cb";
const FUNCTION_SELECTORS: Record<RegistryInterface, string> = { readStatus: "7c225982", operators: "13e7c9d8" };
/** Each encoded Call3: target, allowFailure, the offset of callData, its length, 36 bytes padded to 64. */
const CALL3_WORDS = 6;

function word(value: number | string): string {
  return (typeof value === "number" ? value.toString(16) : value).padStart(64, "0");
}

export function aggregate3Calldata(registry: AddressKey, via: RegistryInterface, contracts: readonly AddressKey[]): `0x${string}` {
  const target = word(registry.slice(2));
  const parts = [AGGREGATE3_SELECTOR, word(32), word(contracts.length)];
  for (let index = 0; index < contracts.length; index++) parts.push(word(32 * contracts.length + index * 32 * CALL3_WORDS));
  for (const contract of contracts) {
    parts.push(target, word(0), word(96), word(36), FUNCTION_SELECTORS[via], word(contract.slice(2)), "0".repeat(56));
  }
  return `0x${parts.join("")}`;
}

/** The n statuses of aggregate3's Result[] (bool success, bytes returnData); anything else is malformed. */
export function aggregate3Statuses(data: string, via: RegistryInterface, count: number): RegistryStatus[] {
  const malformed = () => new ChainReadError("the operator registry answered a malformed multicall result");
  const hex = data.slice(2);
  const at = (wordIndex: number) => hex.slice(wordIndex * 64, wordIndex * 64 + 64);
  const number = (wordIndex: number) => {
    const value = at(wordIndex);
    if (!/^0{48}[0-9a-f]{16}$/i.test(value)) throw malformed();
    return Number.parseInt(value, 16);
  };
  if (!/^(0x)?[0-9a-f]*$/i.test(data) || number(0) !== 32 || number(1) !== count) throw malformed();
  const resultWords = via === "readStatus" ? 3 : 1;
  const statuses: RegistryStatus[] = [];
  for (let index = 0; index < count; index++) {
    const offset = number(2 + index);
    if (offset % 32 !== 0) throw malformed();
    const start = 2 + offset / 32;
    if (number(start) !== 1 || number(start + 1) !== 64 || number(start + 2) !== 32 * resultWords) throw malformed();
    if (hex.length < (start + 3 + resultWords) * 64) throw malformed();
    const operatorWord = at(start + 3);
    if (!/^0{24}[0-9a-f]{40}$/i.test(operatorWord)) throw malformed();
    const operator = `0x${operatorWord.slice(24).toLowerCase()}` as AddressKey;
    const bannedWord = via === "readStatus" ? at(start + 4) : word(0);
    if (bannedWord !== word(0) && bannedWord !== word(1)) throw malformed();
    statuses.push(registryStatus(operator, bannedWord === word(1)));
  }
  return statuses;
}

/**
 * The eth_call data that runs `calldata` against Multicall3 without it being deployed: viem's
 * deployless wrapper (deploylessCallViaBytecodeBytecode) constructed with (Multicall3's creation
 * code, calldata), as viem's `call({code, data})` encodes it; the constant part built once.
 */
const DEPLOYLESS_PREFIX = (() => {
  const code = MULTICALL3_CREATION_CODE.slice(2);
  const padded = code.padEnd(Math.ceil(code.length / 64) * 64, "0");
  return `${deploylessCallViaBytecodeBytecode}${word(64)}${word(64 + 32 + padded.length / 2)}${word(code.length / 2)}${padded}`;
})();

function deploylessCalldata(calldata: `0x${string}`): `0x${string}` {
  const data = calldata.slice(2);
  return `${DEPLOYLESS_PREFIX}${word(data.length / 2)}${data.padEnd(Math.ceil(data.length / 64) * 64, "0")}` as `0x${string}`;
}

export class ViemRegistryReader implements RegistryReader {
  private readonly client: PublicClient;
  /** Which function each registry answers (decided by its first read; a registry's code does not change it). */
  private readonly interfaces = new Map<AddressKey, RegistryInterface>();
  private multicall3Deployed: boolean | null = null;

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
    if (contracts.length > STATUSES_PER_READ)
      throw new RangeError(`at most ${STATUSES_PER_READ} contracts a read, got ${contracts.length}`);
    return this.bounded("reading the operator registry", async () => {
      const via = await this.interfaceOf(registry, block);
      if (contracts.length === 1) return [toStatus(await this.readOne(registry, via, contracts[0]!, block), via)];
      const deployed = await this.hasMulticall3(block);
      const perCall = deployed ? STATUSES_PER_READ : DEPLOYLESS_STATUSES_PER_CALL;
      const statuses: RegistryStatus[] = [];
      for (let start = 0; start < contracts.length; start += perCall) {
        const chunk = contracts.slice(start, start + perCall);
        const calldata = aggregate3Calldata(registry, via, chunk);
        const call = deployed ? { to: MULTICALL3_ADDRESS, data: calldata } : { data: deploylessCalldata(calldata) };
        const data = await this.client.request({ method: "eth_call", params: [call, numberToHex(block.number)] });
        if (typeof data !== "string") throw new ChainReadError("the RPC endpoint answered a malformed eth_call result");
        statuses.push(...aggregate3Statuses(data, via, chunk.length));
      }
      return statuses;
    });
  }

  /** How many contracts are read: through Multicall3 at its address, deployless, or not yet known. */
  get multicall(): "deployed" | "deployless" | "unknown" {
    return this.multicall3Deployed === null ? "unknown" : this.multicall3Deployed ? "deployed" : "deployless";
  }

  /** Whether Multicall3 is deployed at its usual address (Blast and most chains): then no code is sent, and calls are larger. */
  private async hasMulticall3(block: ChainBlock): Promise<boolean> {
    this.multicall3Deployed ??=
      ((await this.client.getCode({ address: MULTICALL3_ADDRESS, blockNumber: BigInt(block.number) })) ?? "0x") !== "0x";
    return this.multicall3Deployed;
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
