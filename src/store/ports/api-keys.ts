import type { AddressKey } from "../../domain/address.js";
import type { Actor, ApiKey } from "../../domain/api-keys.js";
import type { Io, Out } from "./io.js";

/** A key as created: the stored form of its secret (src/auth/api-keys.ts hashApiKey) beside its fields. */
export interface NewApiKey {
  key: ApiKey;
  secretHash: Buffer;
}

/** A key a credential named, and when it was last seen in use (index.ts flushes these). */
export interface ApiKeyUse {
  id: string;
  lastUsedAtMs: number;
}

export type ApiKeyCreation = { kind: "created"; apiKey: ApiKey } | { kind: "limit" } | { kind: "operator_changed" };

/**
 * API keys (API.md "API keys (backends)"): created and revoked by the flows of src/ledger/api-keys.ts,
 * each with its event in its transaction; looked up by the hash of a presented secret on every
 * request (no cache, so a revocation is seen by every instance at once).
 */
export interface ApiKeysStore {
  /**
   * Stores `apiKey` unless the contract holds MAX_API_KEYS unrevoked keys ("limit"), or the
   * operator that creates it is no longer the contract's ("operator_changed"), with api_key.created.
   */
  createApiKey(apiKey: NewApiKey): Promise<ApiKeyCreation>;
  listApiKeys(contract: AddressKey): Promise<ApiKey[]>;
  getApiKey(contract: AddressKey, id: string): Promise<ApiKey | null>;
  /** Revokes the key (api_key.revoked); one already revoked is answered as it is; null when none. */
  revokeApiKey(contract: AddressKey, id: string, nowMs: number, actor?: Actor): Promise<ApiKey | null>;
  /** The key whose secret hashes to `secretHash`, whatever its state (the caller judges it), or null. */
  findApiKey(secretHash: Buffer): Promise<ApiKey | null>;
  /** Writes each key's last use, never moving one backwards. */
  recordApiKeyUses(uses: readonly ApiKeyUse[]): Promise<void>;
}

/** The api_keys table, as src/ledger/api-keys.ts and the ApiKeysStore reads use it. */
export interface ApiKeysPort<Db, out M extends Io = Io> {
  /**
   * Unrevoked keys of the contract, counted after taking the contract's key lock where the
   * database has several writers, so two concurrent creates cannot both see room for one more.
   */
  lockAndCountUnrevoked(db: Db, contract: AddressKey): Out<M, number>;
  insertApiKey(db: Db, apiKey: NewApiKey): Out<M, void>;
  readApiKey(db: Db, contract: AddressKey, id: string): Out<M, ApiKey | null>;
  listApiKeys(db: Db, contract: AddressKey): Out<M, ApiKey[]>;
  /** Sets revoked_at_ms and the reason on an unrevoked key; the key after it, or null when none was unrevoked. */
  revokeKey(db: Db, contract: AddressKey, id: string, nowMs: number): Out<M, ApiKey | null>;
  /** Revokes every unrevoked key `operator` created for the contract ("operator_changed"); the keys after it. */
  revokeOperatorKeys(db: Db, contract: AddressKey, operator: AddressKey, nowMs: number): Out<M, ApiKey[]>;
  lookupApiKey(db: Db, secretHash: Buffer): Out<M, ApiKey | null>;
  writeLastUses(db: Db, uses: readonly ApiKeyUse[]): Out<M, void>;
}
