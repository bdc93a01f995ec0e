import { randomBytes } from "node:crypto";
import { assertInvariant } from "../domain/errors.js";
import type { AuthStore } from "../store/store.js";

/** 256 bits: the HMAC-SHA256 key length (RFC 2104 §3 recommends at least the output length). */
export const SERVER_KEY_BYTES = 32;
/** The row in server_keys of the key that seals sign-in challenges (challenge-data.ts). */
const CHALLENGE_KEY_NAME = "challenge";

/**
 * A key of the service's own, stored under `name` in the database and read once per process.
 * Every instance on one database must share it (a challenge issued by one is solved at another, a
 * cursor issued by one is read by another), and an `npm start` newcomer must not have to configure
 * one: so the first instance to need it stores a random key, and an instance that loses that race
 * reads the winner's (the store's insert keeps the first). A failed read is not cached: the next
 * request tries again.
 */
export function storedKeyOf(store: Pick<AuthStore, "serverKey">, name: string): () => Promise<Buffer> {
  let key: Promise<Buffer> | null = null;
  return () => {
    key ??= store
      .serverKey(name, randomBytes(SERVER_KEY_BYTES))
      .then((stored) => {
        // A short key (a row edited by hand) would make what it seals forgeable: refuse to use it.
        assertInvariant(stored.length >= SERVER_KEY_BYTES, `the stored key ${name} has ${stored.length} bytes, not ${SERVER_KEY_BYTES}`);
        return stored;
      })
      .catch((error: unknown) => {
        key = null;
        throw error;
      });
    return key;
  };
}

/** The key that seals sign-in challenges. */
export function challengeKeyOf(store: Pick<AuthStore, "serverKey">): () => Promise<Buffer> {
  return storedKeyOf(store, CHALLENGE_KEY_NAME);
}
