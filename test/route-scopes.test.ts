import type { RouteOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { declareScope } from "../src/http/access.js";
import { createTestApp, type TestApp } from "./helpers/http.js";

/**
 * Issue 21: every contract route says in its definition which scope it needs, and OpenAPI shows it
 * as the route's security requirement — the rule of API.md's Scopes: every GET is `read`, PUT and
 * POST batches `submit`, DELETE batches `cancel`, every change to webhook endpoints `webhooks`.
 */

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});

afterAll(async () => {
  await testApp.close();
});

/** The scope API.md gives a contract route. */
function scopeOf(method: string, path: string): string {
  // Only an operator's bearer token manages API keys: no API key scope opens them.
  if (path.includes("/api-keys")) return "operator";
  if (method === "get") return "read";
  if (path.includes("/batches")) return method === "delete" ? "cancel" : "submit";
  if (path.includes("/webhook-endpoints")) return "webhooks";
  throw new Error(`no rule for ${method} ${path}`);
}

describe("route scopes", () => {
  it("every contract route in /openapi.json carries the bearer requirement with the scope API.md gives it", async () => {
    const response = await testApp.send({ method: "GET", url: "/openapi.json" });
    expect(response.status).toBe(200);
    const doc = response.json as { openapi: string; paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>> };
    expect(doc.openapi).toBe("3.1.0");
    const contractRoutes = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/v1/contracts/{contractAddress}/"))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));
    expect(contractRoutes.length).toBeGreaterThanOrEqual(20);
    const seen = new Set<string>();
    for (const { path, method, operation } of contractRoutes) {
      expect(operation.security, `${method} ${path}`).toEqual([{ bearer: [scopeOf(method, path)] }]);
      seen.add(scopeOf(method, path));
    }
    expect([...seen].sort()).toEqual(["cancel", "operator", "read", "submit", "webhooks"]);
  });

  it("a contract route without a declared scope, or with an unknown one, stops the app from starting", () => {
    const route = (config: object) =>
      ({ method: "GET", url: "/v1/contracts/:contractAddress/new", config, schema: {} }) as unknown as RouteOptions;
    expect(() => declareScope(route({}))).toThrow(/must declare config.scope/);
    expect(() => declareScope(route({ scope: "admin" }))).toThrow(/must declare config.scope/);
    const declared = route({ scope: "read" });
    declareScope(declared);
    expect(declared.schema).toEqual({ security: [{ bearer: ["read"] }] });
  });
});
