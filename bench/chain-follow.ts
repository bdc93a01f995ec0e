/**
 * Operators on chain, measured (docs/performance.md, Operators on chain): what following the
 * registry costs at N contracts with live tokens (CPU of the service's process per pass, against
 * CHAIN_POLL_SECONDS), and sign-in's challenge + solve latency over an RPC endpoint answering in
 * ≤ 5 ms (anvil on this machine). Run after `npm run build`:
 *
 *   node dist/bench/chain-follow.js [contracts=10000] [passes=10] [signIns=500]
 *
 * anvil from @foundry-rs/anvil-linux-amd64 (or ANVIL_PATH); the registry is compiled with solc and
 * its operators written straight into its storage (anvil_setStorageAt), so 10,000 contracts take
 * seconds, not 10,000 deployments. DATABASE_URL picks the database (a temporary SQLite file by default).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";
import {
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  getAddress,
  http,
  keccak256,
  pad,
  toHex,
  type Abi,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import pino from "pino";
import { ChainOperators } from "../src/chain/operators.js";
import { MULTICALL3_ADDRESS, ViemRegistryReader } from "../src/chain/viem-registry.js";
import { MULTICALL3_CREATION_CODE } from "../src/chain/multicall3.js";
import type { LedgerStore } from "../src/store/store.js";
import { systemClock, type Clock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import type { AddressKey } from "../src/domain/address.js";
import { hashToken, newBearerToken } from "../src/auth/tokens.js";
import { openStore } from "../src/ledger/open.js";
import { ChainFollowJob } from "../src/worker/chain-follow.js";
import { freePort, startChild } from "./server-process.js";
import { quantile, round } from "./stats.js";

const require = createRequire(import.meta.url);
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CLI_PATH = join(REPO_ROOT, "dist/src/cli/main.js");
const OPERATOR_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/** PointsOperatorRegistry's `_operators` mapping: slot 1 (Ownable's owner is slot 0). */
const OPERATORS_SLOT = 1n;
const SET_STORAGE_BATCH = 500;
const POLL_SECONDS = 5;

function anvilPath(): string {
  return process.env.ANVIL_PATH ?? join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin/anvil");
}

async function startAnvil(): Promise<{ rpcUrl: string; stop(): void }> {
  const child = spawn(anvilPath(), ["--host", "127.0.0.1", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const port = await new Promise<number>((resolvePort, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(output);
      if (!match) return;
      // anvil logs every request on stdout: drained unread from here on, so the bench's own CPU stays the service's.
      child.stdout.off("data", read);
      child.stdout.resume();
      resolvePort(Number(match[1]));
    };
    child.stdout.on("data", read);
    child.stderr.resume();
    child.once("close", (code) => reject(new Error(`anvil exited (${code})`)));
  });
  return { rpcUrl: `http://127.0.0.1:${port}`, stop: () => void child.kill("SIGTERM") };
}

function compileRegistry(): { abi: Abi; bytecode: Hex } {
  const source = "contracts/PointsOperatorRegistry.sol";
  const input = {
    language: "Solidity",
    sources: { [source]: { content: readFileSync(join(REPO_ROOT, source), "utf8") } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  };
  const findImport = (path: string) => ({ contents: readFileSync(require.resolve(path), "utf8") });
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }) as string) as {
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const compiled = output.contracts[source]!.PointsOperatorRegistry!;
  return { abi: compiled.abi, bytecode: `0x${compiled.evm.bytecode.object}` };
}

/** The registry names `operator` for every contract, written into its storage in JSON-RPC batches. */
async function nameOperators(rpcUrl: string, registry: Hex, contracts: readonly AddressKey[], operator: Hex): Promise<void> {
  for (let start = 0; start < contracts.length; start += SET_STORAGE_BATCH) {
    const batch = contracts.slice(start, start + SET_STORAGE_BATCH).map((contract, index) => ({
      jsonrpc: "2.0",
      id: start + index,
      method: "anvil_setStorageAt",
      params: [
        registry,
        keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [contract as Hex, OPERATORS_SLOT])),
        pad(operator),
      ],
    }));
    const answer = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch) });
    const results = (await answer.json()) as { error?: unknown }[];
    if (results.some((result) => result.error !== undefined)) throw new Error(`anvil_setStorageAt failed: ${JSON.stringify(results[0])}`);
  }
}

