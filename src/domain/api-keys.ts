/**
 * API keys and actors as API.md defines them ("API keys (backends)", and `actor` under "Events"):
 * the scopes a key may hold, what a request to create one must carry, and who caused a change.
 * Pure rules: the secret's shape and hashing are in src/auth/api-keys.ts, storage in the adapters.
 */
import type { AddressKey } from "./address.js";
import { validationFailed, type FieldError } from "./errors.js";
import { API_KEY_NAME_MAX_LENGTH } from "./limits.js";

/** What a key may do; each route names the one it needs (API.md, "Scopes"). */
export const API_KEY_SCOPES = ["read", "submit", "cancel", "webhooks"] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** Who caused an event, a batch's submission or its cancellation. */
export type Actor =
  | { type: "operator"; address: AddressKey }
  | { type: "api_key"; id: string; name: string }
  | { type: "admin" }
  | { type: "system" }
  | ChainActor;

/** A change read from the operator registry (API.md, Operators on chain): `transactionHash` is null when it was found by a read. */
export interface ChainActor {
  type: "chain";
  chainId: number;
  blockNumber: number;
  transactionHash: string | null;
}

/** Finalization and other work of the service itself; also what events written before actors existed carry. */
export const SYSTEM_ACTOR: Actor = Object.freeze({ type: "system" });

export interface ApiKeyRequest {
  name: string;
  scopes: ApiKeyScope[];
  expiresAtMs: number | null;
}

/** Control characters (C0, DEL, C1): a name is shown in the console and in logs. */
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * Checks a create request's body (already JSON) against API.md: `name` 1–64 code points without
 * control characters, `scopes` a non-empty list of distinct known scopes, `expiresAt` absent, null
 * or a future time. Every offending field is named in one VALIDATION_FAILED.
 */
export function toApiKeyRequest(body: unknown, nowMs: number): ApiKeyRequest {
  const given = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const errors: FieldError[] = [];
  const name = given.name;
  if (typeof name !== "string" || name.length === 0) {
    errors.push({ path: "name", message: "must be a non-empty string" });
  } else if ([...name].length > API_KEY_NAME_MAX_LENGTH) {
    errors.push({ path: "name", message: `must be at most ${API_KEY_NAME_MAX_LENGTH} characters` });
  } else if (CONTROL_CHARACTER.test(name)) {
    errors.push({ path: "name", message: "must not contain control characters" });
  }
  const scopes = scopesOf(given.scopes, errors);
  const expiresAtMs = expiryOf(given.expiresAt, nowMs, errors);
  if (errors.length > 0) throw validationFailed(errors);
  return { name: name as string, scopes, expiresAtMs };
}

function scopesOf(value: unknown, errors: FieldError[]): ApiKeyScope[] {
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ path: "scopes", message: `must be a non-empty list of ${API_KEY_SCOPES.join(", ")}` });
    return [];
  }
  const seen = new Set<string>();
  value.forEach((scope, i) => {
    if (typeof scope !== "string" || !(API_KEY_SCOPES as readonly string[]).includes(scope)) {
      errors.push({ path: `scopes[${i}]`, message: `must be one of ${API_KEY_SCOPES.join(", ")}` });
    } else if (seen.has(scope)) {
      errors.push({ path: `scopes[${i}]`, message: "is listed twice" });
    } else {
      seen.add(scope);
    }
  });
  // The order a key shows its scopes in is the catalogue's, whatever order they were asked in.
  return API_KEY_SCOPES.filter((scope) => seen.has(scope));
}

function expiryOf(value: unknown, nowMs: number, errors: FieldError[]): number | null {
  if (value === undefined || value === null) return null;
  const ms = typeof value === "string" && /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    errors.push({ path: "expiresAt", message: "must be an ISO 8601 time, e.g. 2027-01-01T00:00:00Z" });
    return null;
  }
  if (ms <= nowMs) {
    errors.push({ path: "expiresAt", message: "must be in the future" });
    return null;
  }
  return ms;
}

/** Whether a key with `scopes` may use a route that needs `required`. */
export function allows(scopes: readonly ApiKeyScope[], required: ApiKeyScope): boolean {
  return scopes.includes(required);
}

/** Why a key stopped working: revoked by a DELETE, or with the operator that created it. */
export type ApiKeyRevokedReason = "revoked" | "operator_changed";

/** An API key as stored, without its secret (only the secret's hash is stored, and never leaves the adapter). */
export interface ApiKey {
  id: string;
  contract: AddressKey;
  name: string;
  scopes: ApiKeyScope[];
  /** The secret's first SHOWN_PREFIX_LENGTH characters. */
  prefix: string;
  createdAtMs: number;
  createdBy: Actor;
  expiresAtMs: number | null;
  lastUsedAtMs: number | null;
  revokedAtMs: number | null;
  revokedReason: ApiKeyRevokedReason | null;
}

/** `key_` + 32 hex digits: what routes and events name a key by (never its secret). */
export function newApiKeyId(): string {
  return `key_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
}

/** Whether a key may authenticate now: not revoked, not expired. */
export function isUsable(key: ApiKey, nowMs: number): boolean {
  return key.revokedAtMs === null && (key.expiresAtMs === null || key.expiresAtMs > nowMs);
}

/** The operator whose keys an operator change revokes: the key's creator, when an operator made it. */
export function creatingOperatorOf(actor: Actor): AddressKey | null {
  return actor.type === "operator" ? actor.address : null;
}
