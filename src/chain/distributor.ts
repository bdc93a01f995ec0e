import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  encodeFunctionData,
  http,
  parseAbi,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { PAYOUT_RPC_RETRIES, PAYOUT_RPC_TIMEOUT_MS } from "../domain/limits.js";

/**
 * What the service calls on contracts/PointsDistributor.sol: the functions `payout publish` uses,
 * in viem's human-readable form (test/contracts-distributor.test.ts checks each against the compiled
 * contract, so a change of the Solidity fails there).
 */
export const DISTRIBUTOR_ABI = parseAbi([
  "function submitRoot(bytes32 newRoot)",
  "function token() view returns (address)",
  "function totalClaimed() view returns (uint256)",
  "function owner() view returns (address)",
  "function timelockSeconds() view returns (uint256)",
  "function root() view returns (bytes32)",
  "event RootSubmitted(bytes32 root, uint256 acceptableAt)",
  "error OwnableUnauthorizedAccount(address account)",
  "error ZeroRoot()",
]);

export const ERC20_ABI = parseAbi([
  "function balanceOf(address account) view returns (uint256)",
  "function decimals() view returns (uint8)",
]);

/** An RPC client with bounded calls: a hung endpoint fails the command instead of holding it. */
export function rpcClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { timeout: PAYOUT_RPC_TIMEOUT_MS, retryCount: PAYOUT_RPC_RETRIES }) });
}

export function submitRootCalldata(root: Hex): Hex {
  return encodeFunctionData({ abi: DISTRIBUTOR_ABI, functionName: "submitRoot", args: [root] });
}

export interface Coverage {
  token: Address;
  /** The distributor's balance of its token, in the token's base units. */
  balance: bigint;
  /** What it has paid in all (totalClaimed()). */
  claimed: bigint;
  /** The token's decimals(), or null when it has none (the function is optional in ERC-20). */
  decimals: number | null;
}

/**
 * What a distributor can pay under a cumulative root: its balance plus what it already paid,
 * since the claims of a cumulative snapshot include everything paid before. One block for all
 * three reads, so a claim mined between them cannot be counted twice or not at all.
 */
export async function distributorCoverage(client: PublicClient, distributor: Address): Promise<Coverage> {
  const blockNumber = await client.getBlockNumber();
  const [token, claimed] = await Promise.all([
    client.readContract({ address: distributor, abi: DISTRIBUTOR_ABI, functionName: "token", blockNumber }),
    client.readContract({ address: distributor, abi: DISTRIBUTOR_ABI, functionName: "totalClaimed", blockNumber }),
  ]);
  const balance = await client.readContract({
    address: token,
    abi: ERC20_ABI,
    functionName: "balanceOf",
    args: [distributor],
    blockNumber,
  });
  const decimals = await client
    .readContract({ address: token, abi: ERC20_ABI, functionName: "decimals", blockNumber })
    .catch((error: unknown) => {
      // Only a token without the function (a revert, or no answer data) reads as none; an RPC failure stays one.
      if (
        error instanceof BaseError &&
        error.walk((cause) => cause instanceof ContractFunctionRevertedError || cause instanceof ContractFunctionZeroDataError)
      )
        return null;
      throw error;
    });
  return { token, balance, claimed, decimals };
}
