import http from "node:http";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimedDelivery } from "../src/store/store.js";
import { checkedAgents, sendDelivery } from "../src/outbox/send.js";
import { newSecret } from "../src/outbox/signing.js";
import { refusedAddressReason, type Resolver } from "../src/outbox/ssrf.js";
import { expectError, setupContract, type TestLedger } from "./helpers/http.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * Issue 19 item 9: with the default configuration (no WEBHOOK_ALLOW_PRIVATE_URLS) every target
 * that is not a global unicast address is refused, at creation (400 naming the setting that
 * lifts it) and again at connect time for a name that resolves inward. No test here makes a
 * connection to anything but 127.0.0.1, and the checks refuse before connecting.
 */

/** This host's own non-loopback interface addresses (on the reporter's machine 192.0.2.2). */
function ownInterfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal)
    .map((entry) => entry.address);
}

const PORT = 18_473;

describe("webhook targets refused at creation with the default configuration", () => {
  let strict: TestLedger;
  beforeAll(async () => {
    strict = await setupContract();
  });
  afterAll(async () => strict.close());

  const forms = [
    `http://192.0.2.2:${PORT}/`,
    `http://[::ffff:192.0.2.2]:${PORT}/`,
    `http://[::127.0.0.1]:${PORT}/`,
    `http://[::7f00:1]:${PORT}/`,
    `http://[2002:7f00:1::]:${PORT}/`,
    `http://198.51.100.10:${PORT}/`,
    `http://203.0.113.10:${PORT}/`,
    `http://[2001:db8::10]:${PORT}/`,
    `http://192.88.99.1:${PORT}/`,
    `http://[64:ff9b:1::1]:${PORT}/`,
    `http://[64:ff9b::7f00:1]:${PORT}/`,
    `http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:${PORT}/`,
    `http://0.0.0.0:${PORT}/`,
    `http://localhost:${PORT}/`,
  ];

  it.each(forms)("refuses %s with 400 VALIDATION_FAILED naming WEBHOOK_ALLOW_PRIVATE_URLS", async (url) => {
    const response = await strict.send({
      method: "POST",
      url: `/v1/contracts/${strict.contract}/webhook-endpoints`,
      token: strict.token,
      body: { url },
    });
    const error = expectError(response, 400, "VALIDATION_FAILED");
    const [detail] = error.details as { path: string; message: string }[];
    expect(detail!.path).toBe("url");
    expect(detail!.message).toContain("WEBHOOK_ALLOW_PRIVATE_URLS");
  });

  it("refuses every address of this host's own interfaces, plain and IPv4-mapped", async () => {
    const own = ownInterfaceAddresses();
    for (const address of own) {
      const host = address.includes(":") ? `[${address.split("%")[0]}]` : address;
      const targets = [`http://${host}:${PORT}/`, ...(address.includes(":") ? [] : [`http://[::ffff:${address}]:${PORT}/`])];
      for (const url of targets) {
        const response = await strict.send({
          method: "POST",
          url: `/v1/contracts/${strict.contract}/webhook-endpoints`,
          token: strict.token,
          body: { url },
        });
        expectError(response, 400, "VALIDATION_FAILED");
      }
    }
    const listed = await strict.send({ method: "GET", url: `/v1/contracts/${strict.contract}/webhook-endpoints`, token: strict.token });
    expect((listed.json as { endpoints: unknown[] }).endpoints).toHaveLength(0);
  });

  it("refuses a global address when it is one of this host's own, and allows it otherwise", () => {
    expect(refusedAddressReason("8.8.8.8", new Set())).toBeNull();
    expect(refusedAddressReason("8.8.8.8", new Set(["8.8.8.8"]))).toMatch(/address of this host/);
    expect(refusedAddressReason("::ffff:8.8.8.8", new Set(["8.8.8.8"]))).toMatch(/address of this host/);
    expect(refusedAddressReason("2606:4700::1111", new Set(["2606:4700::1111"]))).toMatch(/address of this host/);
  });
});

describe("webhook targets refused at connect time with the default configuration", () => {
  let target: Receiver;
  beforeAll(async () => {
    target = await startReceiver();
  });
  afterAll(async () => target.close());

  const delivery = (url: string): ClaimedDelivery => ({
    id: "wd_00000000000000000000000000000001",
    endpointId: "we_000000000000000000000001",
    url,
    eventId: "evt_ssrf",
    payload: "{}",
    tries: 0,
    secrets: [newSecret()],
    claimToken: "t",
    claimedUntilMs: Date.now() + 60_000,
  });
  const send = (url: string, resolver?: Resolver) =>
    sendDelivery(delivery(url), { allowPrivateUrls: false, timeoutMs: 5000, now: () => Date.now(), resolver });

  it("refuses a name that resolves to loopback (localhost): nothing reaches the receiver", async () => {
    const result = await send(`http://localhost:${target.port}/hook`);
    expect(result.statusCode).toBeNull();
    expect(result.error).toMatch(/target refused: localhost resolves to a refused address/);
    expect(target.received).toHaveLength(0);
  });

  it.each([["127.0.0.1"], ["::ffff:127.0.0.1"], ["192.0.2.2"], ["2002:7f00:1::"], ["::127.0.0.1"]])(
    "refuses a name the resolver maps to %s when the connection is made",
    async (address) => {
      const resolver: Resolver = (hostname) =>
        Promise.resolve(hostname === "hooks.example.test" ? [{ address, family: address.includes(":") ? 6 : 4 }] : []);
      const result = await send(`http://hooks.example.test:${target.port}/hook`, resolver);
      expect(result.error).toMatch(/target refused: hooks\.example\.test resolves to a refused address/);
      expect(target.received).toHaveLength(0);
    },
  );

  it("refuses a name whose answer mixes a global address with an inward one (no connection at all)", async () => {
    const resolver: Resolver = () =>
      Promise.resolve([
        { address: "8.8.8.8", family: 4 },
        { address: "127.0.0.1", family: 4 },
      ]);
    const result = await send(`http://rebind.example.test:${target.port}/hook`, resolver);
    expect(result.error).toMatch(/target refused/);
    expect(target.received).toHaveLength(0);
  });

  it("checks the peer a socket actually reached: a request through the checked agent to 127.0.0.1 is cut before it is written", async () => {
    const failure = await new Promise<Error>((resolve, reject) => {
      const request = http.request(target.url, { method: "POST", agent: checkedAgents.http }, () => reject(new Error("answered")));
      request.on("error", resolve);
      request.end("{}");
    });
    expect(failure.name).toBe("RefusedTarget");
    expect(failure.message).toMatch(/127\.0\.0\.1 is not a global unicast address \(loopback\)/);
    expect(target.received).toHaveLength(0);
  });
});
