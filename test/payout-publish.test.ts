/**
 * `points-ledger payout publish` (src/cli/payout-commands.ts) against a real EVM node (anvil) and
 * a real snapshot taken by the built CLI: it refuses a snapshot that the distributor's token
 * balance plus what it already paid does not cover (exit 1, one line with both figures), sends
 * submitRoot with the owner's key file, or prints {to, data} for a multisig with --calldata; a
 * snapshot at other decimals than the token's is refused too.
 */
import { writeFileSync } from "node:fs";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeFunctionData, getAddress, type Address, type Hex } from "viem";
import { ANVIL_KEYS, ANVIL_PATH, ANVIL_SKIP_REASON, anvilAccount, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { assertBuilt, freePort, randomAddress, runCli, sqliteUrl, tempDir, type Env } from "./helpers/process.js";
import { compiled } from "./helpers/solidity.js";

const UNIT = 10n ** 18n;
/** Each test runs the CLI a dozen times, each a Node.js start (1–2 s, more on a busy machine). */
const CLI_TESTS_TIMEOUT_MS = 300_000;

describe.skipIf(ANVIL_PATH === null)(`points-ledger payout publish${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`, () => {
  let anvil: Anvil;
  let dir: string;
  let env: Env;
  let token: Address;
  const owner = anvilAccount(0);
  const holderA = randomAddress();
  const holderB = randomAddress();

  async function cli(args: string[], extra: Env = {}) {
    return runCli(args, { ...env, ...extra });
  }

  async function read<T>(address: Address, name: string, functionName: string, args: readonly unknown[] = []): Promise<T> {
    return (await anvil.publicClient.readContract({ address, abi: compiled(name).abi, functionName, args })) as T;
  }

  async function mint(to: Address, amount: bigint) {
    const hash = await anvil
      .wallet(owner)
      .writeContract({ address: token, abi: compiled("TestToken").abi, functionName: "mint", args: [to, amount] });
    await anvil.publicClient.waitForTransactionReceipt({ hash });
  }

  async function snapshotRoot(id: string): Promise<Hex> {
    const shown = await cli(["snapshot", "show", id]);
    expect(shown.code, shown.stderr).toBe(0);
    return (JSON.parse(shown.stdout) as { root: Hex }).root;
  }

  beforeAll(async () => {
    assertBuilt();
    anvil = await startAnvil();
    token = await deploy(anvil, owner, "TestToken");
    dir = tempDir("payout");
    writeFileSync(join(dir, "owner.key"), `${ANVIL_KEYS[0]}\n`);
    writeFileSync(join(dir, "stranger.key"), ANVIL_KEYS[1]);
    env = { DATABASE_URL: sqliteUrl(dir), CHAIN_RPC_URL: anvil.rpcUrl };
    // Season 1: 12.5 + 40 points; season 2 adds 7.5 to holder A. The available measure, 18 decimals.
    expect((await cli(["credit", holderA, "PHASE2_POINTS", "12.5", "--id", "a1"])).code).toBe(0);
    expect((await cli(["credit", holderB, "PHASE2_POINTS", "40", "--id", "b1"])).code).toBe(0);
    expect((await cli(["snapshot", "take", "s1", "--point-type", "PHASE2_POINTS"])).code).toBe(0);
    expect((await cli(["credit", holderA, "PHASE2_POINTS", "7.5", "--id", "a2"])).code).toBe(0);
    expect((await cli(["snapshot", "take", "s2", "--point-type", "PHASE2_POINTS"])).code).toBe(0);
  }, CLI_TESTS_TIMEOUT_MS);
  afterAll(async () => {
    await anvil?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(
    "refuses an uncovered snapshot with both figures, publishes a covered one, and counts what was already paid",
    { timeout: CLI_TESTS_TIMEOUT_MS },
    async () => {
      const distributor = await deploy(anvil, owner, "PointsDistributor", [token, owner.address, 0n]);
      const publish = (id: string, extra: string[] = ["--key-file", join(dir, "owner.key")]) =>
        cli(["payout", "publish", id, "--distributor", distributor, ...extra]);

      // Nothing funded: refused, nothing sent.
      const bare = await publish("s1");
      expect(bare.code).toBe(1);
      expect(bare.stdout).toBe("");
      expect(bare.stderr.trim().split("\n")).toHaveLength(1);
      expect(bare.stderr).toContain(
        `snapshot s1 is not covered: its total is ${(525n * UNIT) / 10n} but the distributor holds 0 and has paid 0`,
      );
      // One base unit short: still refused; --calldata checks too when CHAIN_RPC_URL is set.
      await mint(distributor, (525n * UNIT) / 10n - 1n);
      expect((await publish("s1")).code).toBe(1);
      const calldataRefused = await publish("s1", ["--calldata"]);
      expect(calldataRefused.code).toBe(1);
      expect(calldataRefused.stdout).toBe("");
      expect(await read<Hex>(distributor, "PointsDistributor", "root")).toBe(`0x${"0".repeat(64)}`);

      // Covered exactly: sent by the owner, the hash printed, the root in force.
      await mint(distributor, 1n);
      const sent = await publish("s1");
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout.trim()).toMatch(/^0x[0-9a-f]{64}$/);
      const receipt = await anvil.publicClient.getTransactionReceipt({ hash: sent.stdout.trim() as Hex });
      expect(receipt.status).toBe("success");
      expect(getAddress(receipt.to!)).toBe(distributor);
      expect(await read<Hex>(distributor, "PointsDistributor", "root")).toBe(await snapshotRoot("s1"));

      // Everyone claims season 1 with the CLI's proofs: the distributor is empty, and has paid 52.5.
      for (const holder of [holderA, holderB]) {
        const proof = JSON.parse((await cli(["snapshot", "proof", "s1", holder])).stdout) as { amount: string; proof: Hex[] };
        const hash = await anvil.wallet(owner).writeContract({
          address: distributor,
          abi: compiled("PointsDistributor").abi,
          functionName: "claim",
          args: [holder, BigInt(proof.amount), proof.proof],
        });
        expect((await anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
      }
      expect(await read<bigint>(token, "TestToken", "balanceOf", [distributor])).toBe(0n);
      // Season 2 totals 60: 52.5 already paid plus 7.5 more covers it; 7.5 less a unit does not.
      await mint(distributor, (75n * UNIT) / 10n - 1n);
      const short = await publish("s2");
      expect(short.code).toBe(1);
      expect(short.stderr).toContain(
        `its total is ${60n * UNIT} but the distributor holds ${(75n * UNIT) / 10n - 1n} and has paid ${(525n * UNIT) / 10n}`,
      );
      await mint(distributor, 1n);
      expect((await publish("s2")).code).toBe(0);
      expect(await read<Hex>(distributor, "PointsDistributor", "root")).toBe(await snapshotRoot("s2"));

      // A key that is not the owner's is refused by the contract's error, before anything is spent.
      const stranger = await publish("s1", ["--key-file", join(dir, "stranger.key")]);
      expect(stranger.code).toBe(1);
      expect(stranger.stdout).toBe("");
      expect(stranger.stderr).toContain("reverted with OwnableUnauthorizedAccount");
    },
  );

  it(
    "prints {to, data} for a multisig with --calldata, which submits the root when sent as it is",
    { timeout: CLI_TESTS_TIMEOUT_MS },
    async () => {
      const distributor = await deploy(anvil, owner, "PointsDistributor", [token, owner.address, 3600n]);
      // Without CHAIN_RPC_URL nothing is checked: the call is printed from the database alone.
      const printed = await cli(["payout", "publish", "s1", "--distributor", distributor.toLowerCase(), "--calldata"], {
        CHAIN_RPC_URL: "",
      });
      expect(printed.code, printed.stderr).toBe(0);
      const lines = printed.stdout.trim().split("\n");
      expect(lines).toHaveLength(1);
      const call = JSON.parse(lines[0]!) as { to: Address; data: Hex };
      expect(Object.keys(call)).toEqual(["to", "data"]);
      expect(call.to).toBe(distributor);
      const decoded = decodeFunctionData({ abi: compiled("PointsDistributor").abi, data: call.data });
      expect(decoded).toEqual({ functionName: "submitRoot", args: [await snapshotRoot("s1")] });
      // The multisig (here the owner itself) sends exactly that: the root is pending behind the timelock.
      const hash = await anvil.wallet(owner).sendTransaction({ to: call.to, data: call.data });
      expect((await anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
      expect(await read<Hex>(distributor, "PointsDistributor", "pendingRoot")).toBe(await snapshotRoot("s1"));
    },
  );

  it(
    "fails with one line for no contract, an RPC endpoint that does not answer, an unknown snapshot; usage mistakes exit 2",
    { timeout: CLI_TESTS_TIMEOUT_MS },
    async () => {
      const keyFile = ["--key-file", join(dir, "owner.key")];
      const noContract = await cli(["payout", "publish", "s1", "--distributor", randomAddress(), ...keyFile]);
      expect(noContract.code).toBe(1);
      expect(noContract.stderr).toMatch(/^points-ledger: no contract at 0x[0-9a-fA-F]{40} on this chain/);

      const closedPort = await freePort();
      const down = await cli(["payout", "publish", "s1", "--distributor", randomAddress(), ...keyFile], {
        CHAIN_RPC_URL: `http://127.0.0.1:${closedPort}`,
      });
      expect(down.code).toBe(1);
      expect(down.stderr.trim().split("\n")).toHaveLength(1);
      expect(down.stderr).toContain("over CHAIN_RPC_URL");

      // A snapshot at other decimals than the token's (TestToken: 18) would pay 10^6 times too little.
      expect((await cli(["snapshot", "take", "s1-12", "--point-type", "PHASE2_POINTS", "--decimals", "12"])).code).toBe(0);
      const distributor = await deploy(anvil, owner, "PointsDistributor", [token, owner.address, 0n]);
      await mint(distributor, 100n * UNIT);
      const wrongDecimals = await cli(["payout", "publish", "s1-12", "--distributor", distributor, ...keyFile]);
      expect(wrongDecimals.code).toBe(1);
      expect(wrongDecimals.stderr).toContain(`snapshot s1-12 has decimals 12 but token ${token} has 18`);
      expect(await read<Hex>(distributor, "PointsDistributor", "root")).toBe(`0x${"0".repeat(64)}`);

      const unknown = await cli(["payout", "publish", "nope", "--distributor", randomAddress(), ...keyFile]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("no snapshot nope");

      for (const args of [
        ["payout", "publish", "s1", "--distributor", "0x123", ...keyFile],
        ["payout", "publish", "s1", "--distributor", randomAddress()],
        ["payout", "publish", "s1", "--distributor", randomAddress(), "--calldata", ...keyFile],
        ["payout", "publish", "s1", "--distributor", randomAddress(), "--key-file", join(dir, "missing.key")],
        ["payout", "publish", "s1", "--distributor", randomAddress(), "--key-file", join(dir, "ledger.db")],
        ["payout", "send", "s1"],
      ]) {
        const result = await cli(args);
        expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
        expect(result.stderr).not.toContain(ANVIL_KEYS[0].slice(2));
      }
      const noRpc = await cli(["payout", "publish", "s1", "--distributor", randomAddress(), ...keyFile], { CHAIN_RPC_URL: "" });
      expect(noRpc.code).toBe(2);
      expect(noRpc.stderr).toContain("CHAIN_RPC_URL is needed");
    },
  );
});
