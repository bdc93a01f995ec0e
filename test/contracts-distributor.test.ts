/**
 * PointsDistributor (contracts/PointsDistributor.sol) on a real EVM node (anvil), paying a season
 * that points-ledger itself snapshots: the built server finalizes three rounds of batches, takes a
 * `receivedCumulative` snapshot after each, and every recipient claims with the amount and proof
 * the API serves. Each claim must pay exactly what was gained since that recipient's last claim.
 */
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BaseError, ContractFunctionRevertedError, getAddress, parseEventLogs, parseUnits, type Abi, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DISTRIBUTOR_ABI } from "../src/chain/distributor.js";
import { ANVIL_PATH, ANVIL_SKIP_REASON, anvilAccount, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import {
  assertBuilt,
  call,
  callOk,
  newAdminToken,
  pollUntil,
  randomAddress,
  signIn,
  startOperatedServer,
  type ServerProcess,
} from "./helpers/process.js";
import { compiled } from "./helpers/solidity.js";

const DECIMALS = 18;
const UNIT = 10n ** 18n;
/** A round's batches finalize a second after they are accepted (MINIMUM_FINALIZE_SECONDS=1). */
const FINALIZE_WAIT_MS = 20_000;

type Distributor = { address: Address; abi: Abi };

/** The revert's custom error name (e.g. "InvalidProof"), or null when the call did not revert. */
async function revertName(attempt: Promise<unknown>): Promise<string | null> {
  try {
    await attempt;
    return null;
  } catch (error) {
    if (error instanceof BaseError) {
      const reverted = error.walk((cause) => cause instanceof ContractFunctionRevertedError);
      if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName ?? reverted.reason ?? "reverted";
    }
    throw error;
  }
}

describe.skipIf(ANVIL_PATH === null)(`PointsDistributor on anvil${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`, () => {
  let anvil: Anvil;
  const owner = anvilAccount(0);
  const stranger = anvilAccount(1);
  let token: Address;
  const tokenAbi = () => compiled("TestToken").abi;
  const distributorAbi = () => compiled("PointsDistributor").abi;

  beforeAll(async () => {
    anvil = await startAnvil();
    token = await deploy(anvil, owner, "TestToken");
  });
  afterAll(async () => anvil?.stop());

  async function newDistributor(timelockSeconds: bigint): Promise<Distributor> {
    const address = await deploy(anvil, owner, "PointsDistributor", [token, owner.address, timelockSeconds]);
    return { address, abi: distributorAbi() };
  }

  async function send(distributor: Distributor, functionName: string, args: readonly unknown[], account = owner) {
    // Simulated first, so a revert throws with its decoded custom error instead of mining a failed transaction.
    const { request } = await anvil.publicClient.simulateContract({
      account,
      address: distributor.address,
      abi: distributor.abi,
      functionName,
      args,
    });
    const hash = await anvil.wallet(account).writeContract(request);
    const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    return receipt;
  }

  async function read<T>(distributor: Distributor, functionName: string, args: readonly unknown[] = []): Promise<T> {
    return (await anvil.publicClient.readContract({ address: distributor.address, abi: distributor.abi, functionName, args })) as T;
  }

  async function balanceOf(account: Address): Promise<bigint> {
    return (await anvil.publicClient.readContract({
      address: token,
      abi: tokenAbi(),
      functionName: "balanceOf",
      args: [account],
    })) as bigint;
  }

  async function mint(to: Address, amount: bigint): Promise<void> {
    const hash = await anvil.wallet(owner).writeContract({ address: token, abi: tokenAbi(), functionName: "mint", args: [to, amount] });
    await anvil.publicClient.waitForTransactionReceipt({ hash });
  }

  it("has the ABI that API.md gives (and Ownable's owner functions), and what the service calls", () => {
    const signatures = distributorAbi()
      .filter((item) => item.type === "function" || item.type === "event")
      .map(
        (item) =>
          `${item.type} ${item.name}(${item.inputs.map((input) => input.type + ("indexed" in input && input.indexed ? " indexed" : "")).join(",")})`,
      );
    expect(signatures).toEqual(
      expect.arrayContaining([
        "function submitRoot(bytes32)",
        "function acceptRoot()",
        "function revokePendingRoot()",
        "function root()",
        "function pendingRoot()",
        "function acceptableAt()",
        "function timelockSeconds()",
        "function totalClaimed()",
        "function claimed(address)",
        "function claim(address,uint256,bytes32[])",
        "function token()",
        "function owner()",
        "event RootSubmitted(bytes32,uint256)",
        "event RootAccepted(bytes32)",
        "event Claimed(address indexed,uint256,uint256)",
      ]),
    );
    // What the service calls (src/chain/distributor.ts) is in the compiled contract exactly:
    // names, parameter types, indexed flags, return types and mutability.
    const shape = (item: Abi[number]) =>
      JSON.stringify({
        type: item.type,
        name: "name" in item ? item.name : null,
        inputs:
          "inputs" in item
            ? item.inputs.map((input) => [input.type, item.type === "event" && "indexed" in input && input.indexed === true])
            : [],
        outputs: "outputs" in item ? item.outputs.map((output) => output.type) : [],
        stateMutability: "stateMutability" in item ? item.stateMutability : null,
      });
    const compiledShapes = new Set(distributorAbi().map(shape));
    expect(DISTRIBUTOR_ABI.map(shape).filter((item) => !compiledShapes.has(item))).toEqual([]);
    expect(compiled("PointsDistributor").abi.find((item) => item.type === "constructor")).toMatchObject({
      inputs: [{ type: "address" }, { type: "address" }, { type: "uint256" }],
    });
  });

  describe("a season of three receivedCumulative snapshots taken by the service", () => {
    const adminToken = newAdminToken();
    const operatorKey = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba" as const;
    const pointsContract = randomAddress();
    let server: ServerProcess;
    let stopServer: () => Promise<void>;
    let operatorToken: string;

    beforeAll(async () => {
      assertBuilt();
      const started = await startOperatedServer("distributor", { adminToken, operatorKey, contract: pointsContract, points: "1000000" });
      server = started.server;
      stopServer = started.stop;
      operatorToken = await signIn(server.url, pointsContract, privateKeyToAccount(operatorKey));
    });
    afterAll(async () => stopServer?.());

    /** One batch to `transfers`, awaited until FINALIZED, then the snapshot `snapshotId` of receivedCumulative. */
    async function round(snapshotId: string, transfers: { toAddress: Address; points: string }[]) {
      const batchId = `round-${snapshotId}`;
      await callOk(server.url, "PUT", `/v1/contracts/${pointsContract}/batches/${batchId}`, operatorToken, {
        pointType: "PHASE2_POINTS",
        transfers,
        secondsToFinalize: 1,
      });
      await pollUntil(`batch ${batchId} finalized`, FINALIZE_WAIT_MS, async () => {
        const { batch } = (await callOk(server.url, "GET", `/v1/contracts/${pointsContract}/batches/${batchId}`, operatorToken)) as {
          batch: { status: string };
        };
        return batch.status === "FINALIZED" ? true : undefined;
      });
      const { snapshot } = (await callOk(server.url, "PUT", `/v1/admin/snapshots/${snapshotId}`, adminToken, {
        pointType: "PHASE2_POINTS",
        measure: "receivedCumulative",
        decimals: DECIMALS,
      })) as { snapshot: { root: Hex; total: string; leafCount: number } };
      return snapshot;
    }

    async function proofOf(snapshotId: string, account: Address) {
      const response = await call(server.url, "GET", `/v1/snapshots/${snapshotId}/proofs/${account}`, adminToken);
      if (response.status === 404) return null;
      expect(response.status).toBe(200);
      return response.body as { amount: string; proof: Hex[] };
    }

    it("pays each recipient exactly what it gained since its last claim, a flipped proof reverts, a second claim pays nothing", async () => {
      const distributor = await newDistributor(0n);
      const [a, b, c, d] = [randomAddress(), randomAddress(), randomAddress(), randomAddress()];
      // Round 1: a, b. Round 2: a, c (b skips its claim). Round 3: a, b, d (c never claims again).
      const rounds: { id: string; transfers: { toAddress: Address; points: string }[]; claimers: Address[] }[] = [
        {
          id: "s1",
          transfers: [
            { toAddress: a, points: "10.5" },
            { toAddress: b, points: "3" },
          ],
          claimers: [a, b],
        },
        {
          id: "s2",
          transfers: [
            { toAddress: a, points: "1.25" },
            { toAddress: c, points: "7" },
          ],
          claimers: [a, c],
        },
        {
          id: "s3",
          transfers: [
            { toAddress: a, points: "0.01" },
            { toAddress: b, points: "2" },
            { toAddress: d, points: "100" },
          ],
          claimers: [a, b, d],
        },
      ];
      const received = new Map<Address, bigint>(); // cumulative points × 10^18 per recipient, from the test's own arithmetic
      const paid = new Map<Address, bigint>();
      for (const { id, transfers, claimers } of rounds) {
        for (const transfer of transfers) {
          const units = parseUnits(transfer.points, DECIMALS); // viem's exact decimal parsing, independent of the service's
          received.set(transfer.toAddress, (received.get(transfer.toAddress) ?? 0n) + units);
        }
        const snapshot = await round(id, transfers);
        expect(snapshot.leafCount).toBe(received.size);
        // The distributor is funded with this snapshot's total less what it already paid.
        const totalUnits = [...received.values()].reduce((sum, value) => sum + value, 0n);
        const totalClaimed = await read<bigint>(distributor, "totalClaimed");
        await mint(distributor.address, totalUnits - totalClaimed - (await balanceOf(distributor.address)));
        const submitted = await send(distributor, "submitRoot", [snapshot.root]);
        const events = parseEventLogs({ abi: distributor.abi, logs: submitted.logs });
        expect(events.map((event) => event.eventName)).toEqual(["RootSubmitted", "RootAccepted"]);
        expect(await read<Hex>(distributor, "root")).toBe(snapshot.root);

        for (const account of claimers) {
          const served = (await proofOf(id, account))!;
          expect(BigInt(served.amount)).toBe(received.get(account));
          const before = await balanceOf(account);
          const receipt = await send(distributor, "claim", [account, BigInt(served.amount), served.proof], stranger);
          const gained = received.get(account)! - (paid.get(account) ?? 0n);
          expect((await balanceOf(account)) - before).toBe(gained);
          const [claimed] = parseEventLogs({ abi: distributor.abi, logs: receipt.logs, eventName: "Claimed" });
          expect(claimed?.args).toEqual({ account: getAddress(account), amount: gained, cumulativeAmount: received.get(account) });
          paid.set(account, received.get(account)!);
          expect(await read<bigint>(distributor, "claimed", [account])).toBe(received.get(account));

          // The same leaf again: no revert, nothing paid, no event.
          const again = await send(distributor, "claim", [account, BigInt(served.amount), served.proof], stranger);
          expect(parseEventLogs({ abi: distributor.abi, logs: again.logs })).toEqual([]);
          expect((await balanceOf(account)) - before).toBe(gained);
        }
      }
      // The distributor paid out exactly what the claimants were promised by the last root each of them claimed under.
      expect(await read<bigint>(distributor, "totalClaimed")).toBe([...paid.values()].reduce((sum, value) => sum + value, 0n));
      expect(paid.get(b)).toBe(5n * UNIT); // b skipped s2 and got 3 + 2 in s3's one claim

      // A flipped proof, a changed amount and someone else's proof all revert with InvalidProof.
      const served = (await proofOf("s3", a))!;
      expect(served.proof.length).toBeGreaterThan(0);
      const flipped = served.proof.map((hash, i) => (i === 0 ? ((hash.slice(0, -1) + (hash.endsWith("0") ? "1" : "0")) as Hex) : hash));
      expect(await revertName(send(distributor, "claim", [a, BigInt(served.amount), flipped], stranger))).toBe("InvalidProof");
      expect(await revertName(send(distributor, "claim", [a, BigInt(served.amount) + 1n, served.proof], stranger))).toBe("InvalidProof");
      expect(await revertName(send(distributor, "claim", [b, BigInt(served.amount), served.proof], stranger))).toBe("InvalidProof");
      // An earlier snapshot's leaf under the new root does not verify either.
      const old = (await proofOf("s1", a))!;
      expect(await revertName(send(distributor, "claim", [a, BigInt(old.amount), old.proof], stranger))).toBe("InvalidProof");
    });
  });

  describe("roots behind a timelock", () => {
    const TIMELOCK_SECONDS = 3600n;
    const account = randomAddress();
    const amount = 42n * UNIT;
    // A one-leaf tree (root = leaf, empty proof) and a two-leaf one, built by OpenZeppelin's library.
    const single = StandardMerkleTree.of([[account, amount.toString()]], ["address", "uint256"]);
    const pair = StandardMerkleTree.of(
      [
        [account, (2n * amount).toString()],
        [randomAddress(), "1"],
      ],
      ["address", "uint256"],
    );

    it("keeps a submitted root unclaimable until acceptRoot after the delay; the owner alone submits and revokes", async () => {
      const distributor = await newDistributor(TIMELOCK_SECONDS);
      await mint(distributor.address, 10n * amount);
      expect(await revertName(send(distributor, "submitRoot", [single.root], stranger))).toBe("OwnableUnauthorizedAccount");

      const submitted = await send(distributor, "submitRoot", [single.root]);
      const block = await anvil.publicClient.getBlock({ blockNumber: submitted.blockNumber });
      const [event] = parseEventLogs({ abi: distributor.abi, logs: submitted.logs, eventName: "RootSubmitted" });
      expect(event?.args).toEqual({ root: single.root, acceptableAt: block.timestamp + TIMELOCK_SECONDS });
      expect(await read<Hex>(distributor, "root")).toBe(`0x${"0".repeat(64)}`);
      expect(await read<Hex>(distributor, "pendingRoot")).toBe(single.root);
      expect(await revertName(send(distributor, "claim", [account, amount, []], stranger))).toBe("InvalidProof");
      expect(await revertName(send(distributor, "acceptRoot", [], stranger))).toBe("TimelockNotExpired");

      // One second short of the delay: still refused. At the delay: anyone accepts.
      await anvil.testClient.setNextBlockTimestamp({ timestamp: block.timestamp + TIMELOCK_SECONDS - 1n });
      await anvil.testClient.mine({ blocks: 1 });
      expect(await revertName(send(distributor, "acceptRoot", [], stranger))).toBe("TimelockNotExpired");
      // The call is checked at the latest block, stamped exactly acceptableAt (the transaction mines a second later).
      await anvil.testClient.setNextBlockTimestamp({ timestamp: block.timestamp + TIMELOCK_SECONDS });
      await anvil.testClient.mine({ blocks: 1 });
      const accepted = await send(distributor, "acceptRoot", [], stranger);
      expect(parseEventLogs({ abi: distributor.abi, logs: accepted.logs }).map((log) => log.eventName)).toEqual(["RootAccepted"]);
      expect(await read<Hex>(distributor, "root")).toBe(single.root);
      expect(await read<Hex>(distributor, "pendingRoot")).toBe(`0x${"0".repeat(64)}`);
      expect(await revertName(send(distributor, "acceptRoot", [], stranger))).toBe("NoPendingRoot");

      const before = await balanceOf(account);
      await send(distributor, "claim", [account, amount, single.getProof(0)], stranger);
      expect((await balanceOf(account)) - before).toBe(amount);

      // A revoked root never becomes claimable; the accepted one stays in force.
      await send(distributor, "submitRoot", [pair.root]);
      expect(await revertName(send(distributor, "revokePendingRoot", [], stranger))).toBe("OwnableUnauthorizedAccount");
      const revoked = await send(distributor, "revokePendingRoot", []);
      expect(parseEventLogs({ abi: distributor.abi, logs: revoked.logs }).map((log) => log.eventName)).toEqual(["RootRevoked"]);
      await anvil.testClient.increaseTime({ seconds: Number(TIMELOCK_SECONDS) });
      await anvil.testClient.mine({ blocks: 1 });
      expect(await revertName(send(distributor, "acceptRoot", [], stranger))).toBe("NoPendingRoot");
      expect(await read<Hex>(distributor, "root")).toBe(single.root);
      expect(await revertName(send(distributor, "claim", [account, 2n * amount, pair.getProof(0)], stranger))).toBe("InvalidProof");

      // Submitted again, accepted after the delay: the account is paid the difference.
      await send(distributor, "submitRoot", [pair.root]);
      await anvil.testClient.increaseTime({ seconds: Number(TIMELOCK_SECONDS) });
      await anvil.testClient.mine({ blocks: 1 });
      await send(distributor, "acceptRoot", [], stranger);
      await send(distributor, "claim", [account, 2n * amount, pair.getProof(0)], stranger);
      expect((await balanceOf(account)) - before).toBe(2n * amount);
      expect(await read<bigint>(distributor, "totalClaimed")).toBe(2n * amount);
      expect(await revertName(send(distributor, "submitRoot", [`0x${"0".repeat(64)}`]))).toBe("ZeroRoot");
    });
  });
});
