import { privateKeyToAccount } from "viem/accounts";
import { PointsApiError } from "./errors.js";
import type { RequestSpec, Transport } from "./transport.js";
import type { Challenge, Session } from "./types.js";

/**
 * Whatever can sign an ERC-191 (personal_sign) message: any viem Account, or an adapter around
 * another wallet (`{ address, signMessage: ({ message }) => wallet.signMessage(message) }`).
 */
export interface Signer {
  address: string;
  signMessage(args: { message: string }): Promise<string>;
}

/**
 * A bearer token obtained elsewhere (the console signs in with a browser wallet or a one-time
 * login link, then keeps only the token): used until it expires, never renewed, since there is
 * no key to sign a new challenge with. A 401 then reaches the caller, who signs in again.
 */
export interface BearerCredential {
  bearerToken: string;
  /** ISO 8601, as /dapp-auth/solve returned it. */
  expiresAt: string;
}

/** An operator is a 0x private key (kept in memory only), a Signer, or a bearer token. */
export type OperatorCredential = `0x${string}` | Signer | BearerCredential;

export function signerOf(operator: OperatorCredential): Signer | BearerCredential {
  return typeof operator === "string" ? privateKeyToAccount(operator) : operator;
}

function isBearer(credential: Signer | BearerCredential): credential is BearerCredential {
  return "bearerToken" in credential;
}

export interface SessionOptions {
  /** Renew when less than this is left. Default 60 s. */
  renewBeforeExpirySeconds?: number;
  /** The client's clock; Date.now by default. */
  now?: () => number;
}

interface HeldToken {
  bearerToken: string;
  expiresAt: string;
  /** Expiry on the client's clock (corrected by the server's Date header when readable). */
  expiresAtLocalMs: number;
}

/** How PointsClient authenticates its contract's requests: an operator's session or an API key. */
export interface ContractSession {
  readonly operatorAddress: string | null;
  readonly signIns: number;
  signIn(): Promise<Session>;
  /** The credential to send now, for requests the transport does not make (exports, the event stream). */
  token(): Promise<string>;
  request<T>(spec: Omit<RequestSpec, "token">): Promise<T>;
}

/**
 * An API key (`plk_…`, API.md "API keys"): sent as it is on every request. Nothing to renew: a
 * 401 means the key was revoked or expired, and reaches the caller.
 */
export class ApiKeySession implements ContractSession {
  readonly operatorAddress = null;
  readonly signIns = 0;

  constructor(
    private readonly transport: Transport,
    private readonly apiKey: string,
  ) {}

  signIn(): Promise<Session> {
    return Promise.reject(new PointsApiError("UNAUTHORIZED", 401, "the API key was refused (revoked or expired): use another key"));
  }

  token(): Promise<string> {
    return Promise.resolve(this.apiKey);
  }

  request<T>(spec: Omit<RequestSpec, "token">): Promise<T> {
    return this.transport.request<T>({ ...spec, token: this.apiKey });
  }
}

/**
 * Holds one bearer token for one contract and renews it: before each request when it is about to
 * expire, and once when the server answers 401 anyway (revoked, or a clock far off).
 */
export class OperatorSession implements ContractSession {
  private held: HeldToken | null = null;
  private renewing: Promise<HeldToken> | null = null;
  private readonly renewBeforeMs: number;
  private readonly now: () => number;
  /** Sign-ins so far; lets operators and tests see renewals happen. */
  signIns = 0;

  constructor(
    private readonly transport: Transport,
    private readonly contractAddress: string,
    private readonly credential: Signer | BearerCredential,
    options: SessionOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    // A given token is used to its end: renewing early would need a key this session lacks.
    this.renewBeforeMs = isBearer(credential) ? 0 : (options.renewBeforeExpirySeconds ?? 60) * 1000;
    if (isBearer(credential)) {
      this.held = { ...credential, expiresAtLocalMs: Date.parse(credential.expiresAt) };
    }
  }

  /** The operator's address; null when the session was given a bearer token instead of a key. */
  get operatorAddress(): string | null {
    return isBearer(this.credential) ? null : this.credential.address;
  }

  /** Signs in now, replacing any token held. */
  async signIn(): Promise<Session> {
    const held = await this.renew(null);
    return { bearerToken: held.bearerToken, expiresAt: held.expiresAt };
  }

  /** A token valid now (signing in when needed), for requests the transport does not make (the event stream). */
  async token(): Promise<string> {
    return this.validToken();
  }

  /** Sends an authenticated request; on a 401 signs in again and retries once. */
  async request<T>(spec: Omit<RequestSpec, "token">): Promise<T> {
    const token = await this.validToken();
    try {
      return await this.transport.request<T>({ ...spec, token });
    } catch (error) {
      if (!PointsApiError.is(error, "UNAUTHORIZED")) throw error;
      const fresh = await this.renew(token);
      return this.transport.request<T>({ ...spec, token: fresh.bearerToken });
    }
  }

  private async validToken(): Promise<string> {
    const held = this.held;
    if (held !== null && held.expiresAtLocalMs - this.now() > this.renewBeforeMs) return held.bearerToken;
    return (await this.renew(held?.bearerToken ?? null)).bearerToken;
  }

  /**
   * One sign-in at a time: concurrent callers share it. `stale` is the token the caller found
   * wanting; if another caller already replaced it, that newer token is used instead.
   */
  private async renew(stale: string | null): Promise<HeldToken> {
    if (this.renewing !== null) return this.renewing;
    if (stale !== null && this.held !== null && this.held.bearerToken !== stale && this.isFresh(this.held)) return this.held;
    this.renewing = this.transport.withRetry(true, () => this.signInOnce());
    try {
      this.held = await this.renewing;
      return this.held;
    } finally {
      this.renewing = null;
    }
  }

  private isFresh(held: HeldToken): boolean {
    return held.expiresAtLocalMs - this.now() > this.renewBeforeMs;
  }

  /**
   * Challenge, sign, solve, without retries of its own. A challenge is single-use, so a lost
   * solve answer cannot be retried alone: the whole sequence is the unit of retry.
   */
  private async signInOnce(): Promise<HeldToken> {
    const signer = this.credential;
    if (isBearer(signer)) throw new PointsApiError("UNAUTHORIZED", 401, "the bearer token expired or was revoked: sign in again");
    const { body: challenge } = await this.transport.exchange<Challenge>({
      method: "POST",
      path: "/v1/dapp-auth/challenge",
      body: { contractAddress: this.contractAddress, operatorAddress: signer.address },
      idempotent: true,
    });
    const signature = await signer.signMessage({ message: challenge.message });
    const sentAtMs = this.now();
    const solved = await this.transport.exchange<Session>({
      method: "POST",
      path: "/v1/dapp-auth/solve",
      body: { challengeData: challenge.challengeData, signature },
      idempotent: false,
    });
    this.signIns++;
    const expiresAtMs = Date.parse(solved.body.expiresAt);
    const skewMs = solved.serverDateMs === null ? 0 : solved.serverDateMs - sentAtMs;
    return { bearerToken: solved.body.bearerToken, expiresAt: solved.body.expiresAt, expiresAtLocalMs: expiresAtMs - skewMs };
  }
}
