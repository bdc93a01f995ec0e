import fc from "fast-check";
import { keccak256, stringToBytes } from "viem";
import { describe, expect, it } from "vitest";
import { keccak256AsciiHex, keccakAsciiInPlace } from "../src/domain/keccak.js";

/** ASCII strings up to one byte short of a Keccak-256 block (136 bytes). */
const asciiBelowOneBlock = fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((code) => String.fromCharCode(code)), maxLength: 135 });

describe("keccak256AsciiHex (the in-place Keccak-256 behind EIP-55 checks)", () => {
  it("hashes the empty string to the published Keccak-256 digest", () => {
    expect(keccak256AsciiHex("")).toBe("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  });

  it("agrees with viem's keccak256 on every length up to one block", () => {
    for (let length = 0; length < 136; length++) {
      const text = "0123456789abcdef".repeat(9).slice(0, length);
      expect(keccak256AsciiHex(text), `length ${length}`).toBe(keccak256(stringToBytes(text)).slice(2));
    }
  });

  it("agrees with viem's keccak256 on random ASCII strings", () => {
    fc.assert(
      fc.property(asciiBelowOneBlock, (text) => {
        expect(keccak256AsciiHex(text)).toBe(keccak256(stringToBytes(text)).slice(2));
      }),
      { numRuns: 500 },
    );
  });

  it("hashes only the characters from start on", () => {
    expect(Buffer.from(keccakAsciiInPlace("0xabc", 2).buffer).subarray(0, 32).toString("hex")).toBe(keccak256AsciiHex("abc"));
  });

  it("refuses inputs of a full block or more instead of hashing them wrongly", () => {
    expect(() => keccak256AsciiHex("a".repeat(136))).toThrow(RangeError);
  });
});
