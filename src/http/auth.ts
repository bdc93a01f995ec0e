import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { ApiKeyUses } from "../auth/api-key-uses.js";
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey } from "../auth/api-keys.js";
import { storedKeyOf } from "../auth/challenge-key.js";
import { parseAddress, type AddressKey } from "../domain/address.js";
import { ADMIN_ACTOR, operatorActor } from "../domain/actors.js";
import { allows, isUsable, type Actor, type ApiKey } from "../domain/api-keys.js";
import { assertInvariant, forbidden, rateLimited, unauthorized, type ApiError } from "../domain/errors.js";
import { MAX_FAILED_AUTHENTICATIONS_PER_MINUTE, RATE_LIMIT_WINDOW_MS } from "../domain/limits.js";
import { bearerTokenOf, hashToken, isWellFormedToken, secretsEqual } from "../auth/tokens.js";
import type { TokenGrant } from "../store/store.js";
import type { AppContext } from "./context.js";

/**
 * What the contract hook verified: an operator's bearer token, or an API key of the contract
 * (with the hash its secret is looked up by, for the event stream's re-checks).
 */
export type ContractGrant =
  (TokenGrant & { kind: "operator" }) | { kind: "api_key"; contract: AddressKey; apiKey: ApiKey; secretHash: Buffer };

declare module "fastify" {
  interface FastifyRequest {
    grant?: ContractGrant;
    /** Who this request acts as, set by the authentication hook that let it in (actorOf). */
    actor?: Actor;
  }
}

/** The row in server_keys of the key API key secrets are hashed under (src/auth/api-keys.ts). */
export const API_KEY_HASH_KEY_NAME = "api-key-hash";

/**
 * The one place a credential becomes an actor (API.md Events, actor), for the events and the
 * submittedBy / cancelledBy a request causes and the keys it creates: an operator's bearer token
 * acts as that operator, an API key as `{type: "api_key", id, name}`.
 */
export function grantActor(grant: ContractGrant): Actor {
  return grant.kind === "operator" ? operatorActor(grant.operator) : { type: "api_key", id: grant.apiKey.id, name: grant.apiKey.name };
}

/** Who the authenticated request acts as; a route behind no authentication hook has none (a bug). */
export function actorOf(request: FastifyRequest): Actor {
  assertInvariant(request.actor !== undefined, `${request.method} ${request.routeOptions.url ?? ""} acts without an authenticated actor`);
  return request.actor;
}

/** A check of @fastify/rate-limit's (`createRateLimit`): counts this request under its key. */
type RateCheck = (request: FastifyRequest) => Promise<{ isAllowed: boolean; isExceeded?: boolean; ttlInSeconds?: number }>;

/**
 * Request budgets keyed on what the server verified, never on a header the client chooses:
 * contract routes per contract of a verified token (RATE_LIMIT_PER_MINUTE), and failed
 * authentications (unknown token, wrong admin token) per client address.
 */
export interface AuthLimits {
  perContract: RateCheck;
  failedAuthentication: RateCheck;
}

export function createAuthLimits(app: FastifyInstance, ctx: AppContext): AuthLimits {
  return {
    perContract: app.createRateLimit({
      max: ctx.config.rateLimitPerMinute,
      timeWindow: RATE_LIMIT_WINDOW_MS,
      // Each API key has its own budget, apart from the operator's tokens and from other keys.
      keyGenerator: (request) =>
        request.grant?.kind === "api_key" ? `api-key:${request.grant.apiKey.id}` : `contract:${request.grant?.contract ?? ""}`,
    }),
    failedAuthentication: app.createRateLimit({
      max: MAX_FAILED_AUTHENTICATIONS_PER_MINUTE,
      timeWindow: RATE_LIMIT_WINDOW_MS,
      keyGenerator: (request) => `auth-failure:${request.ip}`,
    }),
  };
}

/** Counts the request against `check`'s budget; one over it is 429 with the budget's Retry-After. */
export async function enforce(check: RateCheck, request: FastifyRequest): Promise<void> {
  const result = await check(request);
  if (!result.isAllowed && result.isExceeded) throw rateLimited(result.ttlInSeconds ?? 1);
}

/** Counts a failed authentication of this client; past the limit the answer is 429 instead of `error`. */
async function failAuthentication(limits: AuthLimits, request: FastifyRequest, error: ApiError): Promise<never> {
  await enforce(limits.failedAuthentication, request);
  throw error;
}

/**
 * onRequest hook of the contract routes, the one place a contract route's credential is judged:
 * runs before the body is read, so 401 and 403 win over 413/415/400 as docs/api.md orders them.
 * `Bearer plk_…` is an API key, anything else an operator's token. A valid credential with a path
 * address that is not its contract (another contract, or a malformed address) is a 403.
 */
