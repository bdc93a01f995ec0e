import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describeEventsApi } from "./events-suite.js";
import { createTestSchema, DATABASE_URL_TEST, POSTGRES_TEST_CLUSTERS, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  startServerProcess,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * The events API on PostgreSQL: the suite of events-suite.ts through buildApp over a schema, and
 * the proof docs/api.md asks for: several server processes write events (submits, cancels, credits,
 * and their finalizers' finalizations) while readers page through GET …/events and
 * /v1/admin/events with small pages the whole time. A sequence number taken by a transaction
 * that commits after a later one must not be skipped: at the end the pages hold every event of
 * the table exactly once, in the table's reading order. Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
const skipped = DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`;

// Skipped, not replaced by a placeholder that passes: the report shows the PostgreSQL suite as not run.
describe.skipIf(!DATABASE_URL_TEST)(`on PostgreSQL${skipped}`, () => {
  describeEventsApi("PostgreSQL", async () => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    return { store: schema.openStore(), databaseUrl: schema.connectionString, remove: () => schema.drop() };
  });
});

const INSTANCES = 3;
/** Small pools (3 × 4 connections): other suites share the database server's max_connections. */
const SERVER_ENV: Env = {
  MINIMUM_FINALIZE_SECONDS: "1",
  DEFAULT_FINALIZE_SECONDS: "60",
  FINALIZER_INTERVAL_MS: "50",
  PG_POOL_SIZE: "4",
  RATE_LIMIT_PER_MINUTE: "100000000",
  AUTH_RATE_LIMIT_PER_MINUTE: "100000",
  LOG_LEVEL: "warn",
};
/** Writer rounds per instance; each round submits a batch that finalizes, one it cancels, and now and then a credit. */
const ROUNDS_PER_INSTANCE = 30;
const WRITERS_PER_INSTANCE = 2;
const CREDIT_EVERY_ROUNDS = 5;
/** Small pages, so many page boundaries fall between events that commit out of order. */
const READER_PAGE_SIZE = 3;
const SETTLE_DEADLINE_MS = 30_000;

interface EventJson {
  id: string;
  type: string;
}

/** Pages from `cursor` until caught up, spreading the requests over the instances; returns the new cursor. */
async function readOn(
  servers: ServerProcess[],
  path: string,
  token: string,
  cursor: string | null,
  into: EventJson[],
): Promise<string | null> {
  for (let pages = 0; ; pages++) {
    const server = servers[pages % servers.length]!;
    const query = `limit=${READER_PAGE_SIZE}${cursor === null ? "" : `&after=${cursor}`}`;
    const page = await callOk(server.url, "GET", `${path}?${query}`, token);
    into.push(...(page.events as EventJson[]));
    cursor = page.cursor as string;
    if (page.hasMore !== true) return cursor;
  }
}

describe.skipIf(!DATABASE_URL_TEST)(`event paging while ${INSTANCES} processes write${skipped}`, () => {
  describe.each(POSTGRES_TEST_CLUSTERS)("on %s", (_cluster, clusterUrl) => {
    let schema: TestSchema;
    const servers: ServerProcess[] = [];
    const adminToken = newAdminToken();

    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(clusterUrl);
      // One after the other: the first migrates, the others find the schema ready.
      for (let i = 0; i < INSTANCES; i++) {
        servers.push(await startServerProcess({ ...SERVER_ENV, DATABASE_URL: schema.connectionString, ADMIN_TOKEN: adminToken }));
      }
    }, 90_000);

    afterAll(async () => {
      await Promise.all(servers.map((server) => server.kill("SIGTERM")));
      await schema?.drop();
    });

    it("returns every event exactly once and in order to readers paging during the writes", async () => {
      const operatorKey = generatePrivateKey();
      const contract = randomAddress();
      await setOperator(servers[0]!.url, adminToken, contract, privateKeyToAccount(operatorKey).address);
      await creditPoints(servers[1]!.url, adminToken, contract, "initial", "PHASE2_POINTS", "1000000");
      const token = await signIn(servers[2]!.url, contract, privateKeyToAccount(operatorKey));

      let writing = true;
      const writer = async (server: ServerProcess, writerId: string) => {
        for (let round = 0; round < ROUNDS_PER_INSTANCE / WRITERS_PER_INSTANCE; round++) {
          const transfers = [{ toAddress: randomAddress(), points: "1" }];
          const base = `/v1/contracts/${contract}/batches`;
          await callOk(server.url, "PUT", `${base}/${writerId}-f${round}`, token, {
            pointType: "PHASE2_POINTS",
            transfers,
            secondsToFinalize: 1,
          });
          await callOk(server.url, "PUT", `${base}/${writerId}-c${round}`, token, {
            pointType: "PHASE2_POINTS",
            transfers,
            secondsToFinalize: 60,
          });
          await callOk(server.url, "DELETE", `${base}/${writerId}-c${round}`, token);
          if (round % CREDIT_EVERY_ROUNDS === 0)
            await creditPoints(server.url, adminToken, contract, `${writerId}-credit${round}`, "PHASE2_POINTS", "5");
        }
      };
      const writers = servers.flatMap((server, i) => Array.from({ length: WRITERS_PER_INSTANCE }, (_, w) => writer(server, `i${i}w${w}`)));

      const contractEvents: EventJson[] = [];
      const allEvents: EventJson[] = [];
      const contractPath = `/v1/contracts/${contract}/events`;
      const reader = async () => {
        let contractCursor: string | null = null;
        let adminCursor: string | null = null;
        while (writing) {
          contractCursor = await readOn(servers, contractPath, token, contractCursor, contractEvents);
          adminCursor = await readOn(servers, "/v1/admin/events", adminToken, adminCursor, allEvents);
        }
        return { contractCursor, adminCursor };
      };
      const reading = reader();
      await Promise.all(writers);
      // Every 1-second batch finalizes (by whichever instance's finalizer claims it).
      const expectedFinalized = INSTANCES * ROUNDS_PER_INSTANCE;
      await pollUntil("every batch to finalize", SETTLE_DEADLINE_MS, async () => {
        const [row] = await schema.query<{ count: string }>("SELECT count(*) FROM events WHERE type = 'batch.finalized'");
        return Number(row!.count) === expectedFinalized ? true : undefined;
      });
      writing = false;
      const cursors = await reading;
      // One last read after everything has committed.
      await readOn(servers, contractPath, token, cursors.contractCursor, contractEvents);
      await readOn(servers, "/v1/admin/events", adminToken, cursors.adminCursor, allEvents);

      const table = await schema.query<{ event_id: string; stream: string | null }>("SELECT event_id, stream FROM events ORDER BY tx, seq");
      const contractKey = contract.toLowerCase();
      const tableContract = table.filter((row) => row.stream === contractKey).map((row) => row.event_id);
      const received = contractEvents.map((event) => event.id);
      expect(new Set(received).size, "no event twice").toBe(received.length);
      expect(received).toEqual(tableContract);
      expect(allEvents.map((event) => event.id)).toEqual(table.map((row) => row.event_id));
      const rounds = INSTANCES * ROUNDS_PER_INSTANCE;
      // 1 operator change, 1 + credits, 2 accepts, 1 cancel and 1 finalization per round.
      const credits = 1 + INSTANCES * WRITERS_PER_INSTANCE * Math.ceil(ROUNDS_PER_INSTANCE / WRITERS_PER_INSTANCE / CREDIT_EVERY_ROUNDS);
      expect(received.length).toBe(1 + credits + rounds * 4);
      // How often a later sequence number committed in an earlier transaction order (the case a
      // reader by sequence number alone would skip); reported, not asserted: it depends on timing.
      const [crossed] = await schema.query<{ count: string }>(
        "SELECT count(*) FROM events a JOIN events b ON a.seq < b.seq AND a.tx > b.tx",
      );
      console.info(`events: ${table.length}; pairs whose seq order differs from their transaction order: ${crossed!.count}`);
    }, 120_000);

    it("refuses a position of another form with 400 naming after", async () => {
      const response = await call(
        servers[0]!.url,
        "GET",
        `/v1/admin/events?after=${Buffer.from("ev1:12").toString("base64url")}`,
        adminToken,
      );
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ error: { code: "VALIDATION_FAILED", details: [{ path: "after" }] } });
    });
  });
});
