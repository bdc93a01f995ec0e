/**
 * The registry's multicall answer, decoded by hand (src/chain/viem-registry.ts aggregate3Statuses):
 * a well-formed Result[] gives the statuses (a ban by readStatus's flag or by the operator
 * 0xbBbB…bBbB, no operator as the zero address), and every malformed answer — truncated, a failed
 * call, a wrong length, dirty padding, a flag that is not a bool, garbage — is a ChainReadError
 * (503 CHAIN_UNAVAILABLE), never a status. Pure: runs without anvil.
 */
import { describe, expect, it } from "vitest";
import { encodeAbiParameters, type Hex } from "viem";
import { aggregate3Calldata, aggregate3Statuses } from "../src/chain/viem-registry.js";
import { ChainReadError } from "../src/chain/registry.js";
import type { AddressKey } from "../src/domain/address.js";

const OPERATOR = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const BANNED = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const ZERO = "0x0000000000000000000000000000000000000000";

/** aggregate3's answer as Multicall3 encodes it, each result readStatus's (operator, isBanned, codeLength). */
function answer(results: { success: boolean; operator: string; banned: boolean }[]): Hex {
  return encodeAbiParameters(
    [{ type: "tuple[]", components: [{ type: "bool" }, { type: "bytes" }] }],
    [
      results.map(
        ({ success, operator, banned }) =>
          [
            success,
            encodeAbiParameters([{ type: "address" }, { type: "bool" }, { type: "uint256" }], [operator as Hex, banned, 0n]),
          ] as const,
      ),
    ],
  ) as Hex;
}

describe("the registry's multicall answer", () => {
  it("decodes operators, bans and no operator", () => {
    const data = answer([
      { success: true, operator: OPERATOR, banned: false },
      { success: true, operator: BANNED, banned: true },
      { success: true, operator: ZERO, banned: false },
    ]);
    expect(aggregate3Statuses(data, "readStatus", 3)).toEqual([
      { operator: OPERATOR, banned: false },
      { operator: null, banned: true },
      { operator: null, banned: false },
    ]);
  });

  it("refuses every malformed answer", () => {
    const good = answer([{ success: true, operator: OPERATOR, banned: false }]);
    const malformed: Record<string, string> = {
      "a failed call": answer([{ success: false, operator: OPERATOR, banned: false }]),
      "another count": good,
      truncated: good.slice(0, good.length - 64),
      "dirty address padding": good.replace(`000000000000000000000000${OPERATOR.slice(2)}`, `ff0000000000000000000000${OPERATOR.slice(2)}`),
      "a flag that is not a bool": good.replace(/0{63}0(0{64})$/, "0".repeat(63) + "2$1"),
      "not hex": "0xzz",
      empty: "0x",
    };
    for (const [what, data] of Object.entries(malformed)) {
      const count = what === "another count" ? 2 : 1;
      expect(() => aggregate3Statuses(data, "readStatus", count), what).toThrow(ChainReadError);
    }
  });

  it("encodes one readStatus call per contract as Multicall3's aggregate3 does", () => {
    const contracts = [OPERATOR, BANNED] as AddressKey[];
    const encoded = aggregate3Calldata(ZERO.replace(/0$/, "1") as AddressKey, "readStatus", contracts);
    const expected = encodeAbiParameters(
      [{ type: "tuple[]", components: [{ type: "address" }, { type: "bool" }, { type: "bytes" }] }],
      [
        contracts.map(
          (contract) => [ZERO.replace(/0$/, "1") as Hex, false, `0x7c225982${contract.slice(2).padStart(64, "0")}` as Hex] as const,
        ),
      ],
    );
    expect(encoded).toBe(`0x82ad56cb${expected.slice(2)}`);
  });
});
