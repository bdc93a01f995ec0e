import { describe, expect, it } from "vitest";
import { decideOutcome, parseRetryAfter, type SendResult } from "../src/outbox/retry-schedule.js";
import { refusedAddressReason } from "../src/outbox/ssrf.js";
import { loadConfig } from "../src/config.js";

/** The pure rules of webhook delivery: which addresses are refused, and what follows an attempt. */

describe("refusedAddressReason", () => {
  // Each refusal says why (the reason reaches the operator), not merely that the address is refused;
  // no host addresses are passed, so the verdict comes from the address alone.
  it.each([
    ["127.0.0.1", "(loopback)"],
    ["127.255.0.9", "(loopback)"],
    ["10.0.0.1", "(private)"],
    ["172.16.5.4", "(private)"],
    ["172.31.255.255", "(private)"],
    ["192.168.0.1", "(private)"],
    ["169.254.169.254", "(linkLocal)"],
    ["100.64.0.1", "(carrierGradeNat)"],
    ["100.127.255.255", "(carrierGradeNat)"],
    ["0.0.0.0", "(unspecified)"],
    ["224.0.0.1", "(multicast)"],
    ["255.255.255.255", "(broadcast)"],
    ["::", "IPv4-compatible address (0.0.0.0)"],
    ["::1", "IPv4-compatible address (0.0.0.1)"],
    ["fc00::1", "(uniqueLocal)"],
    ["fd12:3456::1", "(uniqueLocal)"],
    ["fe80::1", "(linkLocal)"],
    ["ff02::1", "(multicast)"],
    ["::ffff:127.0.0.1", "carries 127.0.0.1 is not a global unicast address (loopback)"],
    ["::ffff:7f00:1", "carries 127.0.0.1 is not a global unicast address (loopback)"],
    ["::ffff:a00:1", "carries 10.0.0.1 is not a global unicast address (private)"],
    ["::ffff:169.254.169.254", "carries 169.254.169.254 is not a global unicast address (linkLocal)"],
    ["64:ff9b::10.0.0.1", "(NAT64) carries 10.0.0.1 is not a global unicast address (private)"],
    // Issue 19 item 9: documentation and other special ranges, and IPv4 carried in IPv6.
    ["192.0.2.2", "(reserved)"],
    ["198.51.100.7", "(reserved)"],
    ["203.0.113.9", "(reserved)"],
    ["192.88.99.1", "(reserved)"],
    ["192.0.0.8", "(reserved)"],
    ["198.18.0.1", "(reserved)"],
    ["2001:db8::1", "(reserved)"],
    ["::ffff:192.0.2.2", "carries 192.0.2.2 is not a global unicast address (reserved)"],
    ["::127.0.0.1", "IPv4-compatible address (127.0.0.1)"],
    ["::7f00:1", "IPv4-compatible address (127.0.0.1)"],
    ["::8.8.8.8", "IPv4-compatible address (8.8.8.8)"],
    ["2002:7f00:1::", "6to4 tunnel address (carrying 127.0.0.1)"],
    ["2002:808:808::1", "6to4 tunnel address (carrying 8.8.8.8)"],
    ["64:ff9b:1::1", "(rfc6052)"],
    ["64:ff9b::192.0.2.2", "(NAT64) carries 192.0.2.2 is not a global unicast address (reserved)"],
    ["2001::1", "teredo tunnel address (carrying 0.0.0.0)"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo tunnel address (carrying 65.54.227.120)"],
    ["::ffff:0:7f00:1", "rfc6145 tunnel address (carrying 127.0.0.1)"],
    ["100::1", "(discard)"],
    ["fe80::1%eth0", "(linkLocal)"],
    ["fec0::1", "(deprecatedSiteLocal)"],
    ["not-an-address", "not-an-address is not an IP address"],
  ])("refuses %s: %s", (address, why) => {
    expect(refusedAddressReason(address, new Set())).toContain(why);
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
