import { randomInt } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
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
  type Env,
  type ServerProcess,
} from "./helpers/process.js";
import { auditTransparencyLog, type AuditedEvent } from "./helpers/tlog-audit.js";

/**
 * The transparency log across SIGKILL on PostgreSQL, two instances logging at once (issue 32): two
 * built servers on one schema, both running the logging job (one logs at a time, an advisory
 * lock), take credits and batches (whose finalizations are events of either instance's finalizer)
 * from concurrent clients. In each round one of them, in turn, is SIGKILLed in the middle of the
 * load and restarted while the other goes on; at the end both are killed at once, the log behind,
 * and restarted. Every checkpoint either serves during the run is kept, and the independent
 * verifier (helpers/tlog-audit.ts, shared with the SQLite suite tlog-crash.test.ts) finds every
 * event logged once in the events API's order, every checkpoint signed by the key pinned at the
 * start and rooted in those events, each event's inclusion and every pair of checkpoints
 * consistent. Skipped without DATABASE_URL_TEST.
 */

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const INSTANCES = 2;
const ROUNDS = 4;
/** Requests per round at least (more while the killed instance restarts, up to MAX_OPS_PER_ROUND), sent by WORKERS concurrent clients to random live instances. */
const OPS_PER_ROUND = 40;
const MAX_OPS_PER_ROUND = 300;
const WORKERS = 4;
const REQUEST_GAP_MS = 50;
/** Out of 100: requests that submit a batch (an accepted and a finalized event); the rest are credits. */
const BATCH_PERCENT = 30;
const RECIPIENTS = 10;
const MAX_TRANSFERS = 3;
/** Each instance's checkpoint is read this often while the load runs, and at most MAX_CHECKPOINT_READS times. */
const CHECKPOINT_POLL_MS = 100;
const MAX_CHECKPOINT_READS = 3000;
const SETTLE_DEADLINE_MS = 30_000;
/**
 * Small pools (other suites share max_connections); checkpoints every 0.25 s so a run sees many;
 * public reads unlimited, since every checkpoint and proof is read from one client address.
 * No LOG_SIGNING_KEY: the two first starts race to store the key, and must agree on one.
 */
const SERVER_ENV: Env = {
  PG_POOL_SIZE: "4",
  LOG_CHECKPOINT_SECONDS: "0.25",
  MINIMUM_FINALIZE_SECONDS: "1",
  FINALIZER_INTERVAL_MS: "100",
  PUBLIC_READ_RATE_LIMIT_PER_MINUTE: "100000000",
};

/** The instances on the schema; a killed one is null until it is restarted. */
class Pair {
  readonly servers: (ServerProcess | null)[] = Array<ServerProcess | null>(INSTANCES).fill(null);
  pinnedKey = "";

  constructor(private readonly env: Env) {}

  alive(): number[] {
    return this.servers.flatMap((server, index) => (server === null ? [] : [index]));
  }

  pick(): string {
    const alive = this.alive();
    expect(alive.length, "an instance alive").toBeGreaterThan(0);
    return this.servers[alive[randomInt(alive.length)]!]!.url;
  }

  /** Starts instance `index`; it must serve the key pinned at the start (the first start pins it). */
  async start(index: number): Promise<void> {
    const server = await startServerProcess(this.env);
    const key = (await (await fetch(`${server.url}/v1/log/key`)).text()).trim();
    this.pinnedKey ||= key;
    expect(key, `the verifier key of instance ${index}`).toBe(this.pinnedKey);
    this.servers[index] = server;
  }

  /** Out of every pick first, then SIGKILLed. */
  async kill(index: number): Promise<void> {
    const server = this.servers[index]!;
    this.servers[index] = null;
    expect((await server.kill("SIGKILL")).signal).toBe("SIGKILL");
  }
}

