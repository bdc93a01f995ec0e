import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createDatabase, findStackTools, queryStack, startStack, type Stack, type StackTools } from "../bench/failover-stack.js";
import { witnessLog } from "../src/client/witness.js";
import { DEPLOY_DIR } from "./helpers/deploy.js";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  listAllBatches,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sleep,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

/**
 * The failover of deploy/patroni/ as shipped, on this machine (issue 38): one etcd, three Patroni
 * nodes running PostgreSQL 15 (synchronous_mode_strict, ttl 20, loop_wait 5, retry_timeout 5) and
 * HAProxy in front (bench/failover-stack.ts); the service's DATABASE_URL is HAProxy's write port.
 * Under four concurrent batch writers and one writing credits and API keys, the leader's Patroni
 * and PostgreSQL are killed with SIGKILL: no answer is a 500, writes succeed again by themselves,
 * every batch, credit and API key answered 200 is on the new primary, `verify` holds, and the
 * background work resumes there: the projection's `through` and the transparency log's checkpoint
 * move past the kill, a witness that saved a checkpoint before the kill proves the new primary's
 * tree extends it, and a real webhook receiver gets every event of the pull API at least once.
 * Prints where the time went. Skipped, with how to run it, where patroni, etcd or haproxy is not
 * installed or the test cannot run PostgreSQL as `postgres`. `npm run bench:failover` kills three
 * leaders in a row under load and measures each failover (bench/failover.ts).
 */

const tools = findStackTools();
const SKIP_REASON = Array.isArray(tools)
  ? `patroni-failover skipped: ${tools.join(", ")} not installed (apt-get install -y patroni etcd-server haproxy postgresql-15)`
  : process.getuid?.() !== 0
    ? "patroni-failover skipped: it runs PostgreSQL as the postgres user through runuser, which needs root"
    : null;
if (SKIP_REASON) console.warn(SKIP_REASON);

const DATABASE = "points_ledger";
const WRITERS = 4;
const POINT_TYPE = "PHASE2_POINTS";
const WRITES_BEFORE_KILL = 20;
const WRITES_AFTER_FAILOVER = 20;
const STACK_READY_MS = 180_000;
/** Fresh stacks tried before the set-up fails (startHealthyStack). */
const SET_UP_ATTEMPTS = 2;
/** Bound on each wait for the background work after the failover (the finalizer, projection, log, webhooks). */
const RESUME_DEADLINE_MS = 60_000;
const TEST_TIMEOUT_MS = 400_000;

interface Outcome {
  acknowledged: string[];
  unexpected: string[];
  statuses: Record<string, number>;
}

/** One PUT or POST; 200 is acknowledged, 503 with Retry-After waits, anything else is unexpected. */
async function send(outcome: Outcome, id: string, url: string, method: string, token: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  }).catch(() => null);
  const text = (await response?.text()) ?? "no answer";
  const status = response?.status ?? 0;
  outcome.statuses[status] = (outcome.statuses[status] ?? 0) + 1;
  if (status === 200) {
    outcome.acknowledged.push(id);
    return JSON.parse(text) as unknown;
  }
  if (status === 503 && /^[0-9]+$/.test(response!.headers.get("retry-after") ?? "")) await sleep(100);
  else outcome.unexpected.push(`${method} ${id}: ${status} ${text.slice(0, 200)}`);
  return null;
}

const newOutcome = (): Outcome => ({ acknowledged: [], unexpected: [], statuses: {} });

async function checkpointSize(url: string): Promise<number | undefined> {
  const response = await fetch(`${url}/v1/log/checkpoint`).catch(() => null);
  const text = (await response?.text()) ?? "";
  return response?.status === 200 ? Number(text.split("\n")[1]) : undefined;
}

async function throughMs(url: string, token: string, contract: string): Promise<number | undefined> {
  const answer = await call(url, "GET", `/v1/contracts/${contract}/leaderboard?pointType=${POINT_TYPE}&limit=1`, token).catch(() => null);
  return answer?.status === 200 ? Date.parse(answer.body.through as string) : undefined;
}

