/**
 * The secret of an API key: `plk_`, 43 characters of 256 random bits (base64url), then 6 characters
 * of checksum, so a secret scanner can tell a real key from noise offline (GitHub's token format
 * does the same with a CRC32; here the first 36 bits of SHA-256 over the rest, which Node has
 * built in, where CRC32 arrives only in Node 22).
 *
 * Stored as HMAC-SHA256 under a server key (`storedKeyOf`): a fast keyed hash is right for a
 * high-entropy secret (a slow password hash on every request would buy nothing against 256 bits
 * and cost every submit), and the key keeps a copy of the table alone from confirming a leaked
 * secret. Lookups are by hash, so no plaintext comparison leaks timing.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";

export const API_KEY_PREFIX = "plk_";
const RANDOM_BYTES = 32;
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
/** What ApiKey.prefix shows of a secret (API.md): enough to tell keys apart, nothing to use. */
export const SHOWN_PREFIX_LENGTH = 12;
const SECRET_PATTERN = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function checksumOf(body: string): string {
  return createHash("sha256").update(body).digest("base64url").slice(0, CHECKSUM_LENGTH);
}

/** A fresh secret; shown once, to its creator. */
export function newApiKeySecret(): string {
  const body = API_KEY_PREFIX + randomBytes(RANDOM_BYTES).toString("base64url");
  return body + checksumOf(body);
}

/** The shape and the checksum: a secret that fails either is refused without a database read. */
export function isWellFormedApiKey(secret: string): boolean {
  if (!SECRET_PATTERN.test(secret)) return false;
  const body = secret.slice(0, -CHECKSUM_LENGTH);
  return checksumOf(body) === secret.slice(-CHECKSUM_LENGTH);
}

/** Whether a bearer credential is meant as an API key (then it is judged as one, never as a token). */
export function looksLikeApiKey(credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX);
}

export function shownPrefixOf(secret: string): string {
  return secret.slice(0, SHOWN_PREFIX_LENGTH);
}

/** The stored form of a secret under the server's key. */
export function hashApiKey(secret: string, serverKey: Buffer): Buffer {
  return createHmac("sha256", serverKey).update(secret).digest();
}
