import { getAddress, isAddress } from "viem";

/** A lowercase `0x` + 40 hex address: the one spelling the store keys on. */
export type AddressKey = string & { readonly __addressKey: unique symbol };

export const ADDRESS_PATTERN = "^0x[0-9a-fA-F]{40}$";
const ADDRESS_SHAPE = /^0x[0-9a-fA-F]{40}$/;
const LOWERCASE_HEX = /^0x[0-9a-f]{40}$/;
const UPPERCASE_HEX = /^0x[0-9A-F]{40}$/;

export const ZERO_ADDRESS_KEY = "0x0000000000000000000000000000000000000000" as AddressKey;

/**
 * Accepts all-lowercase, all-uppercase, or EIP-55 mixed case with a correct checksum; returns
 * the lowercase key, or null. Only mixed case costs a keccak (viem caches recent ones).
 */
export function parseAddress(input: unknown): AddressKey | null {
  if (typeof input !== "string" || !ADDRESS_SHAPE.test(input)) return null;
  if (LOWERCASE_HEX.test(input)) return input as AddressKey;
  if (UPPERCASE_HEX.test(input)) return input.toLowerCase() as AddressKey;
  return isAddress(input, { strict: true }) ? (input.toLowerCase() as AddressKey) : null;
}

/** The EIP-55 checksummed spelling every response uses. */
export function checksumAddress(key: string): `0x${string}` {
  return getAddress(key);
}