interface Load {
  contract: string;
  token: string;
  recipients: string[];
  adminToken: string;
  /** Requests sent so far (ids are numbered by it), and those answered 200. */
  sent: number;
  credits: string[];
  batches: string[];
  /** Requests whose instance was killed before it answered (they may or may not have committed). */
  unanswered: number;
  /** Answers other than 200. */
  unexpected: string[];
}

async function sendOne(pair: Pair, load: Load): Promise<void> {
  const n = load.sent++;
  const url = pair.pick();
  const isBatch = randomInt(100) < BATCH_PERCENT;
  const id = `${isBatch ? "b" : "c"}-${n}`;
  // 1 to MAX_TRANSFERS distinct recipients: consecutive ones of the pool from a random start.
  const start = randomInt(RECIPIENTS);
  const recipients = Array.from({ length: 1 + randomInt(MAX_TRANSFERS) }, (_, i) => load.recipients[(start + i) % RECIPIENTS]!);
  const [path, token, body] = isBatch
    ? [
        `/v1/contracts/${load.contract}/batches/${id}`,
        load.token,
        { pointType: "PHASE2_POINTS", transfers: recipients.map((toAddress) => ({ toAddress, points: "1" })), secondsToFinalize: 1 },
      ]
    : [`/v1/admin/contracts/${recipients[0]}/credits/${id}`, load.adminToken, { pointType: "PHASE2_POINTS", points: "1" }];
  try {
    const answer = await call(url, "PUT", path, token, body);
    if (answer.status === 200) (isBatch ? load.batches : load.credits).push(id);
    else load.unexpected.push(`PUT ${path} → ${answer.status} ${JSON.stringify(answer.body)}`);
  } catch {
    load.unanswered += 1;
  }
}

/** Reads every live instance's checkpoint until `done()`, keeping each note in the order first seen. */
async function watchCheckpoints(pair: Pair, notes: Set<string>, done: () => boolean): Promise<void> {
  for (let read = 0; read < MAX_CHECKPOINT_READS && !done(); read++) {
    for (const server of pair.servers) {
      if (server === null) continue;
      try {
        const response = await fetch(`${server.url}/v1/log/checkpoint`);
        const note = await response.text();
        if (response.status === 200) notes.add(note);
      } catch {
        // Killed while asked: its next checkpoints are read once it is back.
      }
    }
    await sleep(CHECKPOINT_POLL_MS);
  }
}

/**
 * One round: WORKERS clients send requests, each REQUEST_GAP_MS after its last answer; `victim` is
 * SIGKILLed at a random moment of the first OPS_PER_ROUND / 2 and restarted at once, and the load
 * goes on (to the other instance) until it is back and OPS_PER_ROUND are sent, or MAX_OPS_PER_ROUND.
 */
