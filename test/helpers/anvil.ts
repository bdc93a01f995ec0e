import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  type Abi,
  type Account,
  type Chain,
  type Transport,
  type Address,
  type Hex,
  type PublicClient,
  type TestClient,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { compiled } from "./solidity.js";

/**
 * A real EVM node for the tests: anvil, the binary that `@foundry-rs/anvil-linux-amd64` (a
 * devDependency) ships, started on a free loopback port (anvil picks it: `--port 0`) and stopped
 * with the test. Where the package has no binary for this machine, ANVIL_PATH names one; without
 * either the tests that need it skip with ANVIL_SKIP_REASON.
 */

const require = createRequire(import.meta.url);
/** Start-up is a few tens of milliseconds; generous for a busy 2-core machine. */
const ANVIL_READY_TIMEOUT_MS = 20_000;
const OUTPUT_LIMIT_CHARS = 16_000;
/** anvil mines each transaction at once: a receipt is there on the first poll or the next. */
const POLLING_INTERVAL_MS = 20;

function findAnvil(): string | null {
  if (process.env.ANVIL_PATH) return existsSync(process.env.ANVIL_PATH) ? process.env.ANVIL_PATH : null;
  try {
    const binary = join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin/anvil");
    return existsSync(binary) ? binary : null;
  } catch {
    return null;
  }
}

export const ANVIL_PATH = findAnvil();
export const ANVIL_SKIP_REASON =
  "anvil is missing: on linux-x64 `npm ci` installs it (@foundry-rs/anvil-linux-amd64, a devDependency); elsewhere set ANVIL_PATH to an anvil binary. Chain tests skipped";
if (ANVIL_PATH === null) console.warn(ANVIL_SKIP_REASON);

/** anvil's first accounts (its default mnemonic "test test … junk"): funded with 10,000 ETH each. */
export const ANVIL_KEYS = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
] as const satisfies readonly Hex[];

export const ANVIL_CHAIN_ID = 31337;

export interface Anvil {
  rpcUrl: string;
  chainId: number;
  publicClient: PublicClient;
  testClient: TestClient<"anvil", Transport, Chain>;
  /** A wallet client signing with `account` (one of ANVIL_KEYS, or any funded account). */
  wallet(account: Account): WalletClient<Transport, Chain, Account>;
  output(): string;
  stop(): Promise<void>;
}

/** Starts anvil with `args` (e.g. `["--chain-id", "81457"]`) and resolves once it listens. */
export async function startAnvil(args: string[] = []): Promise<Anvil> {
  if (ANVIL_PATH === null) throw new Error(ANVIL_SKIP_REASON);
  const child = spawn(ANVIL_PATH, ["--host", "127.0.0.1", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (chunk: Buffer) => (output = (output + chunk.toString("utf8")).slice(-OUTPUT_LIMIT_CHARS));
  child.stderr.on("data", collect);
  const port = await listeningPort(child, collect, () => output);
  const rpcUrl = `http://127.0.0.1:${port}`;
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ transport });
  const chainId = await publicClient.getChainId();
  const chain = defineChain({
    id: chainId,
    name: "anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const exited = new Promise<void>((resolveExit) => child.once("close", () => resolveExit()));
  return {
    rpcUrl,
    chainId,
    publicClient: createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    testClient: createTestClient({ chain, mode: "anvil", transport, pollingInterval: POLLING_INTERVAL_MS }),
    wallet: (account) => createWalletClient({ account, chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** anvil prints `Listening on 127.0.0.1:<port>` once it accepts connections. */
function listeningPort(child: ChildProcess, collect: (chunk: Buffer) => void, output: () => string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`anvil did not listen within ${ANVIL_READY_TIMEOUT_MS} ms:\n${output()}`));
    }, ANVIL_READY_TIMEOUT_MS);
    child.stdout?.on("data", (chunk: Buffer) => {
      collect(chunk);
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(output());
      if (match) {
        clearTimeout(timer);
        resolvePort(Number(match[1]));
      }
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited (${code}) before listening:\n${output()}`));
    });
  });
}

export function anvilAccount(index: number): Account {
  return privateKeyToAccount(ANVIL_KEYS[index]!);
}

/** Deploys the compiled contract `name` from `account` and returns its address once mined. */
export async function deploy(anvil: Anvil, account: Account, name: string, args: readonly unknown[] = []): Promise<Address> {
  const { abi, bytecode } = compiled(name);
  const hash = await anvil.wallet(account).deployContract({ abi: abi as Abi, bytecode, args });
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success" || !receipt.contractAddress) throw new Error(`deploying ${name} failed: ${receipt.status}`);
  return getAddress(receipt.contractAddress);
}
