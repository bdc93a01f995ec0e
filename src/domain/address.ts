import { digestByte, keccakAsciiInPlace } from "./keccak.js";

/** A lowercase `0x` + 40 hex address: the one spelling the store keys on. */
export type AddressKey = string & { readonly __addressKey: unique symbol };

export const ADDRESS_PATTERN = "^0x[0-9a-fA-F]{40}$";
const ADDRESS_SHAPE = /^0x[0-9a-fA-F]{40}$/;
const UPPERCASE_HEX = /^0x[0-9A-F]{40}$/;

export const ZERO_ADDRESS_KEY = "0x0000000000000000000000000000000000000000" as AddressKey;

const CODE_LOWER_A = 97;
const CODE_LOWER_F = 102;
const CODE_UPPER_A = 65;
const CODE_UPPER_F = 70;

/** Nibble `i` (0 ≤ i < 40) of keccak(lowercase hex): EIP-55 uppercases a letter when it is ≥ 8. */
function checksumNibble(hashed: Int32Array, i: number): number {
  const byte = digestByte(hashed, i >> 1);
  return i & 1 ? byte & 0x0f : byte >> 4;
}

/** Does mixed-case `address` (shape already checked) carry its EIP-55 checksum? */
function hasChecksum(address: string, key: string): boolean {
  const hashed = keccakAsciiInPlace(key.slice(2));
  for (let i = 0; i < 40; i++) {
    const code = address.charCodeAt(i + 2);
    const upper = checksumNibble(hashed, i) >= 8;
    if (code >= CODE_LOWER_A && code <= CODE_LOWER_F && upper) return false;
    if (code >= CODE_UPPER_A && code <= CODE_UPPER_F && !upper) return false;
  }
  return true;
}

/**
 * Accepts all-lowercase, all-uppercase, or EIP-55 mixed case with a correct checksum; returns
 * the lowercase key, or null. Only mixed case costs a keccak, and the in-place one in keccak.ts
 * (a full batch is 2000 addresses; viem's general keccak made this the request's hottest path).
 */
export function parseAddress(input: unknown): AddressKey | null {
  if (typeof input !== "string" || !ADDRESS_SHAPE.test(input)) return null;
  const key = input.toLowerCase();
  if (key === input || UPPERCASE_HEX.test(input)) return key as AddressKey;
  return hasChecksum(input, key) ? (key as AddressKey) : null;
}

/** The EIP-55 checksummed spelling every response uses. */
export function checksumAddress(key: string): `0x${string}` {
  if (!ADDRESS_SHAPE.test(key)) throw new TypeError(`not an address: ${key.slice(0, 50)}`);
  const lower = key.toLowerCase();
  const hashed = keccakAsciiInPlace(lower.slice(2));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const c = lower[i + 2]!;
    out += c >= "a" && checksumNibble(hashed, i) >= 8 ? c.toUpperCase() : c;
  }
  return out as `0x${string}`;
}
