import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, ConfigError } from "../src/config.js";
import { createTestApp, type TestApp } from "./helpers/http.js";

describe("CORS for browser clients", () => {
  let ledger: TestApp | null = null;
  afterEach(async () => {
    await ledger?.close();
    ledger = null;
  });

  it("sends no CORS headers unless CORS_ORIGINS is set", async () => {
    ledger = await createTestApp();
    const response = await ledger.app.inject({ method: "GET", url: "/v1/parameters", headers: { origin: "https://app.example" } });
    expect(response.statusCode).toBe(200);
    expect(response.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("answers a preflight for an allowed origin and refuses others", async () => {
    ledger = await createTestApp({ env: { CORS_ORIGINS: "https://app.example" } });
    const preflight = await ledger.app.inject({
      method: "OPTIONS",
      url: "/v1/contracts/0x4300000000000000000000000000000000000004/batches/b1",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "PUT",
        "access-control-request-headers": "authorization,content-type",
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(String(preflight.headers["access-control-allow-methods"])).toContain("PUT");
    expect(String(preflight.headers["access-control-allow-headers"])).toContain("authorization");
    const other = await ledger.app.inject({ method: "GET", url: "/v1/parameters", headers: { origin: "https://evil.example" } });
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("exposes Retry-After to browsers on errors", async () => {
    ledger = await createTestApp({ env: { CORS_ORIGINS: "*" } });
    const response = await ledger.app.inject({
      method: "GET",
      url: "/v1/contracts/0x4300000000000000000000000000000000000004/point-balances",
      headers: { origin: "https://app.example" },
    });
    expect(response.statusCode).toBe(401);
    expect(response.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(String(response.headers["access-control-expose-headers"])).toContain("retry-after");
  });

  it("rejects a malformed CORS_ORIGINS at start-up, naming the variable", () => {
    expect(() => loadConfig({ CORS_ORIGINS: "app.example" })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: "app.example" })).toThrow(/CORS_ORIGINS/);
  });
});