async function measureFollow(options: { rpcUrl: string; registry: Hex; contracts: AddressKey[]; operator: AddressKey; passes: number }) {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-chain-bench-"));
  const config = loadConfig({
    DATABASE_URL: process.env.DATABASE_URL ?? `sqlite:${join(dir, "ledger.db")}`,
    CHAIN_RPC_URL: options.rpcUrl,
    OPERATOR_REGISTRY_ADDRESS: options.registry,
    CHAIN_BLOCK_TAG: "latest",
  });
  const store = await openStore(config);
  await store.migrate();
  const chain = new ChainOperators(config.chain!, new ViemRegistryReader(options.rpcUrl, config.chain!.timeoutMs), systemClock);
  const { chainId } = await chain.identify();
  const block = await chain.head();
  const nowMs = Date.now();
  // Every contract followed, with a live token of its operator (as after its sign-in).
  for (const contract of options.contracts) {
    await store.applyChainObservation(contract, { operator: options.operator, banned: false, block }, chainId, nowMs, false);
    await store.createToken({
      tokenHash: hashToken(newBearerToken()),
      contract,
      operator: options.operator,
      createdAtMs: nowMs,
      expiresAtMs: nowMs + 3_600_000,
    });
  }
  const deployless = await measurePasses(store, chain, options.passes, options.contracts.length);
  // Then with Multicall3 at its usual address, as on Blast: 1,000 contracts an eth_call.
  await deployMulticall3(options.rpcUrl);
  const deployedChain = new ChainOperators(config.chain!, new ViemRegistryReader(options.rpcUrl, config.chain!.timeoutMs), systemClock);
  await deployedChain.identify();
  // A second follower: its clock an hour ahead, so the first one's lease has run out for it.
  const later = { now: () => Date.now() + 3_600_000 };
  const deployed = await measurePasses(store, deployedChain, options.passes, options.contracts.length, later);
  if ((deployedChain.reader as ViemRegistryReader).multicall !== "deployed") throw new Error("Multicall3 was not used at its address");
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { contracts: options.contracts.length, deployless, deployed };
}

async function measurePasses(store: LedgerStore, chain: ChainOperators, passes: number, contracts: number, clock: Clock = systemClock) {
  const job = new ChainFollowJob(store, chain, clock, pino({ level: "silent" }));
  await job.runOnce();
  const cpuMs: number[] = [];
  const wallMs: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const cpu = process.cpuUsage();
    const startedMs = performance.now();
    const result = await job.runOnce();
    wallMs.push(performance.now() - startedMs);
    const used = process.cpuUsage(cpu);
    cpuMs.push((used.user + used.system) / 1000);
    if (result.followed !== contracts || result.changed !== 0)
      throw new Error(`a pass followed ${result.followed}, changed ${result.changed}`);
  }
  const medianCpuMs = quantile(cpuMs, 0.5);
  return {
    passCpuMsMedian: round(medianCpuMs, 1),
    passCpuMsMax: round(Math.max(...cpuMs), 1),
    passWallMsMedian: round(quantile(wallMs, 0.5), 1),
    passWallMsMax: round(Math.max(...wallMs), 1),
    cpuShareOfOneCoreAtPollSeconds: { pollSeconds: POLL_SECONDS, percent: round((100 * medianCpuMs) / (POLL_SECONDS * 1000), 2) },
  };
}

/** Multicall3 at its usual address: created from its code, its runtime code then set there (anvil_setCode). */
async function deployMulticall3(rpcUrl: string): Promise<void> {
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ transport, pollingInterval: 20 });
  const chainId = await publicClient.getChainId();
  const chain = {
    id: chainId,
    name: "anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  };
  const hash = await createWalletClient({ account: privateKeyToAccount(DEPLOYER_KEY), chain, transport }).sendTransaction({
    data: MULTICALL3_CREATION_CODE,
  });
  const created = (await publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
  const code = await publicClient.getCode({ address: created });
  await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_setCode", params: [MULTICALL3_ADDRESS, code] }),
  });
}

