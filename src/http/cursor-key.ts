import { hkdfSync } from "node:crypto";
import { SERVER_KEY_BYTES, storedKeyOf } from "../auth/challenge-key.js";
import type { AuthStore } from "../store/store.js";

/**
 * Keys of the service's own, derived from one random secret kept in the database (server_keys,
 * created at first use): every process of a deployment and every restart derive the same keys,
 * so a cursor issued by one instance is read by any other. Each purpose gets its own key (HKDF),
 * so a key never serves two uses.
 */

/** What a key is for; a new use gets a new name, never an existing key. */
export type ServerKeyPurpose = "events-cursor-encryption" | "events-cursor-nonce";

/** The row of server_keys the keys derive from. */
const ROOT_SECRET_NAME = "server-key-root";

export class ServerKeys {
  /** Read once per process; a failed read (database down) is tried again by the next request. */
  private readonly rootSecret: () => Promise<Buffer>;
  private readonly keys = new Map<ServerKeyPurpose, Buffer>();

  constructor(store: Pick<AuthStore, "serverKey">) {
    this.rootSecret = storedKeyOf(store, ROOT_SECRET_NAME);
  }

  async getServerKey(purpose: ServerKeyPurpose): Promise<Buffer> {
    const known = this.keys.get(purpose);
    if (known) return known;
    const key = Buffer.from(hkdfSync("sha256", await this.rootSecret(), Buffer.alloc(0), `points-ledger ${purpose}`, SERVER_KEY_BYTES));
    this.keys.set(purpose, key);
    return key;
  }
}
