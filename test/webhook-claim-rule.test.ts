import Database from "better-sqlite3";
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chooseDue,
  dueOrder,
  endpointRoom,
  isDue,
  leaseIsLive,
  type ClaimableEndpoint,
  type DeliveryStatus,
  type DueCandidate,
} from "../src/domain/webhooks.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { DeliveryClaim, LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";

/**
 * The delivery claim's rule (domain/webhooks.ts: isDue, leaseIsLive, endpointRoom, dueOrder,
 * chooseDue) against both adapters' SQL over random endpoint and delivery states: each state is
 * written as rows into a real SQLite and a real PostgreSQL database, claimed through each store,
 * and the deliveries each chose (and their order) compared with the rule applied to the state in
 * memory. A change to which deliveries are due, which endpoints are walked, how sends in flight are
 * counted or in which order an endpoint's deliveries fill its room, made on one side alone, fails it.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const NOW_MS = 1_800_000_000_000;

interface EndpointState {
  contract: number;
  disabled: boolean;
  timeoutsInRow: number;
  backoffUntilMs: number | null;
}

interface DeliveryState {
  endpoint: number;
  status: DeliveryStatus;
  nextAttemptAtMs: number | null;
  claimedUntilMs: number | null;
}

interface State {
  endpoints: EndpointState[];
  deliveries: DeliveryState[];
  claim: DeliveryClaim;
}

const endpointId = (index: number) => `we_${index.toString(16).padStart(24, "0")}`;
const deliveryId = (index: number) => `wd_${index.toString(16).padStart(32, "0")}`;
const contractOf = (index: number) => `0x${(index + 1).toString(16).padStart(40, "0")}`;

// Few distinct times, so ties (same due time, a lease ending exactly now) are common.
const atAround = (offsetsMs: number[]) => fc.constantFrom(...offsetsMs.map((offset) => NOW_MS + offset));

const endpointState: fc.Arbitrary<EndpointState> = fc.record({
  contract: fc.integer({ min: 0, max: 2 }),
  disabled: fc.constantFrom(false, false, false, true),
  timeoutsInRow: fc.constantFrom(0, 0, 0, 1, 3),
  backoffUntilMs: fc.option(atAround([-1000, 0, 1000]), { nil: null, freq: 2 }),
});

function deliveryState(endpoints: number): fc.Arbitrary<DeliveryState> {
  return fc
    .record({
      endpoint: fc.integer({ min: 0, max: endpoints - 1 }),
      status: fc.constantFrom<DeliveryStatus>("PENDING", "PENDING", "PENDING", "PENDING", "SUCCEEDED", "FAILED"),
      nextAttemptAtMs: atAround([-3000, -1000, -1000, 0, 1000]),
      claimedUntilMs: fc.option(atAround([-500, 0, 5000, 5000]), { nil: null, freq: 2 }),
    })
    .map((delivery) => (delivery.status === "PENDING" ? delivery : { ...delivery, nextAttemptAtMs: null, claimedUntilMs: null }));
}

const state: fc.Arbitrary<State> = fc.array(endpointState, { minLength: 1, maxLength: 5 }).chain((endpoints) =>
  fc.record({
    endpoints: fc.constant(endpoints),
    deliveries: fc.array(deliveryState(endpoints.length), { maxLength: 18 }),
    claim: fc.record({
      nowMs: fc.constant(NOW_MS),
      limit: fc.integer({ min: 1, max: 8 }),
      perEndpointLimit: fc.integer({ min: 1, max: 4 }),
      perContractLimit: fc.integer({ min: 1, max: 6 }),
      leaseMs: fc.constant(30_000),
      excludeEndpointIds: fc.subarray(
        endpoints.map((_, index) => endpointId(index)),
        { maxLength: Math.min(2, endpoints.length) },
      ),
    }),
  }),
);

/** The rule applied to the state in memory: the ids it claims, in the order it claims them. */
function ruleClaims({ endpoints, deliveries, claim }: State): string[] {
  const rows = deliveries.map((delivery, index) => ({ ...delivery, id: deliveryId(index), seq: BigInt(index) }));
  const contract = (endpoint: number) => contractOf(endpoints[endpoint]!.contract);
  const live = rows.filter((row) => leaseIsLive(row, claim.nowMs));
  const byContract = new Map<string, number>();
  for (const row of live) byContract.set(contract(row.endpoint), (byContract.get(contract(row.endpoint)) ?? 0) + 1);
  const candidates: (DueCandidate & { id: string })[] = [];
  endpoints.forEach((endpoint, index) => {
    if (endpoint.disabled || !rows.some((row) => row.endpoint === index && row.status === "PENDING")) return;
    const claimable: ClaimableEndpoint = { ...endpoint, id: endpointId(index), contract: contract(index) };
    const room = endpointRoom(claimable, live.filter((row) => row.endpoint === index).length, claim);
    rows
      .filter((row) => row.endpoint === index && isDue(row, claim.nowMs))
      .map((row) => ({ id: row.id, seq: row.seq, contract: contract(index), dueAtMs: row.nextAttemptAtMs!, turn: 0 }))
      .sort(dueOrder)
      .slice(0, Math.max(0, room))
      .forEach((candidate, turn) => candidates.push({ ...candidate, turn }));
  });
  return chooseDue(candidates, byContract, claim).map((candidate) => candidate.id);
}

