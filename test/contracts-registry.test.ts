/**
 * PointsOperatorRegistry (contracts/PointsOperatorRegistry.sol) on a real EVM node (anvil): a
 * contract names its operator in its constructor, as Blast asked of every dapp; its operator
 * hands over on its behalf; the owner bans (the operator 0xbBbB…bBbB to readers of `operators`).
 * The same code is then put at Blast's Points address (anvil_setCode), so the Blast path of the
 * service reads Blast's interface where Blast has it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BaseError,
  ContractFunctionRevertedError,
  getAddress,
  pad,
  parseEventLogs,
  type Abi,
  type Account,
  type Address,
  type Hex,
} from "viem";
import { ANVIL_PATH, ANVIL_SKIP_REASON, anvilAccount, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { compiled } from "./helpers/solidity.js";

const BANNED_OPERATOR = "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB";
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** Blast's Points contract on Blast mainnet (API.md, Operators on chain). */
const BLAST_POINTS_ADDRESS = "0x2536FE9ab3F511540F2f9e2eC2A805005C3Dd800";

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

describe.skipIf(ANVIL_PATH === null)(
  `PointsOperatorRegistry on anvil${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`,
  () => {
    let anvil: Anvil;
    const owner = anvilAccount(0);
    const operator = anvilAccount(1);
    const nextOperator = anvilAccount(2);
    const stranger = anvilAccount(3);
    const abi = () => compiled("PointsOperatorRegistry").abi;

    beforeAll(async () => {
      anvil = await startAnvil();
    });
    afterAll(async () => anvil?.stop());

    async function send(registry: Address, functionName: string, args: readonly unknown[], account: Account) {
      const { request } = await anvil.publicClient.simulateContract({ account, address: registry, abi: abi(), functionName, args });
      const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash: await anvil.wallet(account).writeContract(request) });
      expect(receipt.status).toBe("success");
      return parseEventLogs({ abi: abi(), logs: receipt.logs }).map((log) => ({ eventName: log.eventName, args: log.args }));
    }

    async function status(registry: Address, contract: Address) {
      const [readOperator, isBanned, codeLength] = (await anvil.publicClient.readContract({
        address: registry,
        abi: abi(),
        functionName: "readStatus",
        args: [contract],
      })) as [Address, boolean, bigint];
      const operators = (await anvil.publicClient.readContract({
        address: registry,
        abi: abi(),
        functionName: "operators",
        args: [contract],
      })) as Address;
      return { operator: readOperator, isBanned, codeLength, operators };
    }

    /** A TestPointsContract whose constructor calls configurePointsOperator on `registry`. */
    async function deployDapp(
      registry: Address,
      named: Address,
    ): Promise<{ address: Address; events: { eventName: string; args: unknown }[] }> {
      const { abi: dappAbi, bytecode } = compiled("TestPointsContract");
      const hash = await anvil.wallet(owner).deployContract({ abi: dappAbi, bytecode, args: [registry, named] });
      const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
      const events = parseEventLogs({ abi: abi(), logs: receipt.logs }).map((log) => ({ eventName: log.eventName, args: log.args }));
      return { address: getAddress(receipt.contractAddress!), events };
    }

    it("has Blast's interface, the ban and an event with both fields indexed", () => {
      const signatures = (abi() as Abi)
        .filter((item) => item.type === "function" || item.type === "event")
        .map(
          (item) =>
            `${item.type} ${item.name}(${item.inputs.map((input) => input.type + ("indexed" in input && input.indexed ? " indexed" : "")).join(",")})`,
        );
      expect(signatures).toEqual(
        expect.arrayContaining([
          "function configurePointsOperator(address)",
          "function configurePointsOperatorOnBehalf(address,address)",
          "function readStatus(address)",
          "function operators(address)",
          "function setBanned(address,bool)",
          "event PointsOperator(address indexed,address indexed)",
        ]),
      );
      const readStatus = abi().find((item) => item.type === "function" && item.name === "readStatus");
      expect(readStatus && "outputs" in readStatus ? readStatus.outputs.map((output) => output.type) : null).toEqual([
        "address",
        "bool",
        "uint256",
      ]);
    });

    it("names a contract's operator from its constructor, hands it over on its behalf, and bans and unbans by its owner", async () => {
      const registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
      const dapp = await deployDapp(registry, operator.address);
      expect(dapp.events).toEqual([{ eventName: "PointsOperator", args: { contractAddress: dapp.address, operator: operator.address } }]);
      const configured = await status(registry, dapp.address);
      expect(configured).toMatchObject({ operator: operator.address, isBanned: false, operators: operator.address });
      expect(configured.codeLength).toBe(BigInt(((await anvil.publicClient.getCode({ address: dapp.address })) ?? "0x").length / 2 - 1));
      expect(configured.codeLength).toBeGreaterThan(0n);

      // Named once: the contract itself cannot rename it, nor can anyone but the operator.
      const dappAbi = compiled("TestPointsContract").abi;
      expect(
        await revertName(
          anvil.publicClient.simulateContract({
            account: owner,
            address: dapp.address,
            // The registry's errors bubble up through the dapp: decode them with its ABI too.
            abi: [...dappAbi, ...abi().filter((item) => item.type === "error")],
            functionName: "configureAgain",
            args: [registry, stranger.address],
          }),
        ),
      ).toBe("OperatorAlreadyConfigured");
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, stranger.address], stranger))).toBe(
        "NotOperator",
      );
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, nextOperator.address], owner))).toBe(
        "NotOperator",
      );
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, ZERO_ADDRESS], operator))).toBe(
        "InvalidOperator",
      );
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, BANNED_OPERATOR], operator))).toBe(
        "InvalidOperator",
      );

      // The operator hands over; the previous one has no say any more.
      expect(await send(registry, "configurePointsOperatorOnBehalf", [dapp.address, nextOperator.address], operator)).toEqual([
        { eventName: "PointsOperator", args: { contractAddress: dapp.address, operator: nextOperator.address } },
      ]);
      expect(await status(registry, dapp.address)).toMatchObject({ operator: nextOperator.address, isBanned: false });
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, operator.address], operator))).toBe(
        "NotOperator",
      );

      // The owner bans: readers of `operators` see 0xbBbB…, readers of readStatus the flag; nobody can hand over.
      expect(await revertName(send(registry, "setBanned", [dapp.address, true], stranger))).toBe("OwnableUnauthorizedAccount");
      expect(await send(registry, "setBanned", [dapp.address, true], owner)).toEqual([
        { eventName: "PointsOperator", args: { contractAddress: dapp.address, operator: BANNED_OPERATOR } },
      ]);
      expect(await status(registry, dapp.address)).toMatchObject({ operator: BANNED_OPERATOR, isBanned: true, operators: BANNED_OPERATOR });
      expect(await revertName(send(registry, "configurePointsOperatorOnBehalf", [dapp.address, operator.address], nextOperator))).toBe(
        "ContractBanned",
      );
      expect(await send(registry, "setBanned", [dapp.address, true], owner)).toEqual([]); // no change, no event

      // Unbanned: the operator named before the ban is back.
      expect(await send(registry, "setBanned", [dapp.address, false], owner)).toEqual([
        { eventName: "PointsOperator", args: { contractAddress: dapp.address, operator: nextOperator.address } },
      ]);
      expect(await status(registry, dapp.address)).toMatchObject({
        operator: nextOperator.address,
        isBanned: false,
        operators: nextOperator.address,
      });

      // A contract with none reads as the zero address; an EOA may name its own too (codeLength 0 says it is no contract).
      expect(await status(registry, stranger.address)).toEqual({
        operator: ZERO_ADDRESS,
        isBanned: false,
        codeLength: 0n,
        operators: ZERO_ADDRESS,
      });
      await send(registry, "configurePointsOperator", [operator.address], stranger);
      expect(await revertName(send(registry, "configurePointsOperator", [nextOperator.address], stranger))).toBe(
        "OperatorAlreadyConfigured",
      );
      expect(await status(registry, stranger.address)).toEqual({
        operator: operator.address,
        isBanned: false,
        codeLength: 0n,
        operators: operator.address,
      });
    });

    it("indexes both fields of PointsOperator, so one contract's changes are a log filter away", async () => {
      const registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
      const first = await deployDapp(registry, operator.address);
      const second = await deployDapp(registry, nextOperator.address);
      await send(registry, "configurePointsOperatorOnBehalf", [first.address, stranger.address], operator);
      const event = abi().find((item) => item.type === "event" && item.name === "PointsOperator");
      const ofFirst = await anvil.publicClient.getLogs({
        address: registry,
        event: event as Extract<Abi[number], { type: "event" }>,
        args: { contractAddress: first.address },
        fromBlock: 0n,
      });
      expect(ofFirst.map((log) => (log as unknown as { args: { operator: Address } }).args.operator)).toEqual([
        operator.address,
        stranger.address,
      ]);
      const toNext = await anvil.publicClient.getLogs({
        address: registry,
        event: event as Extract<Abi[number], { type: "event" }>,
        args: { operator: nextOperator.address },
        fromBlock: 0n,
      });
      expect(toNext.map((log) => log.topics[1])).toEqual([pad(second.address.toLowerCase() as Hex)]);
    });

    it("runs at Blast's Points address with its code set there (anvil_setCode), a dapp configuring it as on Blast", async () => {
      const { deployedBytecode } = compiled("PointsOperatorRegistry");
      await anvil.testClient.setCode({ address: BLAST_POINTS_ADDRESS, bytecode: deployedBytecode });
      // setCode copies no storage: Ownable's owner lives in slot 0, set here as the constructor would have.
      await anvil.testClient.setStorageAt({ address: BLAST_POINTS_ADDRESS, index: 0, value: pad(owner.address) });
      const dapp = await deployDapp(BLAST_POINTS_ADDRESS, operator.address);
      expect(dapp.events).toEqual([{ eventName: "PointsOperator", args: { contractAddress: dapp.address, operator: operator.address } }]);
      expect(await status(BLAST_POINTS_ADDRESS, dapp.address)).toMatchObject({ operator: operator.address, isBanned: false });
      await send(BLAST_POINTS_ADDRESS, "setBanned", [dapp.address, true], owner);
      expect(await status(BLAST_POINTS_ADDRESS, dapp.address)).toMatchObject({ operators: BANNED_OPERATOR, isBanned: true });
      expect(getAddress(BLAST_POINTS_ADDRESS)).toBe(BLAST_POINTS_ADDRESS);
    });
  },
);