export function authenticateContract(ctx: AppContext, limits: AuthLimits, uses: ApiKeyUses): onRequestAsyncHookHandler {
  const hashKey = storedKeyOf(ctx.store, API_KEY_HASH_KEY_NAME);
  return async (request: FastifyRequest) => {
    const credential = bearerTokenOf(request.headers.authorization);
    let grant: ContractGrant;
    if (credential !== null && looksLikeApiKey(credential)) {
      const keyGrant = await apiKeyGrant(ctx, limits, request, credential, hashKey);
      uses.seen(keyGrant.apiKey.id, ctx.clock.now());
      grant = keyGrant;
    } else {
      grant = await tokenGrant(ctx, limits, request, credential);
    }
    request.grant = grant;
    request.actor = grantActor(grant);
    await enforce(limits.perContract, request);
  };
}

function pathContractOf(request: FastifyRequest): AddressKey | null {
  return parseAddress((request.params as { contractAddress?: string }).contractAddress ?? "");
}

async function tokenGrant(ctx: AppContext, limits: AuthLimits, request: FastifyRequest, token: string | null): Promise<ContractGrant> {
  if (token === null || !isWellFormedToken(token)) return failAuthentication(limits, request, unauthorized());
  const grant = await ctx.store.findToken(hashToken(token), ctx.clock.now());
  if (grant === null) return failAuthentication(limits, request, unauthorized());
  if (pathContractOf(request) !== grant.contract) throw forbidden("this token is not for that contract address");
  return { kind: "operator", ...grant };
}

/**
 * An API key: its shape and checksum first (a typo or a scanner's false positive costs no
 * database read), then its row, read on every request (no cache: a revocation answered by one
 * instance is refused by all at once), then its contract and the route's scope.
 */
async function apiKeyGrant(
  ctx: AppContext,
  limits: AuthLimits,
  request: FastifyRequest,
  secret: string,
  hashKey: () => Promise<Buffer>,
): Promise<ContractGrant & { kind: "api_key" }> {
  if (!isWellFormedApiKey(secret)) return failAuthentication(limits, request, unauthorized());
  const secretHash = hashApiKey(secret, await hashKey());
  const apiKey = await ctx.store.findApiKey(secretHash);
  if (apiKey === null || !isUsable(apiKey, ctx.clock.now())) return failAuthentication(limits, request, unauthorized());
  if (pathContractOf(request) !== apiKey.contract) throw forbidden("this API key is not for that contract address");
  const required = request.routeOptions.config.scope;
  // declareScope (access.ts) stops the app at start-up if a contract route declares none.
  assertInvariant(required !== undefined, `${request.method} ${request.routeOptions.url ?? ""} declares no scope`);
  if (required === "operator") throw forbidden("only an operator's bearer token or the admin token manages API keys");
  if (!allows(apiKey.scopes, required)) throw forbidden(`this API key does not have the ${required} scope`, { requiredScope: required });
  return { kind: "api_key", contract: apiKey.contract, apiKey, secretHash };
}

/**
 * For a long-lived answer (the event stream): a stable id of the credential, and a check that it
 * still holds, answering its expiry (ms) or null once it no longer does.
 */
export function credentialCheck(ctx: AppContext, grant: ContractGrant, authorization: string | undefined) {
  if (grant.kind === "api_key") {
    const noExpiryMs = Number.MAX_SAFE_INTEGER;
    const authorized = async () => {
      const apiKey = await ctx.store.findApiKey(grant.secretHash);
      return apiKey !== null && isUsable(apiKey, ctx.clock.now()) ? (apiKey.expiresAtMs ?? noExpiryMs) : null;
    };
    return { holder: `key:${grant.apiKey.id}`, expiresAtMs: grant.apiKey.expiresAtMs ?? noExpiryMs, authorized };
  }
  const tokenHash = hashToken(bearerTokenOf(authorization) ?? "");
  const authorized = async () => (await ctx.store.findToken(tokenHash, ctx.clock.now()))?.expiresAtMs ?? null;
  return { holder: tokenHash.toString("hex"), expiresAtMs: grant.expiresAtMs, authorized };
}

/** Admin routes: 403 unless ADMIN_TOKEN is configured and presented; repeated wrong tokens from one client get 429. */
export function authenticateAdmin(ctx: AppContext, limits: AuthLimits): onRequestAsyncHookHandler {
  return async (request: FastifyRequest) => {
    const adminToken = ctx.config.adminToken;
    if (adminToken === null) throw forbidden("the admin API is disabled (no ADMIN_TOKEN configured)");
    const token = bearerTokenOf(request.headers.authorization);
    if (token === null || !secretsEqual(token, adminToken)) {
      return failAuthentication(limits, request, forbidden("admin routes need the admin token"));
    }
    request.actor = ADMIN_ACTOR;
  };
}
