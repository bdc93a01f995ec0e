/**
 * Operators on chain when the RPC endpoint fails (API.md: 503 CHAIN_UNAVAILABLE with Retry-After,
 * never a 500, never a guess), against the built server: an endpoint that is down, one that
 * accepts and never answers (answered within CHAIN_TIMEOUT_MS), one that answers garbage, JSON of
 * the wrong shape, an endless answer (bounded in size), a JSON-RPC error; a registry that is no
 * contract. Start-up: with the endpoint unreachable it starts (sign-ins 503); with the default
 * registry it waits for the chain's id (/readyz 503), then serves Blast's address (anvil_setCode);
 * on a chain without a default registry it stops with one line.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANVIL_PATH, ANVIL_SKIP_REASON, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { anvilSigner, deployDapp, startFakeRpc, tokenStatus, trySignIn, type FakeRpc, type RpcMode } from "./helpers/chain-registry.js";
import {
  CLI_PATH,
  assertBuilt,
  call,
  callOk,
  freePort,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { compiled } from "./helpers/solidity.js";
import { MULTICALL3_ADDRESS, ViemRegistryReader, STATUSES_PER_READ } from "../src/chain/viem-registry.js";
import { MULTICALL3_CREATION_CODE } from "../src/chain/multicall3.js";
import type { AddressKey } from "../src/domain/address.js";

const TIMEOUT_MS = 120_000;
const CHAIN_TIMEOUT_MS = 800;
const BLAST_POINTS_ADDRESS = "0x2536FE9ab3F511540F2f9e2eC2A805005C3Dd800";

describe.skipIf(ANVIL_PATH === null)(
  `operators on chain, the RPC endpoint failing${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`,
  () => {
    let anvil: Anvil;
    let rpc: FakeRpc;
    let server: ServerProcess;
    const dirs: string[] = [];
    const owner = anvilSigner(0);
    const operator = anvilSigner(1);
    let dapp: string;
    let registry: `0x${string}`;

    function chainEnv(rpcUrl: string, extra: Record<string, string> = {}) {
      const dir = tempDir("chain-rpc");
      dirs.push(dir);
      return {
        DATABASE_URL: sqliteUrl(dir),
        ADMIN_TOKEN: newAdminToken(),
        CHAIN_RPC_URL: rpcUrl,
        CHAIN_BLOCK_TAG: "latest",
        CHAIN_TIMEOUT_MS: String(CHAIN_TIMEOUT_MS),
        CHAIN_POLL_SECONDS: "0.5",
        ...extra,
      };
    }

    async function expectChainUnavailable(what: string) {
      const startedMs = Date.now();
      const response = await fetch(`${server.url}/v1/dapp-auth/challenge`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ contractAddress: dapp, operatorAddress: operator.address }),
      });
      const tookMs = Date.now() - startedMs;
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(response.status, `${what}: ${JSON.stringify(body)}`).toBe(503);
      expect(body.error.code).toBe("CHAIN_UNAVAILABLE");
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      return { tookMs, message: body.error.message };
    }

    beforeAll(async () => {
      assertBuilt();
      anvil = await startAnvil();
      registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
      dapp = await deployDapp(anvil, owner, registry, operator.address);
      rpc = await startFakeRpc(anvil.rpcUrl);
      server = await startServerProcess(chainEnv(rpc.url, { OPERATOR_REGISTRY_ADDRESS: registry }));
    }, TIMEOUT_MS);
    afterAll(async () => {
      await server?.kill("SIGTERM");
      await rpc?.close();
      await anvil?.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    it(
      "answers 503 CHAIN_UNAVAILABLE with Retry-After to every failure of the endpoint, and signs in again once it answers",
      { timeout: TIMEOUT_MS },
      async () => {
        const before = await trySignIn(server.url, dapp, operator);
        expect(before.solve?.status).toBe(200);
        for (const mode of ["hang", "reset", "garbage", "wrong-shape", "huge", "rpc-error"] as RpcMode[]) {
          rpc.mode = mode;
          const { tookMs, message } = await expectChainUnavailable(mode);
          expect(message).toContain("the chain could not be read");
          // Never the endpoint's URL (a provider's key often sits in it).
          expect(message).not.toContain(rpc.url);
          if (mode === "hang") expect(tookMs).toBeLessThan(CHAIN_TIMEOUT_MS + 5_000);
          const chain = await callOk(server.url, "GET", "/v1/chain", null);
          expect(chain.state).toBe("unavailable");
          expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^points_chain_up 0$/m);
          console.log(`${mode}: 503 in ${tookMs} ms: ${message}`);
        }
        // The token issued before still works: the follower changes nothing on a failed read.
        expect(await tokenStatus(server.url, dapp, before.token!)).toBe(200);
        rpc.mode = "proxy";
        expect((await trySignIn(server.url, dapp, operator)).solve?.status).toBe(200);
        expect((await callOk(server.url, "GET", "/v1/chain", null)).state).toBe("ok");
        const metrics = await (await fetch(`${server.url}/metrics`)).text();
        expect(metrics).toMatch(/^points_chain_up 1$/m);
        expect(metrics).toMatch(/^points_chain_block_number [1-9]\d*$/m);
      },
    );

    it("reads a registry that has only operators(address), a ban being the operator 0xbBbB…bBbB", { timeout: TIMEOUT_MS }, async () => {
      const legacy = await deploy(anvil, owner, "TestOperatorsOnlyRegistry");
      const [named, banned, none] = [randomAddress(), randomAddress(), randomAddress()];
      const set = async (contract: string, to: string) => {
        const hash = await anvil.wallet(owner).writeContract({
          address: legacy,
          abi: compiled("TestOperatorsOnlyRegistry").abi,
          functionName: "setOperator",
          args: [contract, to],
        });
        await anvil.publicClient.waitForTransactionReceipt({ hash });
      };
      await set(named, operator.address);
      await set(banned, "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB");
      const reader = new ViemRegistryReader(anvil.rpcUrl, 10_000);
      const block = await reader.block("latest");
      const keys = [named, banned, none].map((address) => address.toLowerCase() as AddressKey);
      const expected = [
        { operator: operator.address.toLowerCase(), banned: false },
        { operator: null, banned: true },
        { operator: null, banned: false },
      ];
      expect(await reader.statuses(legacy.toLowerCase() as AddressKey, keys, block)).toEqual(expected);
      for (const [index, key] of keys.entries()) {
        expect(await reader.statuses(legacy.toLowerCase() as AddressKey, [key], block)).toEqual([expected[index]]);
      }
    });

    it(
      "reads STATUSES_PER_READ statuses as the registry says, deployless and through Multicall3 at its address",
      { timeout: TIMEOUT_MS },
      async () => {
        const others = Array.from({ length: STATUSES_PER_READ - 1 }, () => randomAddress().toLowerCase() as AddressKey);
        const contracts = [dapp.toLowerCase() as AddressKey, ...others];
        const read = async (multicall: "deployed" | "deployless") => {
          const reader = new ViemRegistryReader(anvil.rpcUrl, 10_000);
          const statuses = await reader.statuses(registry.toLowerCase() as AddressKey, contracts, await reader.block("latest"));
          expect(statuses).toHaveLength(STATUSES_PER_READ);
          expect(statuses[0]).toEqual({ operator: operator.address.toLowerCase(), banned: false });
          expect(statuses.slice(1).every((status) => status.operator === null && !status.banned)).toBe(true);
          expect(reader.multicall).toBe(multicall);
        };
        await read("deployless");
        // Multicall3 deployed at its usual address, as on Blast: read there, 1,000 a call.
        const hash = await anvil.wallet(owner).sendTransaction({ data: MULTICALL3_CREATION_CODE });
        const created = (await anvil.publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
        const code = await anvil.publicClient.getCode({ address: created });
        await anvil.testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: code! });
        await read("deployed");
      },
    );

    it(
      "starts with the endpoint down (sign-ins 503, /v1/chain unavailable), and stops with one line on a chain without a default registry",
      { timeout: TIMEOUT_MS },
      async () => {
        const down = await startServerProcess(
          chainEnv(`http://127.0.0.1:${await freePort()}`, { OPERATOR_REGISTRY_ADDRESS: randomAddress() }),
        );
        try {
          const answer = await call(down.url, "POST", "/v1/dapp-auth/challenge", null, {
            contractAddress: dapp,
            operatorAddress: operator.address,
          });
          expect(answer.status).toBe(503);
          expect((answer.body.error as { code: string }).code).toBe("CHAIN_UNAVAILABLE");
          const chain = await callOk(down.url, "GET", "/v1/chain", null);
          expect(chain).toMatchObject({ chainId: null, blockNumber: null, readAt: null, state: "unavailable" });
        } finally {
          await down.kill("SIGTERM");
        }
        const unknown = await runCli(["serve"], { ...chainEnv(anvil.rpcUrl), PORT: String(await freePort()) });
        expect(unknown.code).toBe(1);
        expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
        expect(unknown.stderr).toContain(`chain ${anvil.chainId}`);
        expect(unknown.stderr).toContain("OPERATOR_REGISTRY_ADDRESS");
      },
    );

    it(
      "waits for the chain's id for Blast's registry (/readyz 503), refuses a registry that is no contract, then signs in at Blast's address",
      { timeout: TIMEOUT_MS },
      async () => {
        const blast = await startAnvil(["--chain-id", "81457"]);
        const blastRpc = await startFakeRpc(blast.rpcUrl, "reset");
        const port = await freePort();
        const env = { ...chainEnv(blastRpc.url), PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" };
        const child = spawn(process.execPath, [CLI_PATH, "serve"], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: "ignore" });
        const exited = new Promise<void>((resolveExit) => child.once("close", () => resolveExit()));
        const base = `http://127.0.0.1:${port}`;
        try {
          await pollUntil("the server to listen", 20_000, async () => {
            try {
              return (await fetch(`${base}/healthz`)).status === 200 ? true : undefined;
            } catch {
              return undefined;
            }
          });
          expect((await fetch(`${base}/readyz`)).status).toBe(503);
          blastRpc.mode = "proxy";
          await pollUntil("/readyz once the chain's id is known", 20_000, async () =>
            (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
          );
          expect(await callOk(base, "GET", "/v1/chain", null)).toMatchObject({ chainId: 81457, registry: BLAST_POINTS_ADDRESS });

          // Nothing at Blast's address yet: not a registry, never a guess.
          const noRegistry = await call(base, "POST", "/v1/dapp-auth/challenge", null, {
            contractAddress: dapp,
            operatorAddress: operator.address,
          });
          expect(noRegistry.status).toBe(503);
          expect((noRegistry.body.error as { message: string }).message).toContain("not an operator registry");

          await blast.testClient.setCode({ address: BLAST_POINTS_ADDRESS, bytecode: compiled("PointsOperatorRegistry").deployedBytecode });
          const blastDapp = await deployDapp(blast, owner, BLAST_POINTS_ADDRESS, operator.address);
          const signedIn = await trySignIn(base, blastDapp, operator);
          expect(signedIn.solve?.status, JSON.stringify(signedIn)).toBe(200);
        } finally {
          child.kill("SIGTERM");
          await exited;
          await blastRpc.close();
          await blast.stop();
        }
      },
    );
  },
);
