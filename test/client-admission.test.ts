/**
 * MAX_IN_FLIGHT_PER_CLIENT (src/http/app.ts): one client address may have at most that many
 * requests being served at once (counted from when its body has arrived, like
 * MAX_IN_FLIGHT_REQUESTS); its next gets 429 RATE_LIMITED with Retry-After while other addresses
 * are served. The address is the one rate limits use: behind TRUST_PROXY, the forwarded client's.
 * The per-turn share (CLIENT_TURN_BUDGET_MS) is measured under load in test/overload-keepalive.test.ts.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import type { LedgerStore } from "../src/store/store.js";
import { setupContract, type TestLedger } from "./helpers/http.js";

/** Holds every listBatches call of the store until released; `held(n)` resolves once n calls wait. */
function holdListings(store: LedgerStore) {
  const listBatches = store.listBatches.bind(store);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const waiting: { count: number; notify: (() => void)[] } = { count: 0, notify: [] };
  store.listBatches = async (...args) => {
    waiting.count += 1;
    for (const notify of waiting.notify) notify();
    await gate;
    return listBatches(...args);
  };
  const held = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => (waiting.count >= n ? resolve() : undefined);
      waiting.notify.push(check);
      check();
    });
  return { held, release: () => release() };
}

function listing(ledger: TestLedger, remoteAddress: string, headers: Record<string, string> = {}) {
  return ledger.app.inject({
    method: "GET",
    url: `/v1/contracts/${ledger.contract}/batches`,
    headers: { authorization: `Bearer ${ledger.token}`, ...headers },
    remoteAddress,
  });
}

describe("MAX_IN_FLIGHT_PER_CLIENT", () => {
  it("is at most MAX_IN_FLIGHT_REQUESTS, half of it by default", () => {
    expect(loadConfig({ MAX_IN_FLIGHT_REQUESTS: "10" }).maxInFlightPerClient).toBe(5);
    expect(() => loadConfig({ MAX_IN_FLIGHT_REQUESTS: "10", MAX_IN_FLIGHT_PER_CLIENT: "11" })).toThrow(/MAX_IN_FLIGHT_PER_CLIENT/);
    expect(loadConfig({}).clientTurnBudgetMs).toBe(100);
  });

  it("an address with 2 requests in flight gets 429 + Retry-After for its third; another address is served; then it is served again", async () => {
    const ledger = await setupContract({ env: { MAX_IN_FLIGHT_PER_CLIENT: "2" } });
    try {
      const hold = holdListings(ledger.store);
      const first = [listing(ledger, "10.0.0.1"), listing(ledger, "10.0.0.1")];
      await hold.held(2);
      const refused = await listing(ledger, "10.0.0.1");
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ success: false, error: { code: "RATE_LIMITED" } });
      expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      const other = ledger.app.inject({ method: "GET", url: "/v1/parameters", remoteAddress: "10.0.0.2" });
      expect((await other).statusCode).toBe(200);
      expect((await ledger.app.inject({ method: "GET", url: "/healthz", remoteAddress: "10.0.0.1" })).statusCode).toBe(200);
      hold.release();
      expect((await Promise.all(first)).map((response) => response.statusCode)).toEqual([200, 200]);
      expect((await listing(ledger, "10.0.0.1")).statusCode).toBe(200);
    } finally {
      await ledger.close();
    }
  });

  it("behind TRUST_PROXY, counts the forwarded client address, not the proxy's", async () => {
    const ledger = await setupContract({ env: { MAX_IN_FLIGHT_PER_CLIENT: "1", TRUST_PROXY: "127.0.0.1" } });
    try {
      const hold = holdListings(ledger.store);
      const first = listing(ledger, "127.0.0.1", { "x-forwarded-for": "203.0.113.7" });
      await hold.held(1);
      expect((await listing(ledger, "127.0.0.1", { "x-forwarded-for": "203.0.113.7" })).statusCode).toBe(429);
      const another = listing(ledger, "127.0.0.1", { "x-forwarded-for": "198.51.100.9" });
      await hold.held(2);
      hold.release();
      expect((await first).statusCode).toBe(200);
      expect((await another).statusCode).toBe(200);
    } finally {
      await ledger.close();
    }
  });
});
