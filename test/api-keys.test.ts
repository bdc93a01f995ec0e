import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { FastifyInstance } from "fastify";
import { newApiKeySecret } from "../src/auth/api-keys.js";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import { parseAddress } from "../src/domain/address.js";
import { MAX_API_KEYS } from "../src/domain/limits.js";
import { buildApp } from "../src/http/app.js";
import { createMetrics } from "../src/metrics.js";
import type { LedgerStore } from "../src/store/store.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import {
  TEST_ENV,
  addContract,
  batchBody,
  expectError,
  injectSender,
  listen,
  randomAddress,
  registerOperator,
  newAccount,
  setupContract,
  signIn,
  type OperatedContract,
  type Send,
  type TestResponse,
} from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import { isEvent, openSse, type SseConnection } from "./helpers/sse.js";

/**
 * API keys for backends (API.md "API keys (backends)", issue 21) through the real app, one suite
 * for both adapters: creation and its limits, every route family inside and outside a key's
 * scopes, refused keys (revoked, expired, malformed, checksum-broken, another contract's), keys
 * cannot manage keys, the operator change, per-key rate limits and lastUsedAt without a write per
 * request. The multi-process revocation is in api-keys-postgres.test.ts.
 */

interface FreshStore {
  store: LedgerStore;
  databaseUrl: string;
  remove(): Promise<void>;
}

interface ApiKeyJson {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: string;
  createdBy: { type: string; address?: string };
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  revokedReason: string | null;
}

interface KeyLedger extends OperatedContract {
  app: FastifyInstance;
  store: LedgerStore;
  send: Send;
  adminToken: string;
  clock: ManualClock;
}

const T0 = Date.UTC(2026, 4, 1);

async function ledgerOver(fresh: FreshStore, clock: ManualClock, env: Record<string, string> = {}): Promise<KeyLedger> {
  await fresh.store.migrate();
  const adminToken = `admin-${randomUUID()}`;
  const config = loadConfig({
    ...TEST_ENV,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    ADMIN_TOKEN: adminToken,
    DATABASE_URL: fresh.databaseUrl,
    ...env,
  });
  const app = await buildApp({ config, store: fresh.store, clock, metrics: createMetrics(), logger: false });
  const send = injectSender(app);
  const contract = await addContract({ send, adminToken }, { PHASE2_POINTS: "1000" });
  return { app, store: fresh.store, send, adminToken, clock, ...contract };
}

async function createKey(
  send: Send,
  contract: string,
  token: string,
  body: Record<string, unknown>,
  admin = false,
): Promise<{ apiKey: ApiKeyJson; secret: string; response: TestResponse }> {
  const url = admin ? `/v1/admin/contracts/${contract}/api-keys` : `/v1/contracts/${contract}/api-keys`;
  const response = await send({ method: "POST", url, token, body });
  expect(response.status, response.text).toBe(200);
  const { apiKey, secret } = response.json as { apiKey: ApiKeyJson; secret: string };
  return { apiKey, secret, response };
}

/** One request of each contract route family, with the scope API.md gives it. */
function routeFamilies(contract: string): { name: string; scope: string; method: string; url: string; body?: unknown }[] {
  const base = `/v1/contracts/${contract}`;
  const batch = batchBody([{ toAddress: randomAddress(), points: "1" }]);
  return [
    { name: "balances", scope: "read", method: "GET", url: `${base}/point-balances` },
    { name: "batch list", scope: "read", method: "GET", url: `${base}/batches` },
    { name: "batch read", scope: "read", method: "GET", url: `${base}/batches/none` },
    { name: "transfers", scope: "read", method: "GET", url: `${base}/transfers` },
    { name: "transfers export", scope: "read", method: "GET", url: `${base}/transfers.csv` },
    { name: "events", scope: "read", method: "GET", url: `${base}/events` },
    { name: "webhook endpoint list", scope: "read", method: "GET", url: `${base}/webhook-endpoints` },
    { name: "submit (PUT)", scope: "submit", method: "PUT", url: `${base}/batches/${randomUUID()}`, body: batch },
    { name: "submit (POST)", scope: "submit", method: "POST", url: `${base}/batches`, body: batch },
    { name: "cancel", scope: "cancel", method: "DELETE", url: `${base}/batches/none` },
    {
      name: "webhook create",
      scope: "webhooks",
      method: "POST",
      url: `${base}/webhook-endpoints`,
      body: { url: "http://127.0.0.1:9/hook" },
    },
    { name: "webhook delete", scope: "webhooks", method: "DELETE", url: `${base}/webhook-endpoints/we_000000000000000000000000` },
  ];
}