/** Every event of the contract's stream through the pull API (id and time). */
async function allEvents(url: string, token: string, contract: string): Promise<{ id: string; occurredAt: string }[]> {
  const events: { id: string; occurredAt: string }[] = [];
  let after: string | null = null;
  for (;;) {
    const query = `limit=1000${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
    const page = await callOk(url, "GET", `/v1/contracts/${contract}/events?${query}`, token);
    events.push(...(page.events as { id: string; occurredAt: string }[]));
    after = page.cursor as string;
    if (page.hasMore !== true) return events;
  }
}

/**
 * The stack, a leader and two streaming standbys: a fresh one when the first is not within
 * STACK_READY_MS. The set-up is not what this file tests, and on a loaded CI machine one of
 * several set-ups (~16 s when alone) found no leader after 180 s with every node waiting on the
 * bootstrap; what the failed one saw is printed, and a second failure fails the suite.
 */
async function startHealthyStack(found: StackTools): Promise<Stack> {
  for (let attempt = 1; ; attempt++) {
    const candidate = await startStack(found, DEPLOY_DIR);
    try {
      await candidate.waitHealthy(STACK_READY_MS);
      return candidate;
    } catch (error) {
      await candidate.stop();
      if (attempt === SET_UP_ATTEMPTS) throw error;
      console.warn(`patroni set-up, attempt ${attempt} of ${SET_UP_ATTEMPTS}: ${(error as Error).message}`);
    }
  }
}

describe.skipIf(SKIP_REASON !== null)("Patroni failover behind HAProxy (deploy/patroni/)", () => {
  let stack: Stack | undefined;
  let server: ServerProcess | undefined;
  let receiver: Receiver | undefined;

  beforeAll(
    async () => {
      assertBuilt();
      if (Array.isArray(tools)) return;
      stack = await startHealthyStack(tools);
      await createDatabase(stack, DATABASE, STACK_READY_MS);
      const migrate = await runCli(["migrate"], { DATABASE_URL: stack.url(DATABASE) }, STACK_READY_MS);
      expect(migrate.code, migrate.stderr).toBe(0);
    },
    (SET_UP_ATTEMPTS + 1) * STACK_READY_MS,
  );

  afterAll(async () => {
    await server?.kill("SIGKILL");
    await receiver?.close();
    await stack?.stop();
  });

  it(
    "SIGKILL of the leader under load: no 500, nothing acknowledged lost, the projection, the log (a witness's proof) and webhooks resume",
    async () => {
      const adminToken = newAdminToken();
      const databaseUrl = stack!.url(DATABASE);
      receiver = await startReceiver();
      server = await startServerProcess({
        DATABASE_URL: databaseUrl,
        ADMIN_TOKEN: adminToken,
        PG_POOL_SIZE: "4",
        MINIMUM_FINALIZE_SECONDS: "1",
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,2,2,5,5,10",
      });
      const url = server.url;
      const operator = privateKeyToAccount(generatePrivateKey());
      const contract = randomAddress();
      await setOperator(url, adminToken, contract, operator.address);
      const token = await signIn(url, contract, operator);
      const hook = await callOk(url, "POST", `/v1/contracts/${contract}/webhook-endpoints`, token, { url: receiver.url });
      const hookCreatedMs = Date.parse((hook.endpoint as { createdAt: string }).createdAt);
      await creditPoints(url, adminToken, contract, "failover-credit", POINT_TYPE, "1000000000");

      const batches = newOutcome();
      const credits = newOutcome();
      const apiKeys = newOutcome();
      let killedAtMs: number | null = null;
      let firstOkAfterKillMs: number | null = null;
      let okAfterKill = 0;
      let stopped = false;
      const failed = () => batches.unexpected.length + credits.unexpected.length + apiKeys.unexpected.length > 0;
      const batchWriter = async () => {
        while (!stopped && !failed()) {
          const batchId = `failover-${randomBytes(6).toString("hex")}`;
          // Only a write sent after the kill shows the service writing again (one in flight may be answered after it).
          const sentAfterKillMs = killedAtMs;
          const answer = await send(batches, batchId, `${url}/v1/contracts/${contract}/batches/${batchId}`, "PUT", token, {
            pointType: POINT_TYPE,
            transfers: [{ toAddress: randomAddress(), points: "1.5" }],
            secondsToFinalize: 1,
          });
          if (answer !== null && sentAfterKillMs !== null) {
            okAfterKill += 1;
            firstOkAfterKillMs ??= Date.now() - sentAfterKillMs;
          }
        }
      };
      // Credits and API keys, the other writes that must outlive the primary (a few keys: they are few in life too).
      const sideWriter = async () => {
        for (let n = 0; !stopped && !failed(); n++) {
          const creditId = `failover-credit-${n}`;
          await send(credits, creditId, `${url}/v1/admin/contracts/${contract}/credits/${creditId}`, "PUT", adminToken, {
            pointType: POINT_TYPE,
            points: "2",
          });
          if (n % 10 !== 0 || apiKeys.acknowledged.length >= 8) continue;
          const created = (await send(apiKeys, `key-${n}`, `${url}/v1/contracts/${contract}/api-keys`, "POST", token, {
            name: `failover ${n}`,
            scopes: ["read"],
          })) as { apiKey: { id: string } } | null;
          if (created !== null) apiKeys.acknowledged.splice(-1, 1, created.apiKey.id);
        }
      };
      const writers = Promise.all([...Array.from({ length: WRITERS }, batchWriter), sideWriter()]);
      await pollUntil("writes before the kill", STACK_READY_MS, async () =>
        batches.acknowledged.length >= WRITES_BEFORE_KILL || failed() ? true : undefined,
      );

      // A witness saves a checkpoint of the old primary's log.
      const witnessState = join(tempDir("pl-witness-"), "witness.json");
      const witnessLines: string[] = [];
      const witnessOut = {
        name: "witness",
        log: (line: string) => witnessLines.push(line),
        error: (line: string) => witnessLines.push(line),
      };
      expect(await witnessLog(url, witnessState, witnessOut), witnessLines.join("\n")).toBe(0);
      const sizeBeforeKill = (await checkpointSize(url))!;

      const leaderName = (await stack!.members())!.find((member) => member.role === "leader")!.name;
      const leader = stack!.nodes.find((node) => node.name === leaderName)!;
      killedAtMs = stack!.kill(leader);

      const promotedAfterMs = await pollUntil("a new leader", STACK_READY_MS, async () => {
        const members = await stack!.members();
        const newLeader = members?.find((member) => member.role === "leader" && member.name !== leaderName && member.state === "running");
        return newLeader ? Date.now() - killedAtMs! : undefined;
      });
      await pollUntil("writes after the failover", STACK_READY_MS, async () =>
        okAfterKill >= WRITES_AFTER_FAILOVER || failed() ? true : undefined,
      );
      // The projection and the log move past the kill on the new primary (ms after the first 200, read concurrently).
      const firstOkAtMs = killedAtMs + firstOkAfterKillMs!;
      const [throughPastKillMs, checkpointGrewMs] = await Promise.all([
        pollUntil("the projection's through past the kill", RESUME_DEADLINE_MS, async () =>
          ((await throughMs(url, token, contract)) ?? 0) > killedAtMs! ? Date.now() - firstOkAtMs : undefined,
        ),
        pollUntil("a checkpoint larger than before the kill", RESUME_DEADLINE_MS, async () =>
          ((await checkpointSize(url)) ?? 0) > sizeBeforeKill ? Date.now() - firstOkAtMs : undefined,
        ),
      ]);
      stopped = true;
      await writers;
      console.log(
        `patroni failover: ${JSON.stringify({ leader: leaderName, promotedAfterMs, firstOkAfterKillMs, throughPastKillMs, checkpointGrewMs, batches: batches.statuses, credits: credits.statuses, apiKeys: apiKeys.statuses, acknowledged: batches.acknowledged.length })}`,
      );
      expect([...batches.unexpected, ...credits.unexpected, ...apiKeys.unexpected]).toEqual([]);

      // The witness proves the new primary's tree extends the checkpoint it saved before the kill.
      witnessLines.length = 0;
      expect(await witnessLog(url, witnessState, witnessOut), witnessLines.join("\n")).toBe(0);
      expect(witnessLines.join("\n")).toMatch(/extends the saved checkpoint of [0-9]+ events/);

      // Every acknowledged write is on the new primary; every batch finalizes there, once (verify).
      const stored = await pollUntil("every stored batch FINALIZED", RESUME_DEADLINE_MS, async () => {
        const all = await listAllBatches(url, token, contract);
        return all.every((batch) => batch.status === "FINALIZED") ? new Set(all.map((batch) => batch.id)) : undefined;
      });
      expect(batches.acknowledged.filter((batchId) => !stored.has(batchId))).toEqual([]);
      const storedCredits = new Set(
        (
          await queryStack<{ credit_id: string }>(stack!, DATABASE, "SELECT credit_id FROM credits WHERE lower(address) = lower($1)", [
            contract,
          ])
        ).map((row) => row.credit_id),
      );
      expect(credits.acknowledged.filter((creditId) => !storedCredits.has(creditId))).toEqual([]);
      const keys = await callOk(url, "GET", `/v1/contracts/${contract}/api-keys`, token);
      const storedKeys = new Set((keys.apiKeys as { id: string }[]).map((key) => key.id));
      expect(apiKeys.acknowledged.filter((keyId) => !storedKeys.has(keyId))).toEqual([]);
      const verify = await runCli(["verify"], { DATABASE_URL: databaseUrl }, STACK_READY_MS);
      expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);

      // Every event since the endpoint's creation reached the receiver at least once.
      const events = (await allEvents(url, token, contract)).filter((event) => Date.parse(event.occurredAt) >= hookCreatedMs);
      const missing = await pollUntil("every event delivered to the webhook receiver", RESUME_DEADLINE_MS, async () => {
        const delivered = new Set(receiver!.received.map((request) => request.headers["webhook-id"]));
        const notYet = events.filter((event) => !delivered.has(event.id)).map((event) => event.id);
        return notYet.length === 0 ? notYet : undefined;
      }).catch(() => events.filter((event) => !receiver!.received.some((request) => request.headers["webhook-id"] === event.id)));
      console.log(`webhooks: ${events.length} events, ${receiver.received.length} deliveries received`);
      expect(missing).toEqual([]);
      expect(events.length).toBeGreaterThan(2 * (WRITES_BEFORE_KILL + WRITES_AFTER_FAILOVER));
    },
    TEST_TIMEOUT_MS,
  );
});