/** Sign-ins against a built server: operators from the chain (`chain`), or registered by the administrator (the same work without the chain's reads). */
async function measureSignIn(options: { rpcUrl: string; registry: Hex; contracts: AddressKey[]; signIns: number; chain: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-chain-bench-"));
  const port = await freePort();
  const adminToken = "bench-admin-token-0123456789";
  const operatorsFrom: Record<string, string> = options.chain
    ? { CHAIN_RPC_URL: options.rpcUrl, OPERATOR_REGISTRY_ADDRESS: options.registry, CHAIN_BLOCK_TAG: "latest" }
    : { ADMIN_TOKEN: adminToken };
  const server = await startChild({
    name: "serve",
    script: CLI_PATH,
    args: ["serve"],
    env: {
      DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      // anvil's `finalized` block stays at 0, before the registry existed: read at `latest`.
      ...operatorsFrom,
      AUTH_RATE_LIMIT_PER_MINUTE: "100000000",
    },
    port,
    readyPath: "/readyz",
  });
  const operator = privateKeyToAccount(OPERATOR_KEY);
  const post = async (path: string, body: unknown) => {
    const answer = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await answer.json()) as Record<string, unknown>;
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(json)}`);
    return json;
  };
  const latencyMs: number[] = [];
  try {
    for (const contract of options.chain ? [] : options.contracts.slice(0, options.signIns)) {
      await fetch(`${server.url}/v1/admin/contracts/${contract}/operator`, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Bearer ${adminToken}` },
        body: JSON.stringify({ operatorAddress: operator.address }),
      });
    }
    for (let index = 0; index < options.signIns; index++) {
      const contract = getAddress(options.contracts[index % options.contracts.length]!);
      const challengeStartMs = performance.now();
      const challenge = await post("/v1/dapp-auth/challenge", { contractAddress: contract, operatorAddress: operator.address });
      const challengeMs = performance.now() - challengeStartMs;
      // Signing is the client's work, not the service's: outside the measured time.
      const signature = await operator.signMessage({ message: String(challenge.message) });
      const solveStartMs = performance.now();
      await post("/v1/dapp-auth/solve", { challengeData: challenge.challengeData, signature });
      latencyMs.push(challengeMs + performance.now() - solveStartMs);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    operatorsFrom: options.chain ? "chain" : "administrator",
    signIns: options.signIns,
    challengePlusSolveMs: {
      p50: round(quantile(latencyMs, 0.5), 1),
      p99: round(quantile(latencyMs, 0.99), 1),
      max: round(Math.max(...latencyMs), 1),
    },
  };
}

async function main(): Promise<void> {
  const [contractCount = 10_000, passes = 10, signIns = 500] = process.argv.slice(2).map(Number);
  const anvil = await startAnvil();
  try {
    const { abi, bytecode } = compileRegistry();
    const deployer = privateKeyToAccount(DEPLOYER_KEY);
    const transport = http(anvil.rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 20 });
    const chainId = await publicClient.getChainId();
    const chain = {
      id: chainId,
      name: "anvil",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    };
    const hash = await createWalletClient({ account: deployer, chain, transport }).deployContract({
      abi,
      bytecode,
      args: [deployer.address],
    });
    const registry = (await publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
    const contracts = Array.from(
      { length: contractCount },
      (_, index) =>
        keccak256(toHex(`contract-${index}`))
          .slice(0, 42)
          .toLowerCase() as AddressKey,
    );
    const operator = privateKeyToAccount(OPERATOR_KEY).address.toLowerCase() as AddressKey;
    const namingStartMs = performance.now();
    await nameOperators(anvil.rpcUrl, registry, contracts, operator as Hex);
    const namedMs = performance.now() - namingStartMs;
    const follow =
      process.env.BENCH_SIGN_IN_ONLY === "1" ? null : await measureFollow({ rpcUrl: anvil.rpcUrl, registry, contracts, operator, passes });
    console.error(JSON.stringify({ follow }));
    // Alternated, so both see the same machine: the difference is what reading the chain adds.
    const signIn = [];
    for (const chainFirst of [true, false, true, false]) {
      signIn.push(await measureSignIn({ rpcUrl: anvil.rpcUrl, registry, contracts, signIns, chain: chainFirst }));
    }
    console.log(
      JSON.stringify(
        { database: process.env.DATABASE_URL ? "postgres" : "sqlite", registryNamedMs: round(namedMs), follow, signIn },
        null,
        2,
      ),
    );
  } finally {
    anvil.stop();
  }
}

await main();
