import jsSha3 from "js-sha3";

const { keccak256 } = jsSha3;

/** A lowercase `0x` + 40 hex address: the one spelling the store keys on. */
export type AddressKey = string & { readonly __addressKey: unique symbol };

export const ADDRESS_PATTERN = "^0x[0-9a-fA-F]{40}$";
const ADDRESS_LENGTH = 42;

export const ZERO_ADDRESS_KEY = "0x0000000000000000000000000000000000000000" as AddressKey;

/** What `letterCases` found among the 40 hex digits. */
const HAS_LOWER = 1;
const HAS_UPPER = 2;
const NOT_HEX = 4;

/**
 * One pass over the characters instead of three regular expressions and a toLowerCase: a full
 * batch parses 2000 addresses, and this check runs before every one of them.
 */
function letterCases(input: string): number {
  if (input.length !== ADDRESS_LENGTH || input.charCodeAt(0) !== 48 /* 0 */ || input.charCodeAt(1) !== 120 /* x */) return NOT_HEX;
  let found = 0;
  for (let i = 2; i < ADDRESS_LENGTH; i++) {
    const code = input.charCodeAt(i);
    if (code >= 48 && code <= 57) continue; // 0-9
    if (code >= 97 && code <= 102)
      found |= HAS_LOWER; // a-f
    else if (code >= 65 && code <= 70)
      found |= HAS_UPPER; // A-F
    else return NOT_HEX;
  }
  return found;
}

/** keccak256 of the 40 lowercase hex digits (EIP-55 hashes the ASCII text, without `0x`). */
function checksumDigest(lowercase: string): number[] {
  return keccak256.array(lowercase.slice(2));
}

/** Nibble `i` (0 ≤ i < 40) of the digest: EIP-55 uppercases a letter when it is ≥ 8. */
function checksumNibble(digest: number[], i: number): number {
  const byte = digest[i >> 1]!;
  return i & 1 ? byte & 0x0f : byte >> 4;
}

/** Does mixed-case `address` carry its EIP-55 checksum? `key` is its lowercase spelling. */
function hasChecksum(address: string, key: string): boolean {
  const hashed = checksumDigest(key);
  for (let i = 0; i < 40; i++) {
    const code = address.charCodeAt(i + 2);
    if (code < 65) continue; // a digit has no case
    if (code <= 70 !== checksumNibble(hashed, i) >= 8) return false;
  }
  return true;
}

/**
 * Accepts all-lowercase, all-uppercase, or EIP-55 mixed case with a correct checksum; returns
 * the lowercase key, or null. Only mixed case costs a keccak: js-sha3's, ≈ 2.4 µs an address
 * against ≈ 9-22 µs through viem's @noble/hashes wrapper, which made checksum checks the
 * hottest path of a batch submission (docs/performance.md).
 */
export function parseAddress(input: unknown): AddressKey | null {
  if (typeof input !== "string") return null;
  const cases = letterCases(input);
  if (cases === NOT_HEX) return null;
  if (cases === HAS_LOWER || cases === 0) return input as AddressKey;
  const key = input.toLowerCase();
  if (cases === HAS_UPPER) return key as AddressKey;
  // A spelling verified before needs no keccak: real programs pay the same recipients every day.
  const known = checksumCache.get(key);
  if (known !== undefined) return known === input ? (key as AddressKey) : null;
  if (!hasChecksum(input, key)) return null;
  // The keccak is paid already: remember the spelling, so reading the batch back costs none.
  rememberChecksum(key, input as `0x${string}`);
  return key as AddressKey;
}

/**
 * Checksummed spellings kept, by lowercase key: ≈ 190 bytes an entry, so ≈ 19 MB at most.
 * Reading a batch checksums every recipient, and a submission checks every mixed-case one: at
 * ≈ 2.5 µs a keccak that was ≈ 25 ms of a 10,000-transfer read and the largest cost of accepting
 * a batch, against ≈ 0.1 µs an address found here. Sized for a program's recurring recipients
 * (fifty full batches of distinct ones). Oldest entry out first: a hit does not reorder, so hits
 * stay cheap.
 */
export const CHECKSUM_CACHE_MAX_ENTRIES = 100_000;
const checksumCache = new Map<string, `0x${string}`>();

function rememberChecksum(key: string, checksummed: `0x${string}`): void {
  if (checksumCache.size >= CHECKSUM_CACHE_MAX_ENTRIES && !checksumCache.has(key)) {
    checksumCache.delete(checksumCache.keys().next().value!);
  }
  checksumCache.set(key, checksummed);
}

/** The EIP-55 checksummed spelling every response uses. */
export function checksumAddress(key: string): `0x${string}` {
  const cached = checksumCache.get(key);
  if (cached !== undefined) return cached;
  if (letterCases(key) === NOT_HEX) throw new TypeError(`not an address: ${key.slice(0, 50)}`);
  const lower = key.toLowerCase();
  const out = computeChecksum(lower);
  // Only a lowercase key is remembered: the cache must never answer for a malformed spelling.
  if (lower === key) rememberChecksum(lower, out);
  return out;
}

/** One string built from character codes: 40 concatenations per address were garbage to collect. */
function computeChecksum(lower: string): `0x${string}` {
  const hashed = checksumDigest(lower);
  const codes = new Array<number>(ADDRESS_LENGTH);
  codes[0] = 48; // 0
  codes[1] = 120; // x
  for (let i = 0; i < 40; i++) {
    const code = lower.charCodeAt(i + 2);
    codes[i + 2] = code >= 97 && checksumNibble(hashed, i) >= 8 ? code - 32 : code;
  }
  return String.fromCharCode(...codes) as `0x${string}`;
}
