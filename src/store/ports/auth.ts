import type { Actor } from "../../domain/api-keys.js";
import type { AddressKey } from "../../domain/address.js";
import type { Io, Out } from "./io.js";

export interface NewToken {
  tokenHash: Buffer;
  contract: AddressKey;
  operator: AddressKey;
  createdAtMs: number;
  expiresAtMs: number;
}

export interface TokenGrant {
  contract: AddressKey;
  operator: AddressKey;
  expiresAtMs: number;
}

/** A contract with a registered operator: one row of the operators table. */
export interface RegisteredOperator {
  contract: AddressKey;
  operator: AddressKey;
  /** When the operator was registered or last changed. */
  updatedAtMs: number;
}

export interface OperatorQuery {
  limit: number;
  /** Exclusive: the previous page's last contract. */
  after?: AddressKey;
}

export interface OperatorPage {
  operators: RegisteredOperator[];
  /** The last contract of this page when more follow, else null. */
  next: AddressKey | null;
}

/**
 * Operators, sign-in challenges and bearer tokens (auth.ts of each adapter). A challenge is not
 * stored when issued (src/auth/challenge-data.ts): only the key that seals challenges, and the
 * nonces of the challenges someone tried to solve, until they expire.
 */
export interface AuthStore {
  getOperator(contract: AddressKey): Promise<AddressKey | null>;
  /** Registers or changes the operator; a change revokes the contract's tokens (src/ledger/operator.ts). */
  setOperator(contract: AddressKey, operator: AddressKey, nowMs: number, actor?: Actor): Promise<void>;
  /** Every registered contract by address, one keyset page (on the operators primary key). */
  listOperators(query: OperatorQuery): Promise<OperatorPage>;
  /**
   * The service's own key stored under `name` (server_keys): the stored one, or `candidate` stored
   * now if there is none. Read first, so a read-only database that holds one still serves it;
   * instances racing to store theirs all get the same one back (the first insert wins). The same
   * in every process of a deployment and after restarts (sign-in challenges, events cursors).
   */
  serverKey(name: string, candidate: Buffer): Promise<Buffer>;
  /**
   * Records a challenge's nonce as used until `expiresAtMs`; true when it was not used before.
   * Atomic across every process on the database: of concurrent calls for one nonce, one gets true.
   */
  useChallengeNonce(nonce: string, expiresAtMs: number): Promise<boolean>;
  createToken(token: NewToken): Promise<void>;
  findToken(tokenHash: Buffer, nowMs: number): Promise<TokenGrant | null>;
  /** Deletes expired tokens, and used challenge nonces past their expiry (at most PURGE_USED_NONCES_LIMIT a call). */
  purgeExpired(nowMs: number): Promise<void>;
}

/** The operators and tokens tables, as src/ledger/operator.ts uses them inside a transaction `db`. */
export interface AuthPort<Db, out M extends Io = Io> {
  /** The contract's operator, its row locked until the transaction ends where the database has row locks. */
  lockOperator(db: Db, contract: AddressKey): Out<M, AddressKey | null>;
  /**
   * Registers `operator`, or changes a different one to it; false when the row already named it
   * (two first registrations racing: the later one changes nothing).
   */
  upsertOperator(db: Db, contract: AddressKey, operator: AddressKey, nowMs: number): Out<M, boolean>;
  deleteTokens(db: Db, contract: AddressKey): Out<M, void>;
  /** Removes the contract's operator while it is `operator` (a ban read from the chain); false when it was not. */
  deleteOperator(db: Db, contract: AddressKey, operator: AddressKey): Out<M, boolean>;
  // The AuthStore's reads and sign-in writes, one statement each (no flow decides around them).
  readOperator(db: Db, contract: AddressKey): Out<M, AddressKey | null>;
  listOperators(db: Db, query: OperatorQuery): Out<M, OperatorPage>;
  readOrStoreServerKey(db: Db, name: string, candidate: Buffer): Out<M, Buffer>;
  insertUsedNonce(db: Db, nonce: string, expiresAtMs: number): Out<M, boolean>;
  insertToken(db: Db, token: NewToken): Out<M, void>;
  lookupToken(db: Db, tokenHash: Buffer, nowMs: number): Out<M, TokenGrant | null>;
  deleteExpired(db: Db, nowMs: number): Out<M, void>;
}
