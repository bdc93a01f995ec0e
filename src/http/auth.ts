import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { parseAddress } from "../domain/address.js";
import { forbidden, unauthorized, validationFailed } from "../domain/errors.js";
import { bearerTokenOf, hashToken, isWellFormedToken, secretsEqual } from "../auth/tokens.js";
import type { TokenGrant } from "../store/store.js";
import type { AppContext } from "./context.js";

declare module "fastify" {
  interface FastifyRequest {
    grant?: TokenGrant;
  }
}

/**
 * onRequest hook of the contract routes: runs before the body is read, so 401 and 403 win over
 * 413/415/400 as API.md orders them. A malformed contract address in the path is a 400 (it
 * names no contract); a valid token for a different contract is a 403.
 */
export function authenticateContract(ctx: AppContext): onRequestAsyncHookHandler {
  return async (request: FastifyRequest) => {
    const token = bearerTokenOf(request.headers.authorization);
    if (token === null || !isWellFormedToken(token)) throw unauthorized();
    const grant = await ctx.store.findToken(hashToken(token), ctx.clock.now());
    if (grant === null) throw unauthorized();
    const pathAddress = (request.params as { contractAddress?: string }).contractAddress ?? "";
    const contract = parseAddress(pathAddress);
    if (contract === null) {
      throw validationFailed([{ path: "contractAddress", message: "is not a valid address (bad EIP-55 checksum)" }]);
    }
    if (contract !== grant.contract) throw forbidden("this token is for another contract");
    request.grant = grant;
  };
}

/** Admin routes: 403 unless ADMIN_TOKEN is configured and presented. */
export function authenticateAdmin(ctx: AppContext): onRequestAsyncHookHandler {
  return async (request: FastifyRequest) => {
    const adminToken = ctx.config.adminToken;
    if (adminToken === null) throw forbidden("the admin API is disabled (no ADMIN_TOKEN configured)");
    const token = bearerTokenOf(request.headers.authorization);
    if (token === null || !secretsEqual(token, adminToken)) throw forbidden("admin routes need the admin token");
  };
}
