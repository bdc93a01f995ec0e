import type { FastifyInstance, FastifyRequest } from "fastify";
import { bearerTokenOf, secretsEqual } from "../auth/tokens.js";
import { RATE_LIMIT_WINDOW_MS } from "../domain/limits.js";
import { enforce } from "./auth.js";
import type { AppContext } from "./context.js";

/**
 * The reads anyone may make with PUBLIC_READS (snapshots, any address's balances, leaderboards).
 * Each client address gets a budget like the contract routes (PUBLIC_READ_RATE_LIMIT_PER_MINUTE):
 * one client made 3,000 proof lookups in 1.9 s and took an operator's balance reads from p99 2 to
 * 37 ms (issue 19). The admin token skips it, as on the admin routes.
 */
export function publicReadLimit(scope: FastifyInstance, ctx: AppContext): (request: FastifyRequest) => Promise<void> {
  const check = scope.createRateLimit({
    max: ctx.config.publicReadRateLimitPerMinute,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    keyGenerator: (request) => `public-read:${request.ip}`,
  });
  return (request) => enforce(check, request);
}

/** Whether the request carries the configured admin token (compared in constant time). */
export function presentsAdminToken(ctx: AppContext, request: FastifyRequest): boolean {
  const token = bearerTokenOf(request.headers.authorization);
  return ctx.config.adminToken !== null && token !== null && secretsEqual(token, ctx.config.adminToken);
}
