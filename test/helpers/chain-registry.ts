import { getAddress, type Account, type Address } from "viem";
import { deploy, type Anvil } from "./anvil.js";
import { call, callOk, type ApiResponse } from "./process.js";
import { compiled } from "./solidity.js";

/**
 * Operators on chain in the tests: a PointsOperatorRegistry on anvil, dapp contracts that name
 * their operator in their constructor (test/contracts/TestPointsContract.sol), the registry's
 * transactions, and the service's answers to them.
 */

/** Sends `functionName` to the registry from `account` and waits for it to be mined; the block it was mined in. */
export async function sendToRegistry(anvil: Anvil, registry: Address, functionName: string, args: readonly unknown[], account: Account) {
  const abi = compiled("PointsOperatorRegistry").abi;
  const { request } = await anvil.publicClient.simulateContract({ account, address: registry, abi, functionName, args });
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash: await anvil.wallet(account).writeContract(request) });
  if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
  return Number(receipt.blockNumber);
}

/** A TestPointsContract whose constructor names `operator` in `registry`. */
export async function deployDapp(anvil: Anvil, deployer: Account, registry: Address, operator: Address): Promise<Address> {
  return getAddress(await deploy(anvil, deployer, "TestPointsContract", [registry, operator]));
}

/** Challenge, sign, solve; the raw answers (the caller asserts). */
export async function trySignIn(base: string, contract: string, operator: Account & { signMessage(args: { message: string }): Promise<`0x${string}`> }) {
  const challenge = await call(base, "POST", "/v1/dapp-auth/challenge", null, { contractAddress: contract, operatorAddress: operator.address });
  if (challenge.status !== 200) return { challenge, solve: null as ApiResponse | null, token: null as string | null };
  const signature = await operator.signMessage({ message: String(challenge.body.message) });
  const solve = await call(base, "POST", "/v1/dapp-auth/solve", null, { challengeData: challenge.body.challengeData, signature });
  return { challenge, solve, token: solve.status === 200 ? String(solve.body.bearerToken) : null };
}

export interface EventJson {
  id: string;
  type: string;
  contractAddress: string | null;
  actor: Record<string, unknown>;
  data: Record<string, unknown>;
}

/** Every event of `types` on the admin stream, oldest first. */
export async function adminEvents(base: string, adminToken: string, types: string): Promise<EventJson[]> {
  const events: EventJson[] = [];
  let after: string | null = null;
  for (let page = 0; page < 100; page++) {
    const query: string = `types=${types}&limit=1000${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
    const answer = await callOk(base, "GET", `/v1/admin/events?${query}`, adminToken);
    events.push(...(answer.events as EventJson[]));
    after = (answer.cursor as string | null) ?? null;
    if (answer.hasMore !== true || after === null) break;
  }
  return events;
}

/** The status of a bearer token or API key on a contract route: 200 while it works, 401 once revoked. */
export async function tokenStatus(base: string, contract: string, token: string): Promise<number> {
  return (await call(base, "GET", `/v1/contracts/${contract}/point-balances`, token)).status;
}
