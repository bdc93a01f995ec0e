import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { burnTransactionIdsToBoundary } from "./helpers/pg-cluster.js";
import { createTestSchema, DATABASE_URL_TEST_DEFAULTS, DEFAULTS_SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  call,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  sleep,
  startServerProcess,
  type ServerProcess,
} from "./helpers/process.js";
import { auditTransparencyLog } from "./helpers/tlog-audit.js";

/**
 * The transparency log exactly once under load on a cluster with PostgreSQL's defaults (issue 37):
 * two built servers on one schema of the run's own initdb cluster (test/global-setup.ts), four
 * concurrent writers submitting batches of 50 transfers and credits to either, while the cluster's
 * transaction ids cross a power of ten (the load starts BOUNDARY_MARGIN ids below one). Then every
 * event has a logIndex, the indexes are 0…n−1 in the events API's order, the last checkpoint holds
 * them all, and the independent verifier (helpers/tlog-audit.ts) agrees with every checkpoint seen.
 * On the code before the fix the log skipped the events of the ids just below the boundary.
 */

if (!DATABASE_URL_TEST_DEFAULTS) console.warn(DEFAULTS_SKIP_REASON);

const WRITERS = 4;
const REQUESTS_PER_WRITER = 60;
const TRANSFERS_PER_BATCH = 50;
/** Transaction ids left before the boundary when the load starts: the load takes several hundred. */
const BOUNDARY_MARGIN = 150;
const CHECKPOINT_POLL_MS = 100;
const MAX_CHECKPOINT_READS = 2000;
const SETTLE_DEADLINE_MS = 60_000;

describe.skipIf(!DATABASE_URL_TEST_DEFAULTS)(
  "the transparency log under concurrent writers on a cluster with PostgreSQL's defaults",
  () => {
    let schema: TestSchema;
    const servers: ServerProcess[] = [];
    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST_DEFAULTS!);
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.kill("SIGKILL")));
      await schema?.drop();
    });

    it("logs every event exactly once, 0…n−1 in the events API's order, while transaction ids cross a power of ten", async () => {
      const adminToken = newAdminToken();
      const env = {
        DATABASE_URL: schema.connectionString,
        ADMIN_TOKEN: adminToken,
        PG_POOL_SIZE: "4",
        MINIMUM_FINALIZE_SECONDS: "1",
        FINALIZER_INTERVAL_MS: "100",
        LOG_CHECKPOINT_SECONDS: "0.25",
        PUBLIC_READ_RATE_LIMIT_PER_MINUTE: "100000000",
      };
      servers.push(await startServerProcess(env));
      servers.push(await startServerProcess(env));
      const pinnedKey = (await (await fetch(`${servers[0]!.url}/v1/log/key`)).text()).trim();
      const operator = privateKeyToAccount(generatePrivateKey());
      const contract = randomAddress();
      await setOperator(servers[0]!.url, adminToken, contract, operator.address);
      await creditPoints(servers[1]!.url, adminToken, contract, "funding", "PHASE2_POINTS", "100000000");
      const token = await signIn(servers[0]!.url, contract, operator);
      const recipients = Array.from({ length: 2 * TRANSFERS_PER_BATCH }, () => randomAddress());
      const boundary = await burnTransactionIdsToBoundary(schema.connectionString, BOUNDARY_MARGIN);

      const notes = new Set<string>();
      let loadDone = false;
      const watching = (async () => {
        for (let read = 0; read < MAX_CHECKPOINT_READS && !loadDone; read++) {
          const response = await fetch(`${servers[read % 2]!.url}/v1/log/checkpoint`);
          const note = await response.text();
          if (response.status === 200) notes.add(note);
          await sleep(CHECKPOINT_POLL_MS);
        }
      })();
      const unexpected: string[] = [];
      const writer = async (w: number) => {
        for (let i = 0; i < REQUESTS_PER_WRITER; i++) {
          const server = servers[(w + i) % 2]!;
          const start = (w * 7 + i) % TRANSFERS_PER_BATCH;
          const answer =
            i % 4 === 3
              ? await call(server.url, "PUT", `/v1/admin/contracts/${randomAddress()}/credits/c-${w}-${i}`, adminToken, {
                  pointType: "PHASE2_GOLD",
                  points: "1",
                })
              : await call(server.url, "PUT", `/v1/contracts/${contract}/batches/b-${w}-${i}`, token, {
                  pointType: "PHASE2_POINTS",
                  transfers: recipients.slice(start, start + TRANSFERS_PER_BATCH).map((toAddress) => ({ toAddress, points: "1" })),
                  secondsToFinalize: 1,
                });
          if (answer.status !== 200) unexpected.push(`${answer.status} ${JSON.stringify(answer.body)}`);
        }
      };
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      await pollUntil("every batch finalized", SETTLE_DEADLINE_MS, async () => {
        const [row] = await schema.query<{ open: number }>(
          "SELECT count(*)::int AS open FROM batches WHERE status IN ('PENDING', 'FINALIZING')",
        );
        return row!.open === 0 ? true : undefined;
      });
      loadDone = true;
      await watching;
      const [crossed] = await schema.query<{ next: string }>("SELECT pg_current_xact_id()::text AS next");
      expect(Number(crossed!.next), `transaction ids crossed ${boundary}`).toBeGreaterThan(boundary);
      expect(unexpected).toEqual([]);

      const audit = await auditTransparencyLog(servers[1]!.url, adminToken, pinnedKey, notes);
      const [stored] = await schema.query<{ events: number; unlogged: number; distinct: number }>(
        "SELECT count(*)::int AS events, count(*) FILTER (WHERE log_index IS NULL)::int AS unlogged, count(DISTINCT log_index)::int AS distinct FROM events",
      );
      console.log(
        `tlog under load (initdb defaults): ${JSON.stringify({ events: audit.events.length, checkpoints: audit.checkpoints, boundary })}`,
      );
      // Two funding events and every request's (a batch: accepted and finalized).
      const batches = WRITERS * REQUESTS_PER_WRITER - (WRITERS * REQUESTS_PER_WRITER) / 4;
      expect(audit.events.length).toBe(2 + (WRITERS * REQUESTS_PER_WRITER) / 4 + 2 * batches);
      expect(stored).toEqual({ events: audit.events.length, unlogged: 0, distinct: audit.events.length });
    }, 240_000);
  },
);
