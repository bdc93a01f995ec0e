import { randomBytes, randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { formatPoints, parsePoints, sumUnits } from "../src/domain/points.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  sleep,
  startServerProcess,
  type ApiResponse,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * Three server processes on one PostgreSQL schema (docs/scaling.md): a mixed
 * concurrent load spread over them, duplicate PUTs of one batchId sent to different instances,
 * cancels (some racing finalizeAt) and the three finalizers working at once. Afterwards the data
 * must say that every batch was stored once and finalized at most once, and `verify` passes.
 * The second phase SIGKILLs one instance halfway: the other two keep answering and every due
 * batch still finalizes exactly once. Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const INSTANCES = 3;
/** Small pools (3 × 4 connections): other suites share the database server's max_connections. */
const SERVER_ENV: Env = { MINIMUM_FINALIZE_SECONDS: "1", FINALIZER_INTERVAL_MS: "100", PG_POOL_SIZE: "4", LOG_LEVEL: "warn" };
const POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
type PointType = (typeof POINT_TYPES)[number];
const CREDIT_POINTS = "1000000000";

/** The load of one phase. A small recipient pool makes concurrent finalizations touch the same rows. */
const BATCHES_PER_PHASE = 240;
const CONCURRENT_WORKERS = 9;
const RECIPIENT_POOL_SIZE = 40;
const MAX_TRANSFERS_PER_BATCH = 20;
/** Out of 100: batches PUT twice at once to two instances, and batches a client tries to cancel. */
const DUPLICATE_PERCENT = 25;
const CANCEL_PERCENT = 25;
/** Cancels of 1-second batches are sent up to this late, so some race the finalizers. */
const CANCEL_RACE_WINDOW_MS = 1500;
const MIN_TRANSFER_UNITS = parsePoints("0.01")!;
const TRANSFER_SPREAD_UNITS = 100_000_000_000_000;
/** A request is retried on another instance at most this often (only the killed one drops requests). */
const MAX_ATTEMPTS = INSTANCES;
const SETTLE_DEADLINE_MS = 30_000;

interface Transfer {
  toAddress: string;
  points: string;
}

interface SentBatch {
  batchId: string;
  pointType: PointType;
  secondsToFinalize: number;
  transfers: Transfer[];
  amounts: bigint[];
  totalUnits: bigint;
  /** Logical PUTs answered 200, and answered 409 BATCH_ID_EXISTS with matchesRequest. */
  accepted: number;
  conflicts: number;
  /** Attempts (PUT or DELETE) that got no answer because their instance was killed. */
  unanswered: number;
  cancel: "none" | "cancelled" | "refused";
}

interface Session {
  contract: string;
  token: string;
}

/** The running instances; killed ones are left out of every later pick. */
class Cluster {
  readonly killed = new Set<number>();
  /** Requests per instance: answered, and dropped without an answer. */
  readonly answered: number[] = Array(INSTANCES).fill(0);
  readonly unanswered: number[] = Array(INSTANCES).fill(0);
  /** Answers no client should ever see (5xx, unexpected 4xx), with what was asked. */
  readonly unexpected: string[] = [];

  constructor(readonly servers: ServerProcess[]) {}

  alive(): number[] {
    return this.servers.map((_, index) => index).filter((index) => !this.killed.has(index));
  }

  /** A random live instance, other than `except` when another one is alive. */
  pick(except?: number): number {
    const choices = this.alive().filter((index) => index !== except);
    const pool = choices.length > 0 ? choices : this.alive();
    return pool[randomInt(pool.length)]!;
  }

  url(index: number): string {
    return this.servers[index]!.url;
  }

  /** Marks the instance dead first, so no new request picks it, then SIGKILLs it. */
  async kill(index: number): Promise<void> {
    this.killed.add(index);
    const exit = await this.servers[index]!.kill("SIGKILL");
    expect(exit.signal).toBe("SIGKILL");
  }
}

/**
 * Sends one request to `first`; when the instance gives no answer (it was killed), the same
 * request goes to another live instance, as a load balancer would retry it.
 */
async function send(cluster: Cluster, first: number, method: string, path: string, token: string, body?: unknown) {
  let instance = first;
  let unanswered = 0;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    try {
      const response = await call(cluster.url(instance), method, path, token, body);
      cluster.answered[instance]! += 1;
      return { response, unanswered };
    } catch {
      cluster.unanswered[instance]! += 1;
      unanswered += 1;
      instance = cluster.pick(instance);
    }
  }
  throw new Error(`${method} ${path}: no instance answered in ${MAX_ATTEMPTS} attempts`);
}