const ALL_SCOPES = ["read", "submit", "cancel", "webhooks"];

function describeApiKeys(adapter: string, openStore: () => Promise<FreshStore>): void {
  describe(`API keys on ${adapter}`, () => {
    let clock: ManualClock;
    let fresh: FreshStore;
    let ledger: KeyLedger;
    let keysUrl: string;

    beforeEach(async () => {
      clock = new ManualClock(T0);
      fresh = await openStore();
      ledger = await ledgerOver(fresh, clock);
      keysUrl = `/v1/contracts/${ledger.contract}/api-keys`;
    });

    afterEach(async () => {
      await ledger.app.close();
      await fresh.remove();
    });

    it("creates a key: the secret once, with its checksum and no-store; the list and the event never show it", async () => {
      const { apiKey, secret, response } = await createKey(ledger.send, ledger.contract, ledger.token, {
        name: "nightly payouts ✓",
        scopes: ["submit", "read"],
      });
      expect(response.headers["cache-control"]).toBe("no-store");
      expect(secret).toMatch(/^plk_[A-Za-z0-9_-]{49}$/);
      expect(apiKey).toEqual({
        id: expect.stringMatching(/^key_[0-9a-f]{32}$/),
        name: "nightly payouts ✓",
        scopes: ["read", "submit"],
        prefix: secret.slice(0, 12),
        createdAt: new Date(T0).toISOString(),
        createdBy: { type: "operator", address: ledger.operatorAccount.address },
        expiresAt: null,
        lastUsedAt: null,
        revokedAt: null,
        revokedReason: null,
      });
      const list = await ledger.send({ method: "GET", url: keysUrl, token: ledger.token });
      expect(list.status).toBe(200);
      expect((list.json as { apiKeys: ApiKeyJson[] }).apiKeys).toEqual([apiKey]);
      const one = await ledger.send({ method: "GET", url: `${keysUrl}/${apiKey.id}`, token: ledger.token });
      expect((one.json as { apiKey: ApiKeyJson }).apiKey).toEqual(apiKey);
      expect(list.text + one.text).not.toContain(secret);
      const events = await ledger.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/events?types=api_key.created`,
        token: ledger.token,
      });
      expect(events.status, events.text).toBe(200);
      const [event] = (events.json as { events: { type: string; actor: unknown; data: { apiKey: ApiKeyJson } }[] }).events;
      expect(event?.type).toBe("api_key.created");
      expect(event?.data.apiKey).toEqual(apiKey);
      // Caused by whoever created it: here the operator, as its createdBy says.
      expect(event?.actor).toEqual(apiKey.createdBy);
      expect(event?.actor).toMatchObject({ type: "operator" });
      expect(events.text).not.toContain(secret.slice(12));
      // Stored only as a hash: no column of the table holds the secret.
      expect(JSON.stringify(await ledger.store.listApiKeys(parseAddress(ledger.contract)!))).not.toContain(secret.slice(12));
    });

    it("refuses a malformed create body with 400 naming each field", async () => {
      const bodies = [
        { name: "", scopes: ["read"] },
        { name: "x".repeat(65), scopes: ["read"] },
        { name: "tab\there", scopes: ["read"] },
        { name: "k", scopes: [] },
        { name: "k", scopes: ["read", "read"] },
        { name: "k", scopes: ["admin"] },
        { name: "k", scopes: ["read"], expiresAt: new Date(T0 - 1000).toISOString() },
        { name: "k", scopes: ["read"], extra: true },
      ];
      for (const body of bodies) {
        expectError(await ledger.send({ method: "POST", url: keysUrl, token: ledger.token, body }), 400, "VALIDATION_FAILED");
      }
      // 64 code points, astral characters included, is the longest name.
      await createKey(ledger.send, ledger.contract, ledger.token, { name: "🔑".repeat(64), scopes: ["read"] });
    });

    it("opens every route family inside its scopes and answers 403 with requiredScope outside them", async () => {
      for (const route of routeFamilies(ledger.contract)) {
        const inside = await createKey(ledger.send, ledger.contract, ledger.token, { name: `only ${route.scope}`, scopes: [route.scope] });
        const allowed = await ledger.send({ method: route.method, url: route.url, token: inside.secret, body: route.body });
        expect([401, 403], `${route.name} with ${route.scope}: ${allowed.text}`).not.toContain(allowed.status);
        const others = ALL_SCOPES.filter((scope) => scope !== route.scope);
        const outside = await createKey(ledger.send, ledger.contract, ledger.token, { name: `not ${route.scope}`, scopes: others });
        const refused = await ledger.send({ method: route.method, url: route.url, token: outside.secret, body: route.body });
        const error = expectError(refused, 403, "FORBIDDEN");
        expect(error.details, route.name).toEqual({ requiredScope: route.scope });
      }
    });

    it("a key submits a batch that the operator's token then reads", async () => {
      const { secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "submitter", scopes: ["submit"] });
      const batchId = randomUUID();
      const body = batchBody([{ toAddress: randomAddress(), points: "5" }]);
      const put = await ledger.send({ method: "PUT", url: `/v1/contracts/${ledger.contract}/batches/${batchId}`, token: secret, body });
      expect(put.status, put.text).toBe(200);
      const read = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/batches/${batchId}`, token: ledger.token });
      expect(read.status).toBe(200);
    });

    it("refuses unknown, malformed, checksum-broken, revoked and expired keys with 401, and another contract's path with 403", async () => {
      const url = `/v1/contracts/${ledger.contract}/point-balances`;
      const { apiKey, secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "reader", scopes: ["read"] });
      expect((await ledger.send({ method: "GET", url, token: secret })).status).toBe(200);
      const lastChar = secret.at(-1)!;
      const broken = secret.slice(0, -1) + (lastChar === "A" ? "B" : "A");
      for (const bad of [newApiKeySecret(), "plk_short", `${secret}x`, broken]) {
        expectError(await ledger.send({ method: "GET", url, token: bad }), 401, "UNAUTHORIZED");
      }
      const other = await addContract({ send: ledger.send, adminToken: ledger.adminToken });
      const otherUrl = `/v1/contracts/${other.contract}/point-balances`;
      expectError(await ledger.send({ method: "GET", url: otherUrl, token: secret }), 403, "FORBIDDEN");

      const expiring = await createKey(ledger.send, ledger.contract, ledger.token, {
        name: "short-lived",
        scopes: ["read"],
        expiresAt: new Date(T0 + 60_000).toISOString(),
      });
      expect((await ledger.send({ method: "GET", url, token: expiring.secret })).status).toBe(200);
      clock.advance(60_000);
      expectError(await ledger.send({ method: "GET", url, token: expiring.secret }), 401, "UNAUTHORIZED");

      const revoke = await ledger.send({ method: "DELETE", url: `${keysUrl}/${apiKey.id}`, token: ledger.token });
      expect(revoke.status).toBe(200);
      expectError(await ledger.send({ method: "GET", url, token: secret }), 401, "UNAUTHORIZED");
    });

    it("judges a malformed or checksum-broken key without reading the database", async () => {
      const { secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "reader", scopes: ["read"] });
      const url = `/v1/contracts/${ledger.contract}/point-balances`;
      const lookups = vi.spyOn(ledger.store, "findApiKey");
      const broken = secret.slice(0, -1) + (secret.at(-1) === "A" ? "B" : "A");
      for (const bad of ["plk_", "plk_short", broken, `${secret.slice(0, 20)}!${secret.slice(21)}`]) {
        expectError(await ledger.send({ method: "GET", url, token: bad }), 401, "UNAUTHORIZED");
      }
      expect(lookups).not.toHaveBeenCalled();
      expect((await ledger.send({ method: "GET", url, token: secret })).status).toBe(200);
      expect(lookups).toHaveBeenCalledTimes(1);
      lookups.mockRestore();
    });

    it("keys cannot manage keys, with any scope", async () => {
      const { apiKey, secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "everything", scopes: ALL_SCOPES });
      for (const request of [
        { method: "POST", url: keysUrl, body: { name: "child", scopes: ["read"] } },
        { method: "GET", url: keysUrl },
        { method: "GET", url: `${keysUrl}/${apiKey.id}` },
        { method: "DELETE", url: `${keysUrl}/${apiKey.id}` },
      ]) {
        expectError(await ledger.send({ ...request, token: secret }), 403, "FORBIDDEN");
      }
      const admin = `/v1/admin/contracts/${ledger.contract}/api-keys`;
      expectError(await ledger.send({ method: "GET", url: admin, token: secret }), 403, "FORBIDDEN");
      expectError(await ledger.send({ method: "GET", url: admin, token: ledger.token }), 403, "FORBIDDEN");
    });

    it("revokes idempotently: a second DELETE answers the key with its first revokedAt; 404 for none or another contract's", async () => {
      const { apiKey } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "k", scopes: ["read"] });
      const first = await ledger.send({ method: "DELETE", url: `${keysUrl}/${apiKey.id}`, token: ledger.token });
      expect((first.json as { apiKey: ApiKeyJson }).apiKey).toMatchObject({
        revokedAt: new Date(T0).toISOString(),
        revokedReason: "revoked",
      });
      clock.advance(5_000);
      const second = await ledger.send({ method: "DELETE", url: `${keysUrl}/${apiKey.id}`, token: ledger.token });
      expect(second.status).toBe(200);
      expect((second.json as { apiKey: ApiKeyJson }).apiKey).toEqual((first.json as { apiKey: ApiKeyJson }).apiKey);
      const events = await ledger.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/events?types=api_key.revoked`,
        token: ledger.token,
      });
      const revokedEvents = (events.json as { events: { actor: unknown }[] }).events;
      expect(revokedEvents).toHaveLength(1);
      expect(revokedEvents[0]!.actor).toMatchObject({ type: "operator" });

      const other = await addContract({ send: ledger.send, adminToken: ledger.adminToken });
      const otherKeys = `/v1/contracts/${other.contract}/api-keys/${apiKey.id}`;
      expectError(await ledger.send({ method: "GET", url: otherKeys, token: other.token }), 404, "NOT_FOUND");
      expectError(await ledger.send({ method: "DELETE", url: otherKeys, token: other.token }), 404, "NOT_FOUND");
      expectError(await ledger.send({ method: "GET", url: `${keysUrl}/key_none`, token: ledger.token }), 404, "NOT_FOUND");
    });

    it("an operator change revokes the keys the previous operator made, not the admin's, each with api_key.revoked", async () => {
      const mine = await createKey(ledger.send, ledger.contract, ledger.token, { name: "operator's", scopes: ["read"] });
      const admins = await createKey(ledger.send, ledger.contract, ledger.adminToken, { name: "admin's", scopes: ["read"] }, true);
      expect(admins.apiKey.createdBy).toEqual({ type: "admin" });
      const url = `/v1/contracts/${ledger.contract}/point-balances`;
      clock.advance(1000);
      const next = newAccount();
      await registerOperator(ledger.send, ledger.adminToken, ledger.contract, next.address);
      expectError(await ledger.send({ method: "GET", url, token: mine.secret }), 401, "UNAUTHORIZED");
      expect((await ledger.send({ method: "GET", url, token: admins.secret })).status).toBe(200);

      const adminKeys = `/v1/admin/contracts/${ledger.contract}/api-keys`;
      const list = await ledger.send({ method: "GET", url: adminKeys, token: ledger.adminToken });
      const byId = new Map((list.json as { apiKeys: ApiKeyJson[] }).apiKeys.map((key) => [key.id, key]));
      expect(byId.get(mine.apiKey.id)).toMatchObject({ revokedReason: "operator_changed", revokedAt: new Date(T0 + 1000).toISOString() });
      expect(byId.get(admins.apiKey.id)).toMatchObject({ revokedReason: null, revokedAt: null });

      const token = await signIn(ledger.send, ledger.contract, next);
      const events = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/events?types=api_key.revoked`, token });
      const revoked = (events.json as { events: { actor: unknown; data: { apiKey: ApiKeyJson } }[] }).events;
      expect(revoked.map((event) => event.data.apiKey.id)).toEqual([mine.apiKey.id]);
      // API.md: revoked with the operator change, whose actor is the admin.
      expect(revoked.map((event) => event.actor)).toEqual([{ type: "admin" }]);
      // The new operator's keys stay when the same operator is set again.
      const theirs = await createKey(ledger.send, ledger.contract, token, { name: "new operator's", scopes: ["read"] });
      await registerOperator(ledger.send, ledger.adminToken, ledger.contract, next.address);
      expect((await ledger.send({ method: "GET", url, token: theirs.secret })).status).toBe(200);
    });

    it(`refuses the ${MAX_API_KEYS + 1}st unrevoked key with 400, and takes one again after a revocation`, async () => {
      let last: ApiKeyJson | null = null;
      for (let i = 0; i < MAX_API_KEYS; i++) {
        last = (await createKey(ledger.send, ledger.contract, ledger.token, { name: `key ${i}`, scopes: ["read"] })).apiKey;
      }
      const over = await ledger.send({
        method: "POST",
        url: keysUrl,
        token: ledger.token,
        body: { name: "one too many", scopes: ["read"] },
      });
      expectError(over, 400, "VALIDATION_FAILED");
      await ledger.send({ method: "DELETE", url: `${keysUrl}/${last!.id}`, token: ledger.token });
      await createKey(ledger.send, ledger.contract, ledger.token, { name: "room again", scopes: ["read"] });
    });

    it(`of ${MAX_API_KEYS + 5} concurrent creates by the admin (no operator row to lock), exactly ${MAX_API_KEYS} succeed`, async () => {
      const adminKeys = `/v1/admin/contracts/${ledger.contract}/api-keys`;
      const answers = await Promise.all(
        Array.from({ length: MAX_API_KEYS + 5 }, (_, i) =>
          ledger.send({ method: "POST", url: adminKeys, token: ledger.adminToken, body: { name: `racer ${i}`, scopes: ["read"] } }),
        ),
      );
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(MAX_API_KEYS);
      for (const refused of answers.filter((answer) => answer.status !== 200)) expectError(refused, 400, "VALIDATION_FAILED");
      expect(await ledger.store.listApiKeys(parseAddress(ledger.contract)!)).toHaveLength(MAX_API_KEYS);
    });

    it("records lastUsedAt in memory and writes it at shutdown, not on every request", async () => {
      const { apiKey, secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "reader", scopes: ["read"] });
      const url = `/v1/contracts/${ledger.contract}/point-balances`;
      clock.advance(2000);
      for (let i = 0; i < 5; i++) expect((await ledger.send({ method: "GET", url, token: secret })).status).toBe(200);
      const contract = parseAddress(ledger.contract)!;
      expect((await ledger.store.getApiKey(contract, apiKey.id))?.lastUsedAtMs).toBeNull();
      await ledger.app.close();
      expect((await ledger.store.getApiKey(contract, apiKey.id))?.lastUsedAtMs).toBe(T0 + 2000);
    });
  });

  describe(`per-key rate limits on ${adapter}`, () => {
    let fresh: FreshStore;
    let ledger: KeyLedger;

    beforeEach(async () => {
      fresh = await openStore();
      ledger = await ledgerOver(fresh, new ManualClock(T0), { RATE_LIMIT_PER_MINUTE: "20" });
    });

    afterEach(async () => {
      await ledger.app.close();
      await fresh.remove();
    });

    it("one key's 429s touch no other key and not the operator's token", async () => {
      const url = `/v1/contracts/${ledger.contract}/point-balances`;
      const first = await createKey(ledger.send, ledger.contract, ledger.token, { name: "busy", scopes: ["read"] });
      const second = await createKey(ledger.send, ledger.contract, ledger.token, { name: "quiet", scopes: ["read"] });
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++) statuses.push((await ledger.send({ method: "GET", url, token: first.secret })).status);
      expect(statuses.slice(0, 20).every((status) => status === 200)).toBe(true);
      expectError(await ledger.send({ method: "GET", url, token: first.secret }), 429, "RATE_LIMITED");
      expect((await ledger.send({ method: "GET", url, token: second.secret })).status).toBe(200);
      expect((await ledger.send({ method: "GET", url, token: ledger.token })).status).toBe(200);
    });
  });
}

