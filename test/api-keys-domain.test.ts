import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey, newApiKeySecret, shownPrefixOf } from "../src/auth/api-keys.js";
import { allows, toApiKeyRequest } from "../src/domain/api-keys.js";
import { ApiError } from "../src/domain/errors.js";

/** Issue 21's building blocks: the secret's format (API.md "API keys"), its stored hash, and a create request's rules. */

const NOW_MS = Date.parse("2026-11-25T12:00:00Z");

function detailsOf(body: unknown): { path: string; message: string }[] {
  try {
    toApiKeyRequest(body, NOW_MS);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("VALIDATION_FAILED");
    return (error as ApiError<"VALIDATION_FAILED">).details as { path: string; message: string }[];
  }
  throw new Error("accepted");
}

describe("API key secrets", () => {
  it("are plk_ and at least 40 URL-safe characters, different each time, with a checksum that a scanner can check offline", () => {
    const secrets = Array.from({ length: 200 }, newApiKeySecret);
    expect(new Set(secrets).size).toBe(200);
    for (const secret of secrets) {
      expect(secret).toMatch(/^plk_[A-Za-z0-9_-]{40,}$/);
      expect(isWellFormedApiKey(secret)).toBe(true);
      expect(looksLikeApiKey(secret)).toBe(true);
      expect(shownPrefixOf(secret)).toHaveLength(12);
    }
  });

  it("refuses a secret whose checksum is broken, whose length or alphabet is wrong, or that is a bearer token", () => {
    const secret = newApiKeySecret();
    // Every single-character change in the random part breaks the checksum (36 bits: a false pass is 1 in 7e10).
    for (let i = 4; i < secret.length - 6; i += 3) {
      const changed = secret.slice(0, i) + (secret[i] === "A" ? "B" : "A") + secret.slice(i + 1);
      expect(isWellFormedApiKey(changed), changed).toBe(false);
    }
    const last = secret.at(-1) === "x" ? "y" : "x";
    expect(isWellFormedApiKey(secret.slice(0, -1) + last)).toBe(false);
    expect(isWellFormedApiKey(secret + "A")).toBe(false);
    expect(isWellFormedApiKey(secret.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(secret.replace("plk_", "plt_"))).toBe(false);
    expect(isWellFormedApiKey(`plk_${"!".repeat(49)}`)).toBe(false);
    expect(looksLikeApiKey(`plt_${randomBytes(32).toString("base64url")}`)).toBe(false);
  });

  it("are stored as a keyed hash: the same secret and key give the same hash, another key or secret another", () => {
    const secret = newApiKeySecret();
    const key = randomBytes(32);
    expect(hashApiKey(secret, key).equals(hashApiKey(secret, key))).toBe(true);
    expect(hashApiKey(secret, key)).toHaveLength(32);
    expect(hashApiKey(secret, randomBytes(32)).equals(hashApiKey(secret, key))).toBe(false);
    expect(hashApiKey(newApiKeySecret(), key).equals(hashApiKey(secret, key))).toBe(false);
  });
});

describe("a request to create an API key", () => {
  it("takes a name of 1-64 code points (Unicode and spaces allowed), distinct known scopes in catalogue order, and an optional future expiry", () => {
    expect(toApiKeyRequest({ name: "nightly job", scopes: ["submit", "read"] }, NOW_MS)).toEqual({
      name: "nightly job",
      scopes: ["read", "submit"],
      expiresAtMs: null,
    });
    const name = `ключ 🚀${"x".repeat(56)}`;
    expect([...name]).toHaveLength(62);
    expect(toApiKeyRequest({ name, scopes: ["webhooks"], expiresAt: "2027-01-01T00:00:00Z" }, NOW_MS)).toEqual({
      name,
      scopes: ["webhooks"],
      expiresAtMs: Date.parse("2027-01-01T00:00:00Z"),
    });
    // 64 emoji are 128 UTF-16 units but 64 code points: allowed.
    expect(toApiKeyRequest({ name: "🚀".repeat(64), scopes: ["read"], expiresAt: null }, NOW_MS).name).toHaveLength(128);
  });

  it("names every offending field at once: empty, long or control-character names, unknown, repeated or no scopes, past or malformed expiry", () => {
    expect(detailsOf({ name: "", scopes: [], expiresAt: "2020-01-01T00:00:00Z" }).map((d) => d.path)).toEqual([
      "name",
      "scopes",
      "expiresAt",
    ]);
    expect(detailsOf({ name: "🚀".repeat(65), scopes: ["read"] }).map((d) => d.path)).toEqual(["name"]);
    expect(detailsOf({ name: "tab\there", scopes: ["read"] })[0]!.message).toMatch(/control/);
    expect(detailsOf({ name: "bell\u0085", scopes: ["read"] })[0]!.path).toBe("name");
    expect(detailsOf({ name: "k", scopes: ["read", "admin", "read", 7] }).map((d) => d.path)).toEqual([
      "scopes[1]",
      "scopes[2]",
      "scopes[3]",
    ]);
    expect(detailsOf({ name: "k", scopes: "read" }).map((d) => d.path)).toEqual(["scopes"]);
    expect(detailsOf({ name: "k", scopes: ["read"], expiresAt: "tomorrow" }).map((d) => d.path)).toEqual(["expiresAt"]);
    expect(detailsOf({ name: "k", scopes: ["read"], expiresAt: 1800000000000 }).map((d) => d.path)).toEqual(["expiresAt"]);
    expect(detailsOf({ name: "k", scopes: ["read"], expiresAt: "2026-11-25T12:00:00Z" })[0]!.message).toMatch(/future/);
    expect(detailsOf(null).map((d) => d.path)).toEqual(["name", "scopes"]);
  });

  it("a key allows a route only through the scope that route needs", () => {
    expect(allows(["read", "submit"], "submit")).toBe(true);
    expect(allows(["read"], "submit")).toBe(false);
    expect(allows(["submit"], "read")).toBe(false);
    expect(allows(["webhooks"], "cancel")).toBe(false);
  });
});
