/**
 * The gas of a claim on PointsDistributor, measured on anvil (docs/performance.md, "Claims on
 * chain"): a tree of 1,000 leaves always, and of 1,000,000 when CLAIM_GAS_MILLION=1 (a
 * measurement to run by hand: ≈ 15 s and 400 MB to build the tree). Each sampled account claims
 * once (its first claim: its token balance and its `claimed` slot go from zero to non-zero, the
 * dearest case), then a second leaf of a grown tree pays it the difference (both non-zero).
 *
 * The trees are built by the service's own builder (src/domain/merkle.ts, what a snapshot uses);
 * the 1,000-leaf root is compared with @openzeppelin/merkle-tree's, and every sampled proof is
 * checked with the library's `verify` before the chain checks it again.
 */
import { randomBytes } from "node:crypto";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAddress, type Address, type Hex } from "viem";
import type { AddressKey } from "../src/domain/address.js";
import { buildStandardTree, NODE_BYTES, proofIndexes, type StandardTree } from "../src/domain/merkle.js";
import { ANVIL_PATH, ANVIL_SKIP_REASON, anvilAccount, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { compiled } from "./helpers/solidity.js";

/** Claims sampled per tree, spread evenly over its leaves. */
const SAMPLE_CLAIMS = 100;
const MILLION = process.env.CLAIM_GAS_MILLION === "1";
/** A first claim's gas, whatever the depth up to 2^20 leaves: a regression bound, far above what is measured (docs/performance.md). */
const FIRST_CLAIM_GAS_BOUND = 120_000n;

interface Leaves {
  keys: AddressKey[];
  amounts: bigint[];
  tree: StandardTree;
}

async function randomLeaves(count: number, scale: bigint): Promise<Leaves> {
  const keys: AddressKey[] = [];
  const amounts: bigint[] = [];
  for (let i = 0; i < count; i++) {
    keys.push(`0x${randomBytes(20).toString("hex")}` as AddressKey);
    amounts.push((BigInt(`0x${randomBytes(8).toString("hex")}`) + 1n) * scale);
  }
  return { keys, amounts, tree: await buildStandardTree(keys, (i) => amounts[i]!) };
}

function proofOf(tree: StandardTree, index: number): Hex[] {
  return proofIndexes(tree.treeIndexes[index]!).map(
    (node) => `0x${tree.nodes.toString("hex", node * NODE_BYTES, (node + 1) * NODE_BYTES)}` as Hex,
  );
}

function percentile(sorted: bigint[], fraction: number): bigint {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

describe.skipIf(ANVIL_PATH === null)(`the gas of a claim${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`, () => {
  let anvil: Anvil;
  const owner = anvilAccount(0);
  const claimer = anvilAccount(1);

  beforeAll(async () => {
    anvil = await startAnvil();
  });
  afterAll(async () => anvil?.stop());

  /** Deploys a distributor of `leaves`, funds it, claims a sample; returns the gas of each claim. */
  async function measure(
    leaves: Leaves,
    token: Address,
    distributorRoot = leaves.tree.root,
  ): Promise<{ distributor: Address; gas: bigint[] }> {
    const distributor = await deploy(anvil, owner, "PointsDistributor", [token, owner.address, 0n]);
    return { distributor, gas: await claimSample(leaves, token, distributor, distributorRoot) };
  }

  async function claimSample(leaves: Leaves, token: Address, distributor: Address, root: string): Promise<bigint[]> {
    const { abi } = compiled("PointsDistributor");
    const tokenAbi = compiled("TestToken").abi;
    const wallet = anvil.wallet(claimer);
    const ownerWallet = anvil.wallet(owner);
    await anvil.publicClient.waitForTransactionReceipt({
      hash: await ownerWallet.writeContract({ address: distributor, abi, functionName: "submitRoot", args: [root as Hex] }),
    });
    const step = Math.max(1, Math.floor(leaves.keys.length / SAMPLE_CLAIMS));
    const gas: bigint[] = [];
    for (let i = 0; i < leaves.keys.length && gas.length < SAMPLE_CLAIMS; i += step) {
      const account = getAddress(leaves.keys[i]!);
      const amount = leaves.amounts[i]!;
      const proof = proofOf(leaves.tree, i);
      expect(StandardMerkleTree.verify(root, ["address", "uint256"], [account, amount.toString()], proof)).toBe(true);
      await anvil.publicClient.waitForTransactionReceipt({
        hash: await ownerWallet.writeContract({ address: token, abi: tokenAbi, functionName: "mint", args: [distributor, amount] }),
      });
      const before = (await anvil.publicClient.readContract({
        address: token,
        abi: tokenAbi,
        functionName: "balanceOf",
        args: [account],
      })) as bigint;
      // A fixed gas limit, so the transaction is sent as it is (no estimate), as a wallet would after its own estimate.
      const hash = await wallet.writeContract({
        address: distributor,
        abi,
        functionName: "claim",
        args: [account, amount, proof],
        gas: 300_000n,
      });
      const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
      const after = (await anvil.publicClient.readContract({
        address: token,
        abi: tokenAbi,
        functionName: "balanceOf",
        args: [account],
      })) as bigint;
      expect(after - before).toBeGreaterThan(0n);
      gas.push(receipt.gasUsed);
    }
    return gas.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  function report(label: string, depth: number, gas: bigint[]) {
    const figures = { p50: percentile(gas, 0.5), max: gas[gas.length - 1]!, min: gas[0]!, claims: gas.length, proofLength: depth };
    console.log(
      `claim gas, ${label}: ${JSON.stringify(figures, (_, value: unknown) => (typeof value === "bigint" ? Number(value) : value))}`,
    );
    return figures;
  }

  for (const count of MILLION ? [1_000, 1_000_000] : [1_000]) {
    it(
      `claims a sample of ${SAMPLE_CLAIMS} leaves of a ${count.toLocaleString("en")}-leaf tree, first and second cumulative claims`,
      { timeout: 600_000 },
      async () => {
        const token = await deploy(anvil, owner, "TestToken");
        const first = await randomLeaves(count, 10n ** 6n);
        if (count <= 1_000) {
          const reference = StandardMerkleTree.of(
            first.keys.map((key, i) => [getAddress(key), first.amounts[i]!.toString()]),
            ["address", "uint256"],
          );
          expect(first.tree.root).toBe(reference.root);
        }
        const { distributor, gas } = await measure(first, token);
        const depth = proofIndexes(first.tree.treeIndexes[0]!).length;
        const firstClaims = report(`${count} leaves, first claim`, depth, gas);
        expect(firstClaims.max).toBeLessThan(FIRST_CLAIM_GAS_BOUND);

        // The next snapshot of the season: every amount grown, the same accounts claim the difference.
        const grown = { keys: first.keys, amounts: first.amounts.map((amount) => amount * 2n), tree: first.tree };
        grown.tree = await buildStandardTree(grown.keys, (i) => grown.amounts[i]!);
        const second = await claimSample(grown, token, distributor, grown.tree.root);
        const secondClaims = report(`${count} leaves, second claim`, depth, second);
        expect(secondClaims.p50).toBeLessThan(firstClaims.p50);
      },
    );
  }
});
