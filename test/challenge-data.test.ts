/**
 * The sealed challengeData (src/auth/challenge-data.ts) on its own: what it carries comes back
 * whole under the same key and not under any other, it fits a console login link, and every
 * changed character is refused.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newChallengeNonce, openChallenge, sealChallenge, type ChallengeClaims } from "../src/auth/challenge-data.js";
import { consoleLoginUrl, parseConsoleLogin } from "../src/client/console-login.js";
import type { AddressKey } from "../src/domain/address.js";

const address = () => `0x${randomBytes(20).toString("hex")}` as AddressKey;

function claims(): ChallengeClaims {
  const issuedAtMs = Date.UTC(2026, 10, 25, 12, 0, 0, 123);
  return { contract: address(), operator: address(), nonce: newChallengeNonce(), issuedAtMs, expiresAtMs: issuedAtMs + 300_000 };
}

describe("sealed challengeData", () => {
  it("opens to the same contract, operator, nonce and times under its key, and to nothing under another", () => {
    const key = randomBytes(32);
    const sealed = claims();
    const data = sealChallenge(key, sealed);
    expect(openChallenge(key, data)).toEqual(sealed);
    expect(openChallenge(randomBytes(32), data)).toBeNull();
  });

  it("keeps times up to the year 10000 exact", () => {
    const key = randomBytes(32);
    const far = { ...claims(), issuedAtMs: Date.UTC(9999, 11, 31, 23, 59, 59, 999), expiresAtMs: Date.UTC(9999, 11, 31, 23, 59, 59, 999) };
    expect(openChallenge(key, sealChallenge(key, far))).toEqual(far);
  });

  it("fits a console login link (base64url, at most 128 characters) and comes out of it unchanged", () => {
    const data = sealChallenge(randomBytes(32), claims());
    expect(data).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
    const url = consoleLoginUrl("https://points.example.com", {
      contractAddress: `0x${"ab".repeat(20)}`,
      challengeData: data,
      signature: `0x${"cd".repeat(65)}`,
    });
    expect(parseConsoleLogin(new URL(url).hash)?.challengeData).toBe(data);
  });

  it("refuses every one-character change, another length, padding and junk", () => {
    const key = randomBytes(32);
    const data = sealChallenge(key, claims());
    for (let i = 0; i < data.length; i++) {
      for (const replacement of ["A", "_"]) {
        if (data[i] === replacement) continue;
        expect(openChallenge(key, data.slice(0, i) + replacement + data.slice(i + 1)), `character ${i}`).toBeNull();
      }
    }
    for (const junk of ["", data.slice(1), `${data}A`, `${data.slice(0, -2)}==`, "no-such-challenge", "\u0000".repeat(data.length)]) {
      expect(openChallenge(key, junk)).toBeNull();
    }
  });
});