describeApiKeys("SQLite", async () => temporarySqliteStore());

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
const skipped = DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`;
describe.skipIf(!DATABASE_URL_TEST)(`on PostgreSQL${skipped}`, () => {
  describeApiKeys("PostgreSQL", async () => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    return { store: schema.openStore(), databaseUrl: schema.connectionString, remove: () => schema.drop() };
  });
});

describe("the event stream with an API key", () => {
  it("streams to a key with read, and ends once the key is revoked, within a keep-alive interval", async () => {
    const ledger = await setupContract({ env: { EVENT_STREAM_KEEPALIVE_MS: "200" }, credits: { PHASE2_POINTS: "100" } });
    const connections: SseConnection[] = [];
    try {
      const baseUrl = await listen(ledger.app);
      const { apiKey, secret } = await createKey(ledger.send, ledger.contract, ledger.token, { name: "feed", scopes: ["read"] });
      const open = async () => {
        const connection = await openSse(baseUrl, `/v1/contracts/${ledger.contract}/events/stream`, { authorization: `Bearer ${secret}` });
        connections.push(connection);
        return connection;
      };
      const sse = await open();
      expect(sse.status).toBe(200);
      expect((await sse.next(isEvent)).event).toBe("operator.changed");
      // Still open after several keep-alives, each of which checks the key again.
      for (let i = 0; i < 3; i++) await sse.next((frame) => frame.comment !== undefined, 3000);
      const revoke = await ledger.send({
        method: "DELETE",
        url: `/v1/contracts/${ledger.contract}/api-keys/${apiKey.id}`,
        token: ledger.token,
      });
      expect(revoke.status).toBe(200);
      await sse.ended;
      expect((await open()).status).toBe(401);
    } finally {
      for (const connection of connections) connection.close();
      await ledger.close();
    }
  });
});