function errorOf(response: ApiResponse): { code?: string; details?: { matchesRequest?: boolean } } {
  return (response.body.error ?? {}) as { code?: string; details?: { matchesRequest?: boolean } };
}

/** `count` different items of `items`, in random order (partial Fisher-Yates). */
function pickDistinct<T>(items: readonly T[], count: number): T[] {
  const pool = [...items];
  for (let i = 0; i < count; i++) {
    const j = i + randomInt(pool.length - i);
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

function newBatch(runId: string, index: number, recipients: string[]): SentBatch {
  const count = 1 + randomInt(MAX_TRANSFERS_PER_BATCH);
  const chosen = pickDistinct(recipients, count);
  const amounts = chosen.map(() => MIN_TRANSFER_UNITS + BigInt(randomInt(TRANSFER_SPREAD_UNITS)));
  return {
    batchId: `multi-${runId}-${index}`,
    pointType: POINT_TYPES[randomInt(POINT_TYPES.length)]!,
    secondsToFinalize: 1 + randomInt(3),
    transfers: chosen.map((toAddress, i) => ({ toAddress, points: formatPoints(amounts[i]!) })),
    amounts,
    totalUnits: sumUnits(amounts),
    accepted: 0,
    conflicts: 0,
    unanswered: 0,
    cancel: "none",
  };
}

async function submit(cluster: Cluster, session: Session, batch: SentBatch, instance: number): Promise<void> {
  const body = { pointType: batch.pointType, transfers: batch.transfers, secondsToFinalize: batch.secondsToFinalize };
  const path = `/v1/contracts/${session.contract}/batches/${batch.batchId}`;
  const { response, unanswered } = await send(cluster, instance, "PUT", path, session.token, body);
  batch.unanswered += unanswered;
  const error = errorOf(response);
  if (response.status === 200) batch.accepted += 1;
  else if (response.status === 409 && error.code === "BATCH_ID_EXISTS" && error.details?.matchesRequest === true) batch.conflicts += 1;
  else cluster.unexpected.push(`PUT ${batch.batchId} → ${response.status} ${JSON.stringify(response.body)}`);
}

/** Cancels on one instance; a successful cancel is repeated on another, which must agree. */
async function cancel(cluster: Cluster, session: Session, batch: SentBatch, delayMs: number): Promise<void> {
  await sleep(delayMs);
  const path = `/v1/contracts/${session.contract}/batches/${batch.batchId}`;
  const first = await send(cluster, cluster.pick(), "DELETE", path, session.token);
  batch.unanswered += first.unanswered;
  const status = (first.response.body.batch as { status?: string } | undefined)?.status;
  if (first.response.status === 200 && status === "CANCELLED") {
    batch.cancel = "cancelled";
    const again = await send(cluster, cluster.pick(), "DELETE", path, session.token);
    const againStatus = (again.response.body.batch as { status?: string } | undefined)?.status;
    if (again.response.status !== 200 || againStatus !== "CANCELLED") {
      cluster.unexpected.push(`repeated DELETE ${batch.batchId} → ${again.response.status} ${JSON.stringify(again.response.body)}`);
    }
  } else if (first.response.status === 409 && errorOf(first.response).code === "BATCH_NOT_CANCELLABLE") {
    batch.cancel = "refused";
  } else {
    cluster.unexpected.push(`DELETE ${batch.batchId} → ${first.response.status} ${JSON.stringify(first.response.body)}`);
  }
}

/**
 * The operator is set on one instance and credited on another; the challenge is asked of a
 * third and solved on yet another, and the token must work on every live instance.
 */
async function prepareSession(cluster: Cluster, adminToken: string): Promise<Session> {
  const [a, b, c] = [cluster.pick(), cluster.pick(), cluster.pick()];
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(cluster.url(a), adminToken, contract, operator.address);
  for (const pointType of POINT_TYPES) {
    await creditPoints(cluster.url(b), adminToken, contract, `multi-credit-${pointType}`, pointType, CREDIT_POINTS);
  }
  const challenge = await callOk(cluster.url(c), "POST", "/v1/dapp-auth/challenge", null, {
    contractAddress: contract,
    operatorAddress: operator.address,
  });
  const signature = await operator.signMessage({ message: String(challenge.message) });
  const solver = cluster.pick(c);
  const solved = await callOk(cluster.url(solver), "POST", "/v1/dapp-auth/solve", null, {
    challengeData: challenge.challengeData,
    signature,
  });
  const token = String(solved.bearerToken);
  for (const instance of cluster.alive()) {
    const balances = await call(cluster.url(instance), "GET", `/v1/contracts/${contract}/point-balances`, token);
    expect(balances.status, `token solved on instance ${solver}, used on instance ${instance}`).toBe(200);
  }
  return { contract, token };
}

interface LoadOptions {
  /** Instance SIGKILLed once half the batches are acknowledged. */
  victim?: number;
}

/** Keeps CONCURRENT_WORKERS logical submits in flight over the live instances, cancels on the side. */
async function runLoad(cluster: Cluster, session: Session, options: LoadOptions): Promise<SentBatch[]> {
  const runId = randomBytes(4).toString("hex");
  const recipients = Array.from({ length: RECIPIENT_POOL_SIZE }, () => randomAddress());
  const sent: SentBatch[] = [];
  const cancels: Promise<void>[] = [];
  let kill: Promise<void> | null = null;
  const worker = async () => {
    while (sent.length < BATCHES_PER_PHASE) {
      const batch = newBatch(runId, sent.length, recipients);
      sent.push(batch);
      const instance = cluster.pick();
      if (randomInt(100) < DUPLICATE_PERCENT) {
        await Promise.all([submit(cluster, session, batch, instance), submit(cluster, session, batch, cluster.pick(instance))]);
      } else {
        await submit(cluster, session, batch, instance);
      }
      if (batch.accepted + batch.conflicts > 0 && randomInt(100) < CANCEL_PERCENT) {
        const delayMs = batch.secondsToFinalize === 1 ? randomInt(CANCEL_RACE_WINDOW_MS) : 0;
        cancels.push(cancel(cluster, session, batch, delayMs));
      }
      const acknowledged = sent.filter((candidate) => candidate.accepted + candidate.conflicts > 0).length;
      if (options.victim !== undefined && kill === null && acknowledged >= BATCHES_PER_PHASE / 2) {
        kill = cluster.kill(options.victim);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT_WORKERS }, worker));
  await Promise.all(cancels);
  await kill;
  return sent;
}

/** Polls until no batch of the contract is open; on timeout names the stuck batches and the instances' logs. */
async function waitUntilSettled(schema: TestSchema, cluster: Cluster, contract: string): Promise<void> {
  const openBatches = () =>
    schema.query<{ batch_id: string; status: string; finalize_at_ms: string }>(
      "SELECT batch_id, status, finalize_at_ms::text FROM batches WHERE contract = $1 AND status IN ('PENDING', 'FINALIZING')",
      [contract.toLowerCase()],
    );
  try {
    await pollUntil("every batch of the contract to leave PENDING/FINALIZING", SETTLE_DEADLINE_MS, async () =>
      (await openBatches()).length === 0 ? true : undefined,
    );
  } catch (error) {
    const stuck = JSON.stringify((await openBatches()).slice(0, 5));
    const logs = cluster.servers.map((server, index) => `instance ${index}: ${server.output().slice(-2000)}`).join("\n");
    throw new Error(`${(error as Error).message}; still open: ${stuck}\n${logs}`);
  }
}

/** Each batchId stored exactly once, with the total the client sent and the status its cancel implies. */
async function expectBatchesStoredOnce(schema: TestSchema, session: Session, sent: SentBatch[]): Promise<void> {
  const rows = await schema.query<{ batch_id: string; status: string; total: string; transfer_count: number }>(
    "SELECT batch_id, status, total_units::text AS total, transfer_count FROM batches WHERE contract = $1",
    [session.contract.toLowerCase()],
  );
  expect(rows.map((row) => row.batch_id).sort()).toEqual(sent.map((batch) => batch.batchId).sort());
  const stored = new Map(rows.map((row) => [row.batch_id, row]));
  for (const batch of sent) {
    const row = stored.get(batch.batchId)!;
    const expectedStatus = batch.cancel === "cancelled" ? "CANCELLED" : "FINALIZED";
    expect({ status: row.status, total: row.total, count: row.transfer_count }, batch.batchId).toEqual({
      status: expectedStatus,
      total: batch.totalUnits.toString(),
      count: batch.transfers.length,
    });
    // Two concurrent PUTs of one batchId: one 200 at most, and exactly one unless an answer was lost.
    expect(batch.accepted, batch.batchId).toBeLessThanOrEqual(1);
    if (batch.unanswered === 0) expect(batch.accepted, batch.batchId).toBe(1);
  }
}

/** What each recipient must have received: the client's own amounts of the batches that finalized. */
function expectedReceipts(sent: SentBatch[]): Map<string, bigint> {
  const receipts = new Map<string, bigint>();
  for (const batch of sent.filter((candidate) => candidate.cancel !== "cancelled")) {
    batch.transfers.forEach((transfer, i) => {
      const key = `${transfer.toAddress.toLowerCase()} ${batch.pointType}`;
      receipts.set(key, (receipts.get(key) ?? 0n) + batch.amounts[i]!);
    });
  }
  return receipts;
}

/**
 * A batch finalized twice would count its transfers twice in receivedCumulative: compare every
 * recipient's account with the client's model and with SQL over the FINALIZED batches' transfers.
 */
async function expectFinalizedOnce(schema: TestSchema, session: Session, sent: SentBatch[]): Promise<void> {
  const recipients = [...new Set(sent.flatMap((batch) => batch.transfers.map((transfer) => transfer.toAddress.toLowerCase())))];
  const accounts = await schema.query<{ key: string; received: string; transferred: string }>(
    `SELECT a.address || ' ' || a.point_type AS key, a.received_units::text AS received,
            (SELECT coalesce(sum(t.amount_units), 0) FROM transfers t JOIN batches b ON b.seq = t.seq
             WHERE b.status = 'FINALIZED' AND b.point_type = a.point_type AND t.to_address = a.address)::text AS transferred
     FROM accounts a WHERE a.address = ANY($1)`,
    [recipients],
  );
  const stored = new Map(accounts.map((row) => [row.key, row]));
  const expected = expectedReceipts(sent);
  expect([...stored.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, units] of expected) {
    expect({ received: stored.get(key)!.received, transferred: stored.get(key)!.transferred }, key).toEqual({
      received: units.toString(),
      transferred: units.toString(),
    });
  }
  const contractRows = await schema.query<{ point_type: PointType; finalized: string; pending: string }>(
    "SELECT point_type, finalized_sent_units::text AS finalized, pending_units::text AS pending FROM accounts WHERE address = $1",
    [session.contract.toLowerCase()],
  );
  for (const row of contractRows) {
    const finalized = sent.filter((batch) => batch.pointType === row.point_type && batch.cancel !== "cancelled");
    expect({ finalized: row.finalized, pending: row.pending }, row.point_type).toEqual({
      finalized: sumUnits(finalized.map((batch) => batch.totalUnits)).toString(),
      pending: "0",
    });
  }
  // Conservation over the whole schema: everything received came from a FINALIZED batch, once.
  const [totals] = await schema.query<{ received: string; finalized: string }>(
    `SELECT (SELECT coalesce(sum(received_units), 0) FROM accounts)::text AS received,
            (SELECT coalesce(sum(total_units), 0) FROM batches WHERE status = 'FINALIZED')::text AS finalized`,
  );
  expect(totals!.received).toBe(totals!.finalized);
}

async function expectVerifyPasses(databaseUrl: string): Promise<void> {
  const result = await runCli(["verify"], { DATABASE_URL: databaseUrl });
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
  expect(result.stdout).toContain("all invariants hold");
}

/** A counter of one instance's /metrics (a single sample without labels). */
async function counterOf(server: ServerProcess, name: string): Promise<number> {
  const response = await fetch(`${server.url}/metrics`);
  const text = await response.text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
  expect(line, `${name} in /metrics`).toBeDefined();
  return Number(line!.slice(name.length + 1));
}

function summary(cluster: Cluster, sent: SentBatch[]) {
  return {
    batches: sent.length,
    duplicates: sent.filter((batch) => batch.accepted + batch.conflicts > 1).length,
    cancelled: sent.filter((batch) => batch.cancel === "cancelled").length,
    cancelRefused: sent.filter((batch) => batch.cancel === "refused").length,
    answeredPerInstance: cluster.answered,
    unansweredPerInstance: cluster.unanswered,
  };
}

/** INSTANCES processes started at once on a fresh schema: their migrations run concurrently. */
async function startCluster(schema: TestSchema, env: Env): Promise<Cluster> {
  const fullEnv: Env = { ...SERVER_ENV, ...env, DATABASE_URL: schema.connectionString };
  return new Cluster(await Promise.all(Array.from({ length: INSTANCES }, () => startServerProcess(fullEnv))));
}

describe.skipIf(!DATABASE_URL_TEST)(
  `${INSTANCES} server processes on one PostgreSQL database${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    let cluster: Cluster;
    const adminToken = newAdminToken();

    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
      // All three migrate the fresh schema at the same moment: the advisory lock must serialize them.
      cluster = await startCluster(schema, { ADMIN_TOKEN: adminToken });
    });
    afterAll(async () => {
      await Promise.all((cluster?.servers ?? []).map((server) => server.kill("SIGKILL")));
      await schema?.drop();
    });

    it("a mixed load over all three stores each batch once and finalizes each due batch exactly once", async () => {
      const session = await prepareSession(cluster, adminToken);
      const sent = await runLoad(cluster, session, {});
      console.log(`multi-instance load: ${JSON.stringify(summary(cluster, sent))}`);
      expect(cluster.unexpected).toEqual([]);
      expect(cluster.unanswered).toEqual(Array(INSTANCES).fill(0));
      expect(sent.filter((batch) => batch.accepted + batch.conflicts > 1).length, "duplicate PUTs sent").toBeGreaterThan(0);
      expect(sent.filter((batch) => batch.cancel === "cancelled").length, "batches cancelled").toBeGreaterThan(0);

      await waitUntilSettled(schema, cluster, session.contract);
      await expectBatchesStoredOnce(schema, session, sent);
      await expectFinalizedOnce(schema, session, sent);
      // Each finalization counted by the process that made it: the three counts add up to the FINALIZED rows.
      const finalizedBy = await Promise.all(cluster.servers.map((server) => counterOf(server, "points_batches_finalized_total")));
      const [row] = await schema.query<{ finalized: number }>("SELECT count(*)::int AS finalized FROM batches WHERE status = 'FINALIZED'");
      console.log(`batches finalized per instance: ${JSON.stringify(finalizedBy)}`);
      expect(finalizedBy.reduce((sum, count) => sum + count, 0)).toBe(row!.finalized);
      await expectVerifyPasses(schema.connectionString);
    });

    it("with one instance SIGKILLed halfway, the other two keep answering and every due batch finalizes exactly once", async () => {
      const victim = randomInt(INSTANCES);
      cluster.answered.fill(0);
      cluster.unanswered.fill(0);
      const session = await prepareSession(cluster, adminToken);
      const sent = await runLoad(cluster, session, { victim });
      console.log(`multi-instance load, instance ${victim} killed: ${JSON.stringify(summary(cluster, sent))}`);
      expect(cluster.killed.has(victim)).toBe(true);
      expect(cluster.unexpected).toEqual([]);
      const survivors = cluster.alive();
      expect(survivors).toHaveLength(INSTANCES - 1);
      for (const instance of survivors) {
        expect(cluster.unanswered[instance], `requests dropped by surviving instance ${instance}`).toBe(0);
        expect(cluster.answered[instance], `requests answered by surviving instance ${instance}`).toBeGreaterThan(0);
      }

      await waitUntilSettled(schema, cluster, session.contract);
      await expectBatchesStoredOnce(schema, session, sent);
      await expectFinalizedOnce(schema, session, sent);
      await expectVerifyPasses(schema.connectionString);
      for (const instance of survivors) {
        const exit = await cluster.servers[instance]!.kill("SIGTERM");
        expect(exit.code, cluster.servers[instance]!.output()).toBe(0);
      }
    });
  },
);

/** Requests a token may make per minute on each instance in the rate-limit check. */
const RATE_LIMIT_PER_MINUTE = 5;

/**
 * @fastify/rate-limit counts in each process's memory, so the per-token limit across N instances
 * is N × RATE_LIMIT_PER_MINUTE (docs/scaling.md): each instance allows exactly its own share.
 */
describe.skipIf(!DATABASE_URL_TEST)(
  `rate limit per token across ${INSTANCES} instances${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    let cluster: Cluster;
    const adminToken = newAdminToken();

    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
      cluster = await startCluster(schema, { ADMIN_TOKEN: adminToken, RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE) });
    });
    afterAll(async () => {
      await Promise.all((cluster?.servers ?? []).map((server) => server.kill("SIGKILL")));
      await schema?.drop();
    });

    it(`allows RATE_LIMIT_PER_MINUTE per instance, so at most ${INSTANCES} × the limit in all`, async () => {
      const session = await prepareSession(cluster, adminToken);
      const statuses: number[][] = [];
      for (const server of cluster.servers) {
        const answers: number[] = [];
        for (let i = 0; i <= RATE_LIMIT_PER_MINUTE; i++) {
          const response = await fetch(`${server.url}/v1/contracts/${session.contract}/batches`, {
            headers: { authorization: `Bearer ${session.token}` },
          });
          const body = (await response.json()) as { error?: { code?: string } };
          answers.push(response.status);
          if (response.status === 429) {
            expect(body.error?.code).toBe("RATE_LIMITED");
            expect(response.headers.get("retry-after")).toMatch(/^[0-9]+$/);
          }
        }
        statuses.push(answers);
      }
      // The budget is per contract across all its routes: prepareSession's balance read on each
      // instance took one request of it.
      const perInstance = [...Array(RATE_LIMIT_PER_MINUTE - 1).fill(200), 429, 429];
      expect(statuses).toEqual(cluster.servers.map(() => perInstance));
    });
  },
);
