import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { storedKeyOf } from "../../auth/challenge-key.js";
import { hashApiKey, newApiKeySecret, shownPrefixOf } from "../../auth/api-keys.js";
import type { AddressKey } from "../../domain/address.js";
import { newApiKeyId, toApiKeyRequest } from "../../domain/api-keys.js";
import { notFound, unauthorized, validationFailed } from "../../domain/errors.js";
import { apiKeyJson } from "../../domain/json.js";
import { MAX_API_KEYS } from "../../domain/limits.js";
import { requireAddress } from "../../domain/validate.js";
import { actorOf, API_KEY_HASH_KEY_NAME } from "../auth.js";
import type { ApiInstance, AppContext } from "../context.js";
import { noStore } from "../no-store.js";
import { ApiKeyParams, ApiKeyResponses, ContractParams, CreateApiKeyBody, responses } from "../schemas.js";

const tags = ["api keys"];
const security = [{ bearer: [] }];

/** Whose keys a route manages: the contract of the verified token, or the admin's path (who acts: actorOf). */
interface KeyManager {
  contractOf: (request: { params: { contractAddress: string }; grant?: { contract: AddressKey } }) => AddressKey;
}

/** Under /v1/contracts/:contractAddress: the operator's bearer token (config.scope "operator": no API key). */
export function apiKeyRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  keyRoutes(fastify.withTypeProvider<TypeBoxTypeProvider>(), ctx, "/api-keys", {
    contractOf: (request) => request.grant!.contract,
  });
}

/** Under /v1/admin: the same routes for any contract, with the admin token. */
export function adminApiKeyRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  keyRoutes(fastify.withTypeProvider<TypeBoxTypeProvider>(), ctx, "/contracts/:contractAddress/api-keys", {
    contractOf: (request) => requireAddress(request.params.contractAddress, "contractAddress"),
  });
}

function keyRoutes(app: ApiInstance, ctx: AppContext, path: string, manager: KeyManager): void {
  const hashKey = storedKeyOf(ctx.store, API_KEY_HASH_KEY_NAME);
  const config = { scope: "operator" as const };
  const noKey = (keyId: string) => notFound(`no API key ${keyId} for this contract`);
  app.post(
    path,
    {
      config,
      onRequest: noStore,
      schema: {
        tags,
        security,
        params: ContractParams,
        body: CreateApiKeyBody,
        response: responses(ApiKeyResponses.created, 400, 401, 403),
      },
    },
    async (request) => {
      const nowMs = ctx.clock.now();
      const { name, scopes, expiresAtMs } = toApiKeyRequest(request.body, nowMs);
      const secret = newApiKeySecret();
      const key = {
        id: newApiKeyId(),
        contract: manager.contractOf(request),
        name,
        scopes,
        prefix: shownPrefixOf(secret),
        createdAtMs: nowMs,
        createdBy: actorOf(request),
        expiresAtMs,
        lastUsedAtMs: null,
        revokedAtMs: null,
        revokedReason: null,
      };
      const result = await ctx.store.createApiKey({ key, secretHash: hashApiKey(secret, await hashKey()) });
      if (result.kind === "limit") {
        throw validationFailed([
          { path: "(body)", message: `a contract may have at most ${MAX_API_KEYS} unrevoked API keys; revoke one first` },
        ]);
      }
      // The token was revoked by an operator change while this request ran: as if it came a moment later.
      if (result.kind === "operator_changed") throw unauthorized();
      return { success: true as const, apiKey: apiKeyJson(result.apiKey), secret };
    },
  );
  app.get(
    path,
    { config, schema: { tags, security, params: ContractParams, response: responses(ApiKeyResponses.apiKeys, 400, 401, 403) } },
    async (request) => ({ success: true as const, apiKeys: (await ctx.store.listApiKeys(manager.contractOf(request))).map(apiKeyJson) }),
  );
  app.get(
    `${path}/:keyId`,
    { config, schema: { tags, security, params: ApiKeyParams, response: responses(ApiKeyResponses.apiKey, 400, 401, 403, 404) } },
    async (request) => {
      const apiKey = await ctx.store.getApiKey(manager.contractOf(request), request.params.keyId);
      if (apiKey === null) throw noKey(request.params.keyId);
      return { success: true as const, apiKey: apiKeyJson(apiKey) };
    },
  );
  app.delete(
    `${path}/:keyId`,
    { config, schema: { tags, security, params: ApiKeyParams, response: responses(ApiKeyResponses.revoked, 400, 401, 403, 404) } },
    async (request) => {
      const apiKey = await ctx.store.revokeApiKey(manager.contractOf(request), request.params.keyId, ctx.clock.now(), actorOf(request));
      if (apiKey === null) throw noKey(request.params.keyId);
      return { success: true as const, apiKey: apiKeyJson(apiKey) };
    },
  );
}
