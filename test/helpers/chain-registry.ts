import { getAddress, type Account, type Address } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_KEYS, deploy, type Anvil } from "./anvil.js";
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
export async function trySignIn(base: string, contract: string, operator: PrivateKeyAccount) {
  const challenge = await call(base, "POST", "/v1/dapp-auth/challenge", null, {
    contractAddress: contract,
    operatorAddress: operator.address,
  });
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

/** anvil's funded account `index` (ANVIL_KEYS), as a key that signs messages too. */
export function anvilSigner(index: number): PrivateKeyAccount {
  return privateKeyToAccount(ANVIL_KEYS[index]!);
}

/** The status of a bearer token or API key on a contract route: 200 while it works, 401 once revoked. */
export async function tokenStatus(base: string, contract: string, token: string): Promise<number> {
  return (await call(base, "GET", `/v1/contracts/${contract}/point-balances`, token)).status;
}

/** How the fake endpoint answers (FakeRpc). */
export type RpcMode = "proxy" | "hang" | "reset" | "garbage" | "wrong-shape" | "huge" | "rpc-error";

export interface FakeRpc {
  url: string;
  mode: RpcMode;
  close(): Promise<void>;
}

/**
 * A JSON-RPC endpoint the test steers: `proxy` forwards to `upstream` (anvil); the others are what
 * a broken or hostile endpoint does: accept and never answer, reset the connection, answer text
 * that is no JSON, JSON of the wrong shape, an endless answer, a JSON-RPC error.
 */
export async function startFakeRpc(upstream: string, mode: RpcMode = "proxy"): Promise<FakeRpc> {
  const { createServer } = await import("node:http");
  const hanging = new Set<import("node:http").ServerResponse>();
  const fake: FakeRpc = { url: "", mode, close: async () => undefined };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => void answer(fake.mode, Buffer.concat(chunks).toString("utf8"), request, response));
  });
  async function answer(
    current: RpcMode,
    body: string,
    request: import("node:http").IncomingMessage,
    response: import("node:http").ServerResponse,
  ) {
    const id = (() => {
      try {
        const parsed = JSON.parse(body) as { id?: unknown } | { id?: unknown }[];
        return Array.isArray(parsed) ? (parsed[0]?.id ?? 1) : (parsed.id ?? 1);
      } catch {
        return 1;
      }
    })();
    switch (current) {
      case "proxy": {
        const upstreamAnswer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
        response.writeHead(upstreamAnswer.status, { "content-type": "application/json" });
        response.end(await upstreamAnswer.text());
        return;
      }
      case "hang":
        hanging.add(response);
        return;
      case "reset":
        request.socket.destroy();
        return;
      case "garbage":
        response.writeHead(200, { "content-type": "application/json" });
        response.end("<html>\u0000not json at all");
        return;
      case "wrong-shape":
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ jsonrpc: "2.0", id, result: { number: "twelve", hash: 12, chainId: [1] } }));
        return;
      case "rpc-error":
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32000, message: "header not found" } }));
        return;
      case "huge": {
        // An answer that never ends: 64 KB at a time until the reader gives up.
        response.writeHead(200, { "content-type": "application/json" });
        response.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":"0x`);
        const chunk = "ab".repeat(32 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < 64 * 1024 * 1024 && !response.destroyed) {
            sent += chunk.length;
            if (!response.write(chunk)) return void response.once("drain", pump);
          }
          response.end('"}');
        };
        pump();
        return;
      }
    }
  }
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", () => resolveListen()));
  const address = server.address();
  fake.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  fake.close = async () => {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  };
  return fake;
}
