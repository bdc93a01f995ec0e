import { describe, expect, it } from "vitest";
import { decideOutcome, parseRetryAfter, type SendResult } from "../src/webhooks/schedule.js";
import { refusedAddressReason } from "../src/webhooks/ssrf.js";
import { loadConfig } from "../src/config.js";

/** The pure rules of webhook delivery: which addresses are refused, and what follows an attempt. */

describe("refusedAddressReason", () => {
  it.each([
    "127.0.0.1",
    "127.255.0.9",
    "10.0.0.1",
    "172.16.5.4",
    "172.31.255.255",
    "192.168.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.255",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a00:1",
    "::ffff:169.254.169.254",
    "64:ff9b::10.0.0.1",
    // Issue 19 item 9: documentation and other special ranges, and IPv4 carried in IPv6.
    "192.0.2.2",
    "198.51.100.7",
    "203.0.113.9",
    "192.88.99.1",
    "192.0.0.8",
    "198.18.0.1",
    "2001:db8::1",
    "::ffff:192.0.2.2",
    "::127.0.0.1",
    "::7f00:1",
    "::8.8.8.8",
    "2002:7f00:1::",
    "2002:808:808::1",
    "64:ff9b:1::1",
    "64:ff9b::192.0.2.2",
    "2001::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "::ffff:0:7f00:1",
    "100::1",
    "fe80::1%eth0",
    "fec0::1",
    "not-an-address",
  ])("refuses %s", (address) => {
    expect(refusedAddressReason(address)).not.toBeNull();
  });

  it.each([
    "93.184.215.14",
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "192.169.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "64:ff9b::8.8.8.8",
    "1.1.1.1",
  ])("allows %s", (address) => {
    expect(refusedAddressReason(address)).toBeNull();
  });
});

describe("decideOutcome", () => {
  const result = (statusCode: number | null, retryAfterSeconds: number | null = null): SendResult => ({
    atMs: 1000,
    statusCode,
    error: statusCode === null ? "ECONNREFUSED" : null,
    durationMs: 10,
    retryAfterSeconds,
    timedOut: false,
  });

  it("succeeds on any 2xx, disables on 410, fails after the last wait", () => {
    expect(decideOutcome(0, [5], result(204), 0.5)).toMatchObject({ status: "SUCCEEDED", nextAttemptAtMs: null });
    expect(decideOutcome(0, [5], result(410), 0.5).disableEndpoint).toMatch(/410/);
    expect(decideOutcome(1, [5], result(500), 0.5)).toMatchObject({ status: "FAILED", nextAttemptAtMs: null });
    expect(decideOutcome(0, [5], result(302), 0.5).status).toBe("PENDING");
  });

  it("waits the schedule's entry ±20 %, and at least a Retry-After (capped at a day)", () => {
    expect(decideOutcome(1, [5, 300], result(null), 0).nextAttemptAtMs).toBe(1010 + 240_000);
    expect(decideOutcome(1, [5, 300], result(null), 1).nextAttemptAtMs).toBe(1010 + 360_000);
    expect(decideOutcome(0, [5], result(503, 60), 0.5).nextAttemptAtMs).toBe(1010 + 60_000);
    expect(decideOutcome(0, [5], result(503, 1), 0.5).nextAttemptAtMs).toBe(1010 + 5000);
    expect(decideOutcome(0, [5], result(503, 10 ** 9), 0.5).nextAttemptAtMs).toBe(1010 + 24 * 3600 * 1000);
  });

  it("reads Retry-After as seconds or an HTTP date, and ignores anything else", () => {
    const nowMs = Date.UTC(2026, 0, 1);
    expect(parseRetryAfter("120", nowMs)).toBe(120);
    expect(parseRetryAfter(new Date(nowMs + 30_000).toUTCString(), nowMs)).toBe(30);
    expect(parseRetryAfter("soon", nowMs)).toBeNull();
    expect(parseRetryAfter("-5", nowMs)).toBeNull();
    expect(parseRetryAfter(undefined, nowMs)).toBeNull();
  });
});

describe("webhook settings", () => {
  it("defaults to docs/api.md's schedule and refuses a malformed one naming the variable", () => {
    expect(loadConfig({}).webhookRetryScheduleSeconds).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE_SECONDS: "1, 1,2" }).webhookRetryScheduleSeconds).toEqual([1, 1, 2]);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,x" })).toThrow(/WEBHOOK_RETRY_SCHEDULE_SECONDS/);
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: "yes" })).toThrow(/WEBHOOK_ALLOW_PRIVATE_URLS/);
    expect(loadConfig({}).webhookAllowPrivateUrls).toBe(false);
  });
});
