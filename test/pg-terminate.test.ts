import { randomBytes, randomInt } from "node:crypto";
import pg from "pg";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch } from "../src/domain/batch.js";
import { formatPoints, parsePoints, UNITS_PER_POINT } from "../src/domain/points.js";
import { StoreUnavailableError } from "../src/store/errors.js";
import type { LedgerStore } from "../src/store/store.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, withSearchPath, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress as randomChecksummed,
  runCli,
  setOperator,
  signIn,
  startServerProcess,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * PostgreSQL backends terminated under the service (`pg_terminate_backend`, as an operator, a
 * failover or a connection pooler does): the process must survive every lost connection,
 * answering 503 meanwhile. node-postgres emits 'error' on a client whose backend dies; a client
 * without a listener at that moment crashes the process. The window is widest when the event loop
 * is busy, because then one socket read delivers both a ReadyForQuery that hands the client to a
 * waiting transaction and the FATAL that follows it. Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const POINTS = "PHASE2_POINTS";
const POOL_SIZE = 4;
/** More concurrent callers than connections, so released clients go straight to waiting transactions. */
const STORE_WORKERS = 8;
/** The synchronous spin that keeps the event loop busy: socket reads pile up meanwhile. */
const SPIN_MIN_MS = 50;
const SPIN_SPREAD_MS = 50;
const STORE_TERMINATIONS_WANTED = 100;
const STORE_DEADLINE_MS = 10_000;

/** Blocks the event loop for `ms`, as a CPU-heavy request would. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

/**
 * Terminates every backend named `applicationName`, round after round, until `wanted` have been
 * terminated, the deadline passes or `stop()` is called; `done` resolves with the figures.
 */
function startTerminator(applicationName: string, wanted: number, deadlineMs: number) {
  let stopped = false;
  let terminated = 0;
  let rounds = 0;
  const done = (async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL_TEST });
    await client.connect();
    const deadline = Date.now() + deadlineMs;
    try {
      while (!stopped && terminated < wanted && Date.now() < deadline) {
        const { rows } = await client.query<{ terminated: number }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS terminated
           FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
          [applicationName],
        );
        terminated += rows[0]!.terminated;
        rounds += 1;
      }
    } finally {
      await client.end();
    }
    return { terminated, rounds };
  })();
  return {
    done,
    stop: () => {
      stopped = true;
    },
  };
}

/** The server process under test: a small pool, a fast finalizer, so finalizations meet the terminator too. */
const SERVER_ENV: Env = { MINIMUM_FINALIZE_SECONDS: "1", FINALIZER_INTERVAL_MS: "100", PG_POOL_SIZE: "6", LOG_LEVEL: "fatal" };
const CREDIT_POINTS = "1000000000";
const HTTP_WORKERS = 8;
const PROCESS_TERMINATIONS_WANTED = 1000;
const PROCESS_DEADLINE_MS = 40_000;
/** Recipients are drawn from a fixed set, so the test's own CPU goes to requests, not to checksums. */
const RECIPIENTS = 400;
/** Transfers per batch: enough JSON and checksum work per request to keep the server's event loop busy. */
const MIN_TRANSFERS = 50;
const TRANSFER_SPREAD = 150;
const READY_DEADLINE_MS = 20_000;
const BATCHES_AFTER_STORM = 5;

interface SentBatch {
  batchId: string;
  transfers: { toAddress: `0x${string}`; points: string }[];
  status: number;
}

interface Tally {
  byStatus: Record<string, number>;
  /** Answers no client should see: a 500, a 503 without Retry-After, an unexpected 4xx, no answer. */
  unexpected: string[];
}

/** One request; an answer is expected when it is 200 or 503 with a whole-seconds Retry-After. */
async function send(server: ServerProcess, tally: Tally, method: string, path: string, token: string, body?: unknown): Promise<number> {
  let status: number;
  let text: string;
  let retryAfter: string | null;
  try {
    const response = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    [status, text, retryAfter] = [response.status, await response.text(), response.headers.get("retry-after")];
  } catch (error) {
    tally.unexpected.push(`${method} ${path}: no answer (${String(error)})`);
    return 0;
  }
  tally.byStatus[status] = (tally.byStatus[status] ?? 0) + 1;
  const proper = status === 200 || (status === 503 && retryAfter !== null && /^[0-9]+$/.test(retryAfter));
  if (!proper) tally.unexpected.push(`${method} ${path} → ${status} retry-after=${retryAfter} ${text.slice(0, 300)}`);
  return status;
}

