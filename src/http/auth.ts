import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { parseAddress } from "../domain/address.js";
import { ADMIN_ACTOR, operatorActor } from "../domain/actors.js";
import type { Actor } from "../domain/api-keys.js";
import { assertInvariant, forbidden, rateLimited, unauthorized, type ApiError } from "../domain/errors.js";
import { MAX_FAILED_AUTHENTICATIONS_PER_MINUTE, RATE_LIMIT_WINDOW_MS } from "../domain/limits.js";
import { bearerTokenOf, hashToken, isWellFormedToken, secretsEqual } from "../auth/tokens.js";
import type { TokenGrant } from "../store/store.js";
import type { AppContext } from "./context.js";

declare module "fastify" {
  interface FastifyRequest {
    grant?: TokenGrant;
    /** Who this request acts as, set by the authentication hook that let it in (actorOf). */
    actor?: Actor;
  }
}

/**
 * The one place a credential becomes an actor (API.md Events, actor), for the events and the
 * submittedBy / cancelledBy a request causes: an operator's bearer token acts as that operator.
 * An API key's grant adds its case here: `{type: "api_key", id, name}`.
 */
export function grantActor(grant: TokenGrant): Actor {
  return operatorActor(grant.operator);
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
      keyGenerator: (request) => `contract:${request.grant?.contract ?? ""}`,
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
 * onRequest hook of the contract routes: runs before the body is read, so 401 and 403 win over
 * 413/415/400 as docs/api.md orders them. A valid token with a path address that is not its contract
 * (another contract, or a malformed address) is a 403: the token is not for it.
 */
export function authenticateContract(ctx: AppContext, limits: AuthLimits): onRequestAsyncHookHandler {
  return async (request: FastifyRequest) => {
    const token = bearerTokenOf(request.headers.authorization);
    if (token === null || !isWellFormedToken(token)) return failAuthentication(limits, request, unauthorized());
    const grant = await ctx.store.findToken(hashToken(token), ctx.clock.now());
    if (grant === null) return failAuthentication(limits, request, unauthorized());
    const pathAddress = (request.params as { contractAddress?: string }).contractAddress ?? "";
    if (parseAddress(pathAddress) !== grant.contract) throw forbidden("this token is not for that contract address");
    request.grant = grant;
    request.actor = grantActor(grant);
    await enforce(limits.perContract, request);
  };
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