const ENDPOINT_INSERT = `INSERT INTO webhook_endpoints (id, contract, url, types, description, disabled, secret, created_at_ms, timeouts_in_row, backoff_until_ms)
  VALUES ($1, $2, 'http://127.0.0.1:9/hook', NULL, NULL, $3, 'whsec_test', ${NOW_MS}, $4, $5)`;
const DELIVERY_INSERT = `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, next_attempt_at_ms, created_at_ms, claimed_until_ms, claim_token)
  VALUES ($1, $2, $3, 'credit.created', '{}', $4, $5, ${NOW_MS}, $6, $7)`;

function endpointValues(endpoint: EndpointState, index: number): unknown[] {
  return [endpointId(index), contractOf(endpoint.contract), endpoint.disabled, endpoint.timeoutsInRow, endpoint.backoffUntilMs];
}

function deliveryValues(delivery: DeliveryState, index: number): unknown[] {
  const token = delivery.claimedUntilMs === null ? null : `token-${index}`;
  return [
    deliveryId(index),
    endpointId(delivery.endpoint),
    deliveryId(index),
    delivery.status,
    delivery.nextAttemptAtMs,
    delivery.claimedUntilMs,
    token,
  ];
}

/** Writes the state as rows (the same statements on both: positional parameters, each used once) (deliveries in order, so their seq follows the index) and claims through the store. */
interface Side {
  claims(state: State): Promise<string[]>;
  close(): Promise<void>;
}

function sqliteSide(): Side & { name: string } {
  const dir = mkdtempSync(join(tmpdir(), "pl-claim-rule-"));
  const path = join(dir, "points.db");
  const store: LedgerStore = createSqliteStore({ path, synchronous: "NORMAL" });
  let raw: Database.Database | null = null;
  const sql = (text: string) => text.replace(/\$\d+/g, "?");
  return {
    name: "SQLite",
    claims: async ({ endpoints, deliveries, claim }) => {
      if (!raw) {
        await store.migrate();
        raw = new Database(path);
      }
      const db = raw;
      db.transaction(() => {
        db.prepare("DELETE FROM webhook_deliveries").run();
        db.prepare("DELETE FROM webhook_endpoints").run();
        const endpoint = db.prepare(sql(ENDPOINT_INSERT));
        endpoints.forEach((state, index) =>
          endpoint.run(...endpointValues(state, index).map((v) => (typeof v === "boolean" ? Number(v) : v))),
        );
        const delivery = db.prepare(sql(DELIVERY_INSERT));
        deliveries.forEach((state, index) => delivery.run(...deliveryValues(state, index)));
      })();
      return (await store.claimDueDeliveries(claim)).map((claimed) => claimed.id);
    },
    close: async () => {
      raw?.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresSide(schema: TestSchema): Promise<Side & { name: string }> {
  const store = schema.openStore();
  await store.migrate();
  const pool = new pg.Pool({ connectionString: schema.connectionString, max: 1 });
  return {
    name: "PostgreSQL",
    claims: async ({ endpoints, deliveries, claim }) => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("DELETE FROM webhook_deliveries");
        await client.query("DELETE FROM webhook_endpoints");
        for (const [index, endpoint] of endpoints.entries()) await client.query(ENDPOINT_INSERT, endpointValues(endpoint, index));
        for (const [index, delivery] of deliveries.entries()) await client.query(DELIVERY_INSERT, deliveryValues(delivery, index));
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      return (await store.claimDueDeliveries(claim)).map((claimed) => claimed.id);
    },
    close: () => pool.end(),
  };
}

describe("the delivery claim: the domain's rule and both adapters' SQL choose the same deliveries", () => {
  let schema: TestSchema | null = null;
  const sides: (Side & { name: string })[] = [];
  beforeAll(async () => {
    sides.push(sqliteSide());
    if (DATABASE_URL_TEST) {
      schema = await createTestSchema(DATABASE_URL_TEST);
      sides.push(await postgresSide(schema));
    }
  });
  afterAll(async () => {
    for (const side of sides) await side.close();
    await schema?.drop();
  });

  // PostgreSQL is compared too when DATABASE_URL_TEST is set (CI sets it).
  it("over random endpoint and delivery states and claims, each adapter claims what the rule claims, in its order", async () => {
    await fc.assert(
      fc.asyncProperty(state, async (random) => {
        const expected = ruleClaims(random);
        const claimed: Record<string, string[]> = {};
        for (const side of sides) claimed[side.name] = await side.claims(random);
        expect(claimed).toEqual(Object.fromEntries(sides.map((side) => [side.name, expected])));
      }),
      { numRuns: 150 },
    );
  }, 120_000);
});
