/**
 * Which credential a contract route needs is said once, in the route's definition: its `scope`
 * (API.md "API keys", Scopes). The contract scope's one authentication hook (auth.ts) reads it,
 * and OpenAPI shows it as the route's security requirement; a route added without one stops the
 * app at start-up, so no route can be reachable with a weaker check than its neighbours.
 */
import type { RouteOptions } from "fastify";
import { API_KEY_SCOPES, type ApiKeyScope } from "../domain/api-keys.js";
import { assertInvariant } from "../domain/errors.js";

/**
 * What a contract route needs: an API key scope, or "operator" for the routes no API key may use
 * (managing API keys: a key must not mint keys). An operator's bearer token holds every scope.
 */
export type RouteScope = ApiKeyScope | "operator";
export const ROUTE_SCOPES: readonly RouteScope[] = [...API_KEY_SCOPES, "operator"];

declare module "fastify" {
  interface FastifyContextConfig {
    /** The scope a contract route needs. */
    scope?: RouteScope;
  }
}

/** The security scheme every contract route names (OpenAPI components.securitySchemes). */
export const BEARER_SCHEME = "bearer";

/** onRoute hook of the contract routes: requires the route's scope and writes it into its OpenAPI security. */
export function declareScope(route: RouteOptions): void {
  const scope = route.config?.scope;
  assertInvariant(
    scope !== undefined && ROUTE_SCOPES.includes(scope),
    `${String(route.method)} ${route.url} must declare config.scope (one of ${ROUTE_SCOPES.join(", ")})`,
  );
  // OpenAPI 3.1 lets a bearer scheme's requirement list the roles the operation needs.
  if (route.schema !== undefined) route.schema = { ...route.schema, security: [{ [BEARER_SCHEME]: [scope] }] };
}
