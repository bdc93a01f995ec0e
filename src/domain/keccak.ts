/**
 * Keccak-256 (the Ethereum variant: pad byte 0x01, not SHA3's 0x06) of inputs shorter than one
 * 136-byte block, which is all EIP-55 needs. viem's general-purpose keccak costs ≈ 9 µs per
 * address and a full batch checks 2000 of them, so this one works in place on a reused state:
 * no allocations, 64-bit lanes as (low, high) pairs of 32-bit words.
 */

/** Bytes absorbed per block (1600 − 2·256 bits). */
const RATE_BYTES = 136;
const ROUNDS = 24;

/** ρ rotation offsets, in π order. */
const RHO = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14, 27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44];
/** π: the lane each step of the ρπ walk moves to. */
const PI = [10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1];
const ROUND_CONSTANTS = [
  0x0000000000000001n, 0x0000000000008082n, 0x800000000000808an, 0x8000000080008000n, 0x000000000000808bn,
  0x0000000080000001n, 0x8000000080008081n, 0x8000000000008009n, 0x000000000000008an, 0x0000000000000088n,
  0x0000000080008009n, 0x000000008000000an, 0x000000008000808bn, 0x800000000000008bn, 0x8000000000008089n,
  0x8000000000008003n, 0x8000000000008002n, 0x8000000000000080n, 0x000000000000800an, 0x800000008000000an,
  0x8000000080008081n, 0x8000000000008080n, 0x0000000080000001n, 0x8000000080008008n,
];
const RC_LOW = Int32Array.from(ROUND_CONSTANTS, (rc) => Number(BigInt.asIntN(32, rc)));
const RC_HIGH = Int32Array.from(ROUND_CONSTANTS, (rc) => Number(BigInt.asIntN(32, rc >> 32n)));

/** 25 lanes × (low, high); word w holds state bytes 4w..4w+3, little-endian. */
const state = new Int32Array(50);
const scratch = new Int32Array(10);

function theta(s: Int32Array, c: Int32Array): void {
  for (let x = 0; x < 10; x++) c[x] = s[x]! ^ s[x + 10]! ^ s[x + 20]! ^ s[x + 30]! ^ s[x + 40]!;
  for (let x = 0; x < 10; x += 2) {
    const left = (x + 8) % 10;
    const right = (x + 2) % 10;
    const rLow = c[right]!;
    const rHigh = c[right + 1]!;
    const dLow = c[left]! ^ ((rLow << 1) | (rHigh >>> 31));
    const dHigh = c[left + 1]! ^ ((rHigh << 1) | (rLow >>> 31));
    for (let y = 0; y < 50; y += 10) {
      s[y + x] ^= dLow;
      s[y + x + 1] ^= dHigh;
    }
  }
}

/** ρ and π together: walk the lanes, rotating each into its new place (no offset is 0 or 32). */
function rhoPi(s: Int32Array): void {
  let low = s[2]!;
  let high = s[3]!;
  for (let i = 0; i < 24; i++) {
    const j = PI[i]! * 2;
    const n = RHO[i]!;
    const nextLow = s[j]!;
    const nextHigh = s[j + 1]!;
    if (n < 32) {
      s[j] = (low << n) | (high >>> (32 - n));
      s[j + 1] = (high << n) | (low >>> (32 - n));
    } else {
      const m = n - 32;
      s[j] = (high << m) | (low >>> (32 - m));
      s[j + 1] = (low << m) | (high >>> (32 - m));
    }
    low = nextLow;
    high = nextHigh;
  }
}

function chi(s: Int32Array, row: Int32Array): void {
  for (let y = 0; y < 50; y += 10) {
    for (let x = 0; x < 10; x++) row[x] = s[y + x]!;
    for (let x = 0; x < 10; x += 2) {
      s[y + x] = row[x]! ^ (~row[(x + 2) % 10]! & row[(x + 4) % 10]!);
      s[y + x + 1] = row[x + 1]! ^ (~row[(x + 3) % 10]! & row[(x + 5) % 10]!);
    }
  }
}

function permute(s: Int32Array): void {
  for (let round = 0; round < ROUNDS; round++) {
    theta(s, scratch);
    rhoPi(s);
    chi(s, scratch);
    s[0] ^= RC_LOW[round]!;
    s[1] ^= RC_HIGH[round]!;
  }
}

/**
 * Hashes the character codes of `text` (each must be < 256, e.g. ASCII hex) and returns the
 * shared state; read bytes with `digestByte` before the next call.
 */
export function keccakAsciiInPlace(text: string): Int32Array {
  const length = text.length;
  if (length >= RATE_BYTES) throw new RangeError("keccakAsciiInPlace takes inputs shorter than one block");
  state.fill(0);
  for (let k = 0; k < length; k++) state[k >> 2]! |= text.charCodeAt(k) << ((k & 3) << 3);
  state[length >> 2]! ^= 0x01 << ((length & 3) << 3);
  state[(RATE_BYTES - 1) >> 2]! ^= 0x80 << (((RATE_BYTES - 1) & 3) << 3);
  permute(state);
  return state;
}

/** Byte `j` (0 ≤ j < 32) of the digest held in `hashed`. */
export function digestByte(hashed: Int32Array, j: number): number {
  return (hashed[j >> 2]! >>> ((j & 3) << 3)) & 0xff;
}

/** Keccak-256 of an ASCII string as 64 lowercase hex digits (for tests and tools). */
export function keccak256AsciiHex(text: string): string {
  const hashed = keccakAsciiInPlace(text);
  let hex = "";
  for (let j = 0; j < 32; j++) hex += digestByte(hashed, j).toString(16).padStart(2, "0");
  return hex;
}
