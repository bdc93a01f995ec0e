import { getAddress } from "viem";

/**
 * Deterministic request bodies: the server run, the HTTP ceiling and the storage ceiling all
 * rebuild the very same batches from the same seed, so no 175 KB body crosses a process boundary.
 */

export interface PayloadSpec {
  seed: number;
  /** Distinct bodies to rotate through; each has its own recipients. */
  bodies: number;
  transfersPerBatch: number;
  /** One of the server's POINT_TYPES. */
  pointType: string;
}

export interface TransferJson {
  toAddress: string;
  points: string;
}

/** mulberry32: a tiny seeded generator; quality is ample for test data. */
export function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomAddress(next: () => number): `0x${string}` {
  let hex = "0x";
  for (let i = 0; i < 40; i++) hex += Math.floor(next() * 16).toString(16);
  // Checksummed, as a real backend would send them; the server then pays for the keccak check.
  return getAddress(hex);
}

/** Amounts like "12.345", "7", "0.25": whole points below 100 with 0 to 3 decimals, ≥ 0.01. */
function randomPoints(next: () => number): string {
  const whole = Math.floor(next() * 100);
  const decimals = Math.floor(next() * 4);
  if (decimals === 0) return String(whole + 1);
  const fraction = String(Math.floor(next() * 10 ** decimals)).padStart(decimals, "0");
  return whole === 0 ? `0.${fraction.replace(/^0{1,2}/, "1")}` : `${whole}.${fraction}`;
}

/** Recipient pool shared by all bodies: distinct addresses, none of them the zero address. */
function recipients(next: () => number, count: number, exclude: ReadonlySet<string>): string[] {
  const seen = new Set<string>();
  const pool: string[] = [];
  while (pool.length < count) {
    const address = randomAddress(next);
    const key = address.toLowerCase();
    if (seen.has(key) || exclude.has(key) || /^0x0{40}$/.test(key)) continue;
    seen.add(key);
    pool.push(address);
  }
  return pool;
}

/** The transfers of every body, in order; body i uses recipients [i·n, (i+1)·n). */
export function buildTransfers(spec: PayloadSpec, exclude: ReadonlySet<string> = new Set()): TransferJson[][] {
  const next = generator(spec.seed);
  const pool = recipients(next, spec.bodies * spec.transfersPerBatch, exclude);
  const bodies: TransferJson[][] = [];
  for (let b = 0; b < spec.bodies; b++) {
    const transfers: TransferJson[] = [];
    for (let i = 0; i < spec.transfersPerBatch; i++) {
      transfers.push({ toAddress: pool[b * spec.transfersPerBatch + i]!, points: randomPoints(next) });
    }
    bodies.push(transfers);
  }
  return bodies;
}

/** The PUT bodies as bytes, ready for autocannon. */
export function encodeBodies(spec: PayloadSpec, transfers: TransferJson[][], secondsToFinalize: number): Buffer[] {
  return transfers.map((list) => Buffer.from(JSON.stringify({ pointType: spec.pointType, transfers: list, secondsToFinalize })));
}
