import fc from "fast-check";
import { keccak256, stringToBytes } from "viem";
import { describe, expect, it } from "vitest";
import { checksumAddress, parseAddress } from "../src/domain/address.js";

/** EIP-55 written out from the spec: uppercase a hex letter when its nibble of keccak(lowercase hex) is ≥ 8. */
function eip55(lowercaseHex40: string): string {
  const hash = keccak256(stringToBytes(lowercaseHex40)).slice(2);
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const c = lowercaseHex40[i]!;
    out += parseInt(hash[i]!, 16) >= 8 ? c.toUpperCase() : c;
  }
  return out;
}

const lowercaseHex40 = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => Buffer.from(bytes).toString("hex"));

/** Addresses whose checksum spelling really is mixed case (has letters of both cases). */
const isMixedCase = (text: string) => /[a-f]/.test(text.slice(2)) && /[A-F]/.test(text.slice(2));

/** Test vectors from the EIP-55 specification. */
const EIP55_VECTORS = [
  "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
  "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
  "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
  "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
  "0x52908400098527886E0F7030069857D2E4169EE7",
  "0xde709f2102306220921060314715629080e2fb77",
];

describe("parseAddress", () => {
  it("accepts all-lowercase hex and keys it as is", () => {
    fc.assert(
      fc.property(lowercaseHex40, (hex) => {
        expect(parseAddress(`0x${hex}`)).toBe(`0x${hex}`);
      }),
    );
  });

  it("accepts all-uppercase hex and keys it lowercase", () => {
    fc.assert(
      fc.property(lowercaseHex40, (hex) => {
        expect(parseAddress(`0x${hex.toUpperCase()}`)).toBe(`0x${hex}`);
      }),
    );
  });

  it("accepts correct EIP-55 mixed case", () => {
    for (const vector of EIP55_VECTORS) expect(parseAddress(vector)).toBe(vector.toLowerCase());
    fc.assert(
      fc.property(lowercaseHex40, (hex) => {
        expect(parseAddress(eip55(hex))).toBe(`0x${hex}`);
      }),
      { numRuns: 1000 },
    );
  });

  it("rejects mixed case with a wrong checksum", () => {
    fc.assert(
      fc.property(lowercaseHex40, fc.nat(39), (hex, position) => {
        const correct = eip55(hex);
        const letters = [...correct.slice(2)].map((c, i) => (/[a-fA-F]/.test(c) ? i : -1)).filter((i) => i >= 0);
        fc.pre(letters.length > 0);
        const flip = letters[position % letters.length]! + 2;
        const c = correct[flip]!;
        const wrong = correct.slice(0, flip) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + correct.slice(flip + 1);
        // Flipping the only letter of one case gives all-lower or all-upper, which is accepted by design.
        fc.pre(isMixedCase(wrong));
        expect(parseAddress(wrong)).toBeNull();
      }),
      { numRuns: 300 },
    );
    expect(parseAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD")).toBeNull();
    expect(parseAddress("0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")).toBeNull();
  });

  it("rejects wrong lengths, a missing or misspelled 0x prefix, and non-hex characters", () => {
    const hex = "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed";
    const rejected = [
      `0x${hex.slice(1)}`,
      `0x${hex}0`,
      `0x${hex}${hex}`,
      "0x",
      "",
      hex,
      `00${hex}`,
      `0X${hex}`,
      `x${hex}`,
      `0x${hex.slice(1)}g`,
      `0x${hex.slice(1)}G`,
      `0x${hex.slice(1)} `,
      ` 0x${hex}`,
      `0x${hex}\n`,
      `0x${hex.slice(2)}１２`,
      `0x${hex.slice(1)}-`,
    ];
    for (const text of rejected) expect(parseAddress(text), JSON.stringify(text)).toBeNull();
    fc.assert(
      fc.property(lowercaseHex40, fc.integer({ min: 0, max: 80 }), (full, length) => {
        fc.pre(length !== 40);
        expect(parseAddress(`0x${full.repeat(2).slice(0, length)}`)).toBeNull();
      }),
    );
  });

  it("rejects non-strings", () => {
    for (const value of [null, undefined, 0, 1n, {}, [], ["0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"], true]) {
      expect(parseAddress(value), String(value)).toBeNull();
    }
  });

  it("maps every spelling of one address to one key", () => {
    fc.assert(
      fc.property(lowercaseHex40, (hex) => {
        const keys = new Set([`0x${hex}`, `0x${hex.toUpperCase()}`, eip55(hex)].map((spelling) => parseAddress(spelling)));
        expect([...keys]).toEqual([`0x${hex}`]);
      }),
    );
  });
});

describe("checksumAddress", () => {
  it("prints the EIP-55 spelling of a key", () => {
    for (const vector of EIP55_VECTORS) expect(checksumAddress(vector.toLowerCase())).toBe(vector);
    fc.assert(
      fc.property(lowercaseHex40, (hex) => {
        const printed = checksumAddress(`0x${hex}`);
        expect(printed).toBe(eip55(hex));
        expect(parseAddress(printed)).toBe(`0x${hex}`);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("the cache of verified spellings", () => {
  it("accepts a remembered spelling without a keccak and still refuses any other mixed-case spelling of that address", () => {
    fc.assert(
      fc.property(lowercaseHex40, fc.nat(39), (hex, flip) => {
        const correct = eip55(hex);
        expect(parseAddress(correct)).toBe(`0x${hex}`); // verified, now remembered
        expect(parseAddress(correct)).toBe(`0x${hex}`); // answered from the cache
        // Flip the case of one letter: a wrong checksum, whatever the cache holds.
        const chars = [...correct];
        const letters = chars.map((c, i) => (i >= 2 && /[a-fA-F]/.test(c) ? i : -1)).filter((i) => i >= 0);
        if (letters.length < 2) return; // too few letters to flip one and stay mixed case
        const at = letters[flip % letters.length]!;
        chars[at] = chars[at] === chars[at]!.toLowerCase() ? chars[at]!.toUpperCase() : chars[at]!.toLowerCase();
        const wrong = chars.join("");
        if (wrong === wrong.toLowerCase() || wrong.slice(2) === wrong.slice(2).toUpperCase()) return;
        expect(parseAddress(wrong)).toBeNull();
      }),
      { numRuns: 2000 },
    );
  });
});