async function runRound(pair: Pair, load: Load, victim: number): Promise<void> {
  const start = load.sent;
  const killAt = start + randomInt(OPS_PER_ROUND / 2);
  let restart: Promise<void> | null = null;
  let restarted = false;
  const more = () => load.sent < start + MAX_OPS_PER_ROUND && (load.sent < start + OPS_PER_ROUND || !restarted);
  const worker = async () => {
    while (more()) {
      if (restart === null && load.sent >= killAt) {
        restart = pair
          .kill(victim)
          .then(() => pair.start(victim))
          .finally(() => (restarted = true));
      }
      await sendOne(pair, load);
      await sleep(REQUEST_GAP_MS);
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  await restart;
}

async function prepareLoad(pair: Pair, adminToken: string): Promise<Load> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(pair.servers[0]!.url, adminToken, contract, operator.address);
  await creditPoints(pair.servers[1]!.url, adminToken, contract, "funding", "PHASE2_POINTS", "1000000");
  const token = await signIn(pair.servers[0]!.url, contract, operator);
  const recipients = Array.from({ length: RECIPIENTS }, () => randomAddress());
  return { contract, token, recipients, adminToken, sent: 0, credits: [], batches: [], unanswered: 0, unexpected: [] };
}

async function waitUntilSettled(schema: TestSchema): Promise<void> {
  await pollUntil("every batch to leave PENDING/FINALIZING", SETTLE_DEADLINE_MS, async () => {
    const [row] = await schema.query<{ open: number }>(
      "SELECT count(*)::int AS open FROM batches WHERE status IN ('PENDING', 'FINALIZING')",
    );
    return row!.open === 0 ? true : undefined;
  });
}

/** How many events of `type` name each id (`idOf` of their data). */
function countBy(events: AuditedEvent[], type: string, idOf: (data: Record<string, unknown>) => unknown): Map<string, number> {
  const counts = new Map<string, number>();
  for (const event of events.filter((candidate) => candidate.type === type)) {
    const id = String(idOf(event.data));
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Every acknowledged request's events are there (and logged, the audit says), none twice. */
function expectAcknowledgedLoggedOnce(load: Load, events: AuditedEvent[]): void {
  const credits = countBy(events, "credit.created", (data) => data.creditId);
  const accepted = countBy(events, "batch.accepted", (data) => (data.batch as { id: string }).id);
  const finalized = countBy(events, "batch.finalized", (data) => (data.batch as { id: string }).id);
  for (const counts of [credits, accepted, finalized]) expect([...counts.values()].filter((count) => count !== 1)).toEqual([]);
  for (const id of load.credits) expect(credits.has(id), `credit ${id}`).toBe(true);
  for (const id of load.batches) expect(accepted.has(id) && finalized.has(id), `batch ${id} accepted and finalized`).toBe(true);
  // Only a request whose instance died unanswered may have committed unseen by the client.
  expect(credits.size + accepted.size).toBeLessThanOrEqual(1 + load.credits.length + load.batches.length + load.unanswered);
  expect([...accepted.keys()].sort()).toEqual([...finalized.keys()].sort());
}

describe.skipIf(!DATABASE_URL_TEST)(
  `the transparency log across SIGKILL, ${INSTANCES} PostgreSQL instances${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let schema: TestSchema;
    let pair: Pair | null = null;
    beforeAll(async () => {
      assertBuilt();
      schema = await createTestSchema(DATABASE_URL_TEST!);
    });
    afterAll(async () => {
      await Promise.all((pair?.servers ?? []).map((server) => server?.kill("SIGKILL")));
      await schema?.drop();
    });

    it("loses and doubles nothing: every event once, in order, every checkpoint of either instance consistent with every other", async () => {
      const adminToken = newAdminToken();
      pair = new Pair({ ...SERVER_ENV, DATABASE_URL: schema.connectionString, ADMIN_TOKEN: adminToken });
      const current = pair;
      // Both first starts at once: they migrate the fresh schema and store the signing key concurrently.
      await Promise.all([current.start(0), current.start(1)]);
      const load = await prepareLoad(current, adminToken);
      const notes = new Set<string>();
      let loadDone = false;
      const watching = watchCheckpoints(current, notes, () => loadDone);
      const first = randomInt(INSTANCES);
      for (let round = 0; round < ROUNDS; round++) await runRound(current, load, (first + round) % INSTANCES);
      // Both killed at once, the last requests' events not yet in a checkpoint; then both back.
      await Promise.all([current.kill(0), current.kill(1)]);
      loadDone = true;
      await watching;
      await Promise.all([current.start(0), current.start(1)]);
      await waitUntilSettled(schema);

      const audit = await auditTransparencyLog(current.pick(), adminToken, current.pinnedKey, notes);
      console.log(
        `tlog crash (PostgreSQL): ${JSON.stringify({
          events: audit.events.length,
          checkpoints: audit.checkpoints,
          consistencyPairs: audit.pairs,
          credits: load.credits.length,
          batches: load.batches.length,
          unanswered: load.unanswered,
        })}`,
      );
      expect(load.unexpected).toEqual([]);
      expectAcknowledgedLoggedOnce(load, audit.events);
      expect(audit.checkpoints, "checkpoints seen during the run").toBeGreaterThan(ROUNDS);
    }, 240_000);
  },
);
