import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { AddressKey } from "../domain/address.js";

/**
 * A sign-in challenge that carries itself: `challengeData` is base64url of
 *
 *   version (1) · contract (20) · operator (20) · nonce (16) · issuedAtMs (6) · expiresAtMs (6) · tag (16)
 *
 * where tag is HMAC-SHA256 under the server's challenge key (challenge-key.ts) of everything
 * before it. Issuing one therefore writes nothing: a stranger asking for thousands of challenges
 * for someone else's contract uses up no row, no slot and no one's pending challenge. Only a
 * nonce that was solved (or guessed at) is remembered, until its challenge expires.
 *
 * The tag is truncated to 128 bits (RFC 2104 §5 allows half the hash length): forging one means
 * guessing 2^128 values online, and it keeps challengeData within 128 characters, the most a
 * console login link accepts (src/client/console-login.ts).
 */

const VERSION = 1;
const ADDRESS_BYTES = 20;
export const NONCE_BYTES = 16;
/** 48 bits of milliseconds reach the year 10889. */
const TIME_BYTES = 6;
const TAG_BYTES = 16;
const PAYLOAD_BYTES = 1 + 2 * ADDRESS_BYTES + NONCE_BYTES + 2 * TIME_BYTES;
const SEALED_BYTES = PAYLOAD_BYTES + TAG_BYTES;
/** ceil(85 × 8 / 6) base64url characters, no padding. */
const SEALED_PATTERN = new RegExp(`^[A-Za-z0-9_-]{${Math.ceil((SEALED_BYTES * 8) / 6)}}$`);

export interface ChallengeClaims {
  contract: AddressKey;
  operator: AddressKey;
  /** 32 lowercase hex digits (16 random bytes): the challenge's identity, remembered once used. */
  nonce: string;
  issuedAtMs: number;
  expiresAtMs: number;
}

export function newChallengeNonce(): string {
  return randomBytes(NONCE_BYTES).toString("hex");
}

/** The challengeData of `claims`, authenticated with `key`. */
export function sealChallenge(key: Buffer, claims: ChallengeClaims): string {
  const payload = Buffer.alloc(PAYLOAD_BYTES);
  let at = payload.writeUInt8(VERSION, 0);
  at += Buffer.from(claims.contract.slice(2), "hex").copy(payload, at);
  at += Buffer.from(claims.operator.slice(2), "hex").copy(payload, at);
  at += Buffer.from(claims.nonce, "hex").copy(payload, at);
  at = payload.writeUIntBE(claims.issuedAtMs, at, TIME_BYTES);
  payload.writeUIntBE(claims.expiresAtMs, at, TIME_BYTES);
  return Buffer.concat([payload, tagOf(key, payload)]).toString("base64url");
}

/**
 * The claims of a challengeData this server sealed, or null for anything else: another length or
 * alphabet, a non-canonical spelling, another version, or a tag that does not match (any changed
 * bit). Expiry is the caller's to check. Never throws.
 */
export function openChallenge(key: Buffer, challengeData: string): ChallengeClaims | null {
  if (!SEALED_PATTERN.test(challengeData)) return null;
  const sealed = Buffer.from(challengeData, "base64url");
  // Base64url ignores a last character's low bits: only one spelling of each challenge is accepted.
  if (sealed.length !== SEALED_BYTES || sealed.toString("base64url") !== challengeData) return null;
  const payload = sealed.subarray(0, PAYLOAD_BYTES);
  if (!timingSafeEqual(tagOf(key, payload), sealed.subarray(PAYLOAD_BYTES))) return null;
  if (payload.readUInt8(0) !== VERSION) return null;
  let at = 1;
  const take = (bytes: number) => payload.subarray(at, (at += bytes));
  const contract = `0x${take(ADDRESS_BYTES).toString("hex")}` as AddressKey;
  const operator = `0x${take(ADDRESS_BYTES).toString("hex")}` as AddressKey;
  const nonce = take(NONCE_BYTES).toString("hex");
  const issuedAtMs = take(TIME_BYTES).readUIntBE(0, TIME_BYTES);
  const expiresAtMs = take(TIME_BYTES).readUIntBE(0, TIME_BYTES);
  return { contract, operator, nonce, issuedAtMs, expiresAtMs };
}

function tagOf(key: Buffer, payload: Buffer): Buffer {
  return createHmac("sha256", key).update(payload).digest().subarray(0, TAG_BYTES);
}