/** `count` different recipients in random order (partial Fisher-Yates): a batch names each address once. */
function pickDistinct<T>(items: readonly T[], count: number): T[] {
  const pool = [...items];
  for (let i = 0; i < count; i++) {
    const j = i + randomInt(pool.length - i);
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

function newHttpBatch(recipients: `0x${string}`[]): SentBatch {
  const chosen = pickDistinct(recipients, MIN_TRANSFERS + randomInt(TRANSFER_SPREAD));
  const transfers = chosen.map((toAddress) => ({
    toAddress,
    points: formatPoints(parsePoints("0.01")! + BigInt(randomInt(1_000_000_000_000))),
  }));
  return { batchId: `term-${randomBytes(6).toString("hex")}`, transfers, status: 0 };
}

/** Set-up calls, made before any backend is terminated, may still meet the event-loop shedder's 503 on a loaded machine. */
async function retrying<T>(what: string, call: () => Promise<T>): Promise<T> {
  const answer = await pollUntil(what, READY_DEADLINE_MS, async () => {
    try {
      return { value: await call() };
    } catch (error) {
      if (String(error).includes("→ 503")) return undefined;
      throw error;
    }
  });
  return answer.value;
}

/** Each stored batch as `address:units,…` in transfer order, to compare with what was sent. */
async function storedTransfers(db: TestSchema): Promise<Map<string, string>> {
  const rows = await db.query<{ batch_id: string; transfers: string }>(
    `SELECT b.batch_id, string_agg(t.to_address || ':' || t.amount_units::text, ',' ORDER BY t.idx) AS transfers
     FROM batches b JOIN transfers t ON t.seq = b.seq GROUP BY b.batch_id`,
  );
  return new Map(rows.map((row) => [row.batch_id, row.transfers]));
}

function expectedTransfers(batch: SentBatch): string {
  return batch.transfers.map((transfer) => `${transfer.toAddress.toLowerCase()}:${parsePoints(transfer.points)!}`).join(",");
}

function newBatch(contract: AddressKey): NewBatch {
  const transfers = Array.from({ length: 1 + randomInt(5) }, () => ({
    toAddress: randomAddress(),
    amount: UNITS_PER_POINT + BigInt(randomInt(1000)),
  }));
  return {
    contract,
    batchId: `t-${randomBytes(6).toString("hex")}`,
    pointType: POINTS,
    transfers,
    total: transfers.reduce((sum, transfer) => sum + transfer.amount, 0n),
    secondsToFinalize: 3600,
    createdAtMs: Date.now(),
  };
}

describe.skipIf(!DATABASE_URL_TEST)(`PostgreSQL backends terminated under load${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`, () => {
  let db: TestSchema;

  beforeAll(async () => {
    db = await createTestSchema(DATABASE_URL_TEST!);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("a store's pool raises no uncaught exception while its connections are terminated under a busy event loop", async () => {
    const applicationName = `${db.schema}_pool`;
    const store: LedgerStore = db.openStore({
      poolSize: POOL_SIZE,
      connectionString: withSearchPath(DATABASE_URL_TEST!, db.schema, applicationName),
    });
    await store.migrate();
    const sender = randomAddress();
    const creditResult = await store.credit({
      address: sender,
      creditId: "pool-credit",
      pointType: POINTS,
      amount: 10n ** 9n * UNITS_PER_POINT,
      createdAtMs: Date.now(),
    });
    expect(creditResult).toEqual({ kind: "credited" });

    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => void uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    const outcomes = { ok: 0, unavailable: 0, other: [] as string[] };
    const accepted: NewBatch[] = [];
    let running = true;
    const worker = async (index: number) => {
      while (running) {
        const batch = newBatch(sender);
        try {
          if (index % 3 === 0) {
            const result = await store.submitBatch(batch);
            if (result.kind === "accepted") accepted.push(batch);
          } else if (index % 3 === 1) {
            await store.getBalances(sender);
          } else {
            await store.verify();
          }
          outcomes.ok += 1;
        } catch (error) {
          if (error instanceof StoreUnavailableError) outcomes.unavailable += 1;
          else outcomes.other.push(String(error));
        }
        spin(SPIN_MIN_MS + randomInt(SPIN_SPREAD_MS));
      }
    };
    const terminator = startTerminator(applicationName, STORE_TERMINATIONS_WANTED, STORE_DEADLINE_MS);
    const workers = Promise.all(Array.from({ length: STORE_WORKERS }, (_, index) => worker(index)));
    let figures;
    try {
      figures = await terminator.done;
    } finally {
      running = false;
      await workers;
      process.removeListener("uncaughtException", onUncaught);
    }
    console.log(`store pool: ${JSON.stringify({ ...figures, ...outcomes, other: outcomes.other.length, uncaught: uncaught.length })}`);
    expect(uncaught.map(String)).toEqual([]);
    expect(outcomes.other).toEqual([]);
    expect(figures.terminated).toBeGreaterThanOrEqual(STORE_TERMINATIONS_WANTED);
    // The pool recovers and hands out no dead client: a burst wider than the pool, twice, meets
    // every pooled connection, and each answer is a success.
    for (let round = 0; round < 2; round++) {
      await Promise.all(Array.from({ length: 2 * POOL_SIZE }, () => store.getBalances(sender)));
      await Promise.all(Array.from({ length: 2 * POOL_SIZE }, () => store.getBatch(sender, "none")));
    }
    // Every accepted batch is there, whole, and the ledger is consistent.
    for (const batch of accepted) expect((await store.getBatch(sender, batch.batchId))?.transfers).toEqual(batch.transfers);
    expect(await store.verify()).toEqual([]);
  });

  it("the server process survives 1,000 terminated backends under mixed load, answering only 200 or 503 with Retry-After", async () => {
    assertBuilt();
    const adminToken = newAdminToken();
    // The schema's connection string names every connection of the server after the schema.
    const server = await startServerProcess({ ...SERVER_ENV, DATABASE_URL: db.connectionString, ADMIN_TOKEN: adminToken });
    try {
      const operator = privateKeyToAccount(generatePrivateKey());
      const contract = randomChecksummed();
      await retrying("the operator to be set", () => setOperator(server.url, adminToken, contract, operator.address));
      await retrying("the credit", () => creditPoints(server.url, adminToken, contract, "terminate-credit", POINTS, CREDIT_POINTS));
      const token = await retrying("the operator to sign in", () => signIn(server.url, contract, operator));
      const recipients = Array.from({ length: RECIPIENTS }, () => randomChecksummed());

      const tally: Tally = { byStatus: {}, unexpected: [] };
      const sent: SentBatch[] = [];
      let running = true;
      const terminator = startTerminator(db.schema, PROCESS_TERMINATIONS_WANTED, PROCESS_DEADLINE_MS);
      // No client waits out Retry-After here: the load must keep coming while backends die.
      const worker = async (index: number) => {
        while (running) {
          const readable = sent.filter((batch) => batch.status === 200);
          let status: number;
          if (index % 2 === 0 || readable.length === 0) {
            const batch = newHttpBatch(recipients);
            sent.push(batch);
            const body = { pointType: POINTS, transfers: batch.transfers, secondsToFinalize: 1 + randomInt(3) };
            batch.status = status = await send(server, tally, "PUT", `/v1/contracts/${contract}/batches/${batch.batchId}`, token, body);
          } else if (index % 4 === 1) {
            const batch = readable[randomInt(readable.length)]!;
            status = await send(server, tally, "GET", `/v1/contracts/${contract}/batches/${batch.batchId}`, token);
          } else {
            status = await send(server, tally, "GET", `/v1/contracts/${contract}/point-balances`, token);
          }
          // No answer at all: the process is gone; stop at once rather than wait out the deadline.
          if (status === 0) terminator.stop();
        }
      };
      const workers = Promise.all(Array.from({ length: HTTP_WORKERS }, (_, index) => worker(index)));
      let figures;
      try {
        figures = await terminator.done;
      } finally {
        running = false;
        await workers;
      }
      const acknowledged = sent.filter((batch) => batch.status === 200);
      console.log(
        `server process: ${JSON.stringify({ ...figures, requests: tally.byStatus, batchesSent: sent.length, acknowledged: acknowledged.length })}`,
      );
      expect(() => process.kill(server.pid, 0), `the server exited:\n${server.output()}`).not.toThrow();
      expect(tally.unexpected.slice(0, 20), server.output()).toEqual([]);
      expect(figures.terminated).toBeGreaterThanOrEqual(PROCESS_TERMINATIONS_WANTED);

      await pollUntil("/readyz to answer 200 after the terminator stopped", READY_DEADLINE_MS, async () => {
        const response = await fetch(`${server.url}/readyz`).catch(() => null);
        await response?.arrayBuffer();
        return response?.status === 200 ? true : undefined;
      });
      // Recovered by itself: new submissions are accepted at the first try.
      const after = Array.from({ length: BATCHES_AFTER_STORM }, () => newHttpBatch(recipients));
      for (const batch of after) {
        const body = { pointType: POINTS, transfers: batch.transfers, secondsToFinalize: 1 };
        batch.status = await send(server, tally, "PUT", `/v1/contracts/${contract}/batches/${batch.batchId}`, token, body);
        acknowledged.push(batch);
        sent.push(batch);
      }
      expect(after.map((batch) => batch.status)).toEqual(after.map(() => 200));
      // Every batch answered 200 is stored with every transfer; one answered 503 is whole or absent.
      const stored = await storedTransfers(db);
      for (const batch of acknowledged) expect(stored.has(batch.batchId), `${batch.batchId} was answered 200`).toBe(true);
      for (const batch of sent.filter((candidate) => stored.has(candidate.batchId))) {
        expect(stored.get(batch.batchId), batch.batchId).toBe(expectedTransfers(batch));
      }
      const verify = await runCli(["verify"], { DATABASE_URL: db.connectionString });
      expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);
      const exit = await server.kill("SIGTERM");
      expect(exit.code, server.output()).toBe(0);
    } finally {
      await server.kill("SIGKILL");
    }
  });
});
