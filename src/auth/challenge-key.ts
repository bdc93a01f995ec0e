import { randomBytes } from "node:crypto";
import { assertInvariant } from "../domain/errors.js";
import type { AuthStore } from "../store/store.js";

/** 256 bits: the HMAC-SHA256 key length (RFC 2104 §3 recommends at least the output length). */
export const CHALLENGE_KEY_BYTES = 32;
/** Its row in server_keys. */
const CHALLENGE_KEY_NAME = "challenge";

/**
 * The key that seals challenges (challenge-data.ts), read from the database once per process.
 * Every instance on one database must share it (a challenge issued by one is solved at another),
 * and an `npm start` newcomer must not have to configure one: so the first instance to need it
 * stores a random key, and an instance that loses that race reads the winner's (the store's
 * insert keeps the first). A failed read is not cached: the next request tries again.
 */
export function challengeKeyOf(store: Pick<AuthStore, "serverKey">): () => Promise<Buffer> {
  let key: Promise<Buffer> | null = null;
  return () => {
    key ??= store
      .serverKey(CHALLENGE_KEY_NAME, randomBytes(CHALLENGE_KEY_BYTES))
      .then((stored) => {
        // A short key (a row edited by hand) would make challenges forgeable: refuse to sign in with it.
        assertInvariant(
          stored.length >= CHALLENGE_KEY_BYTES,
          `the stored challenge key has ${stored.length} bytes, not ${CHALLENGE_KEY_BYTES}`,
        );
        return stored;
      })
      .catch((error: unknown) => {
        key = null;
        throw error;
      });
    return key;
  };
}
