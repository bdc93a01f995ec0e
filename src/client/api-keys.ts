import type { ContractSession } from "./session.js";
import type { Actor } from "./types.js";

/** What an API key may do (API.md "API keys (backends)", Scopes). */
export type ApiKeyScope = "read" | "submit" | "cancel" | "webhooks";

/** Who caused a change: an operator, an API key, the admin, the service itself or the operator registry on chain (types.ts). */
export type { Actor };

/** An API key as the service shows it: never its secret. */
export interface ApiKey {
  id: string;
  name: string;
  scopes: ApiKeyScope[];
  /** The secret's first 12 characters, to tell keys apart. */
  prefix: string;
  createdAt: string;
  createdBy: Actor;
  expiresAt: string | null;
  /** May lag by up to a minute. */
  lastUsedAt: string | null;
  revokedAt: string | null;
  revokedReason: "revoked" | "operator_changed" | null;
}

export interface NewApiKey {
  /** 1–64 characters, no control characters. */
  name: string;
  scopes: ApiKeyScope[];
  /** ISO 8601, in the future; absent: the key does not expire. */
  expiresAt?: string | null;
}

export interface CreatedApiKey {
  apiKey: ApiKey;
  /** `plk_…`: shown only in this answer; the service keeps only a hash. */
  secret: string;
}

/**
 * `client.apiKeys`: the contract's API keys (POST/GET/DELETE …/api-keys). Only the operator manages
 * keys: a client built with an API key gets 403 FORBIDDEN here.
 */
export class ApiKeys {
  constructor(
    private readonly session: ContractSession,
    private readonly path: string,
  ) {}

  /** Not retried when an answer is lost: a retry would make a second key (revoke the one not kept). */
  async create(request: NewApiKey): Promise<CreatedApiKey> {
    const body = await this.session.request<CreatedApiKey>({ method: "POST", path: this.path, body: request, idempotent: false });
    return { apiKey: body.apiKey, secret: body.secret };
  }

  /** Every key of the contract, revoked ones included, oldest first. */
  async list(): Promise<ApiKey[]> {
    return (await this.session.request<{ apiKeys: ApiKey[] }>({ method: "GET", path: this.path, idempotent: true })).apiKeys;
  }

  async get(id: string): Promise<ApiKey> {
    return (await this.session.request<{ apiKey: ApiKey }>({ method: "GET", path: this.keyPath(id), idempotent: true })).apiKey;
  }

  /** Revokes the key; revoking it again answers it as it is (its first revokedAt kept). */
  async revoke(id: string): Promise<ApiKey> {
    return (await this.session.request<{ apiKey: ApiKey }>({ method: "DELETE", path: this.keyPath(id), idempotent: true })).apiKey;
  }

  private keyPath(id: string): string {
    return `${this.path}/${encodeURIComponent(id)}`;
  }
}
