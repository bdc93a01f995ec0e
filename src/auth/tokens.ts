import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** 256 random bits per bearer token, base64url. */
const TOKEN_BYTES = 32;
const TOKEN_PREFIX = "plt_";
/** `plt_` + 43 base64url characters. */
const TOKEN_PATTERN = /^plt_[A-Za-z0-9_-]{43}$/;

export function newBearerToken(): string {
  return TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString("base64url");
}

/** Tokens are stored only as their SHA-256; the lookup is by hash, so no plaintext comparison leaks timing. */
export function hashToken(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

/** Constant-time comparison of two secrets of any length (for ADMIN_TOKEN). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(hashToken(a), hashToken(b));
}

/** Extracts the token of an `Authorization: Bearer <token>` header, or null. */
export function bearerTokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(header);
  return match ? match[1]! : null;
}
