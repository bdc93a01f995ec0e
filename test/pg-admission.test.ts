/**
 * PostgreSQL admission right after a restart (issue 19, item 14). Before: 200 concurrent reads got
 * 29 × 503 "too many requests are waiting for a database connection" (the pool let 10 × 16 callers
 * wait while the HTTP layer admits 512), and the restarted process answered sign-in and admin
 * requests 503 while it caught up on due batches. Now there is one admission limit (the HTTP
 * layer's): waiting for a connection is bounded by time, not by a count, and the catch-up takes
 * one connection at a time and yields to requests. Skipped without DATABASE_URL_TEST.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
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
  sleep,
  startServerProcess,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const DUE_BATCHES = 150;
const TRANSFERS_PER_BATCH = 500;
const CONCURRENT_READS = 200;

describe.skipIf(!DATABASE_URL_TEST)("PostgreSQL: requests right after a restart with a catch-up to do", () => {
  let schema: TestSchema;
  let server: ServerProcess | undefined;
  const adminToken = newAdminToken();
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  let env: Env;

  beforeAll(async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    env = {
      DATABASE_URL: schema.connectionString,
      ADMIN_TOKEN: adminToken,
      MINIMUM_FINALIZE_SECONDS: "1",
      RATE_LIMIT_PER_MINUTE: "100000000",
      AUTH_RATE_LIMIT_PER_MINUTE: "100000",
    };
    // First process: no finalizer, so the batches are all still due when the second starts.
    const first = await startServerProcess({ ...env, FINALIZER_ENABLED: "false" });
    await setOperator(first.url, adminToken, contract, operator.address);
    await creditPoints(first.url, adminToken, contract, "seed", "PHASE2_POINTS", "100000000");
    const token = await signIn(first.url, contract, operator);
    for (let i = 0; i < DUE_BATCHES; i++) {
      const transfers = Array.from({ length: TRANSFERS_PER_BATCH }, () => ({ toAddress: randomAddress(), points: "1" }));
      await callOk(first.url, "PUT", `/v1/contracts/${contract}/batches/due-${i}`, token, {
        pointType: "PHASE2_POINTS",
        transfers,
        secondsToFinalize: 1,
      });
    }
    await first.kill("SIGTERM");
    await sleep(1100);
  }, 300_000);

  afterAll(async () => {
    await server?.kill("SIGTERM");
    await schema?.drop();
  });

  async function pendingBatches(): Promise<number> {
    const [row] = await schema.query<{ count: number }>("SELECT count(*)::int AS count FROM batches WHERE status = 'PENDING'");
    return row!.count;
  }

  it(`${CONCURRENT_READS} concurrent reads get no 503 from a wait-queue count, and sign-in and admin answer while the catch-up runs`, async () => {
    // Production's shedding on (test servers run without it: NO_LOAD_SHEDDING).
    // A pool of 4: the old count bound let 4 × 16 callers wait, far fewer than 200 reads at once.
    server = await startServerProcess({ ...env, PG_POOL_SIZE: "4", MAX_EVENT_LOOP_DELAY_MS: "500", MAX_QUEUE_DELAY_MS: "300" });
    const url = server.url;
    const token = await signIn(url, contract, operator);
    const pendingAtStart = await pendingBatches();
    const reads = await Promise.all(
      Array.from({ length: CONCURRENT_READS }, (_, i) =>
        call(url, "GET", i % 2 === 0 ? `/v1/contracts/${contract}/point-balances` : `/v1/contracts/${contract}/batches?limit=100`, token),
      ),
    );
    const statuses = new Map<number, number>();
    for (const read of reads) statuses.set(read.status, (statuses.get(read.status) ?? 0) + 1);
    const messages = reads.filter((read) => read.status !== 200).map((read) => JSON.stringify(read.body));
    // While batches are still due: sign in, an admin write and an admin read.
    const started = performance.now();
    const signedIn = await signIn(url, contract, privateKeyToAccount(generatePrivateKey())).then(
      () => "refused: not the operator",
      (error: Error) => error.message,
    );
    const newOperator = privateKeyToAccount(generatePrivateKey());
    const other = randomAddress();
    const adminWrite = await call(url, "PUT", `/v1/admin/contracts/${other}/operator`, adminToken, {
      operatorAddress: newOperator.address,
    });
    const operatorToken = adminWrite.status === 200 ? await signIn(url, other, newOperator) : null;
    const adminRead = await call(url, "GET", "/v1/admin/contracts?limit=10", adminToken);
    const pendingAfter = await pendingBatches();
    console.log(
      `after a restart with ${pendingAtStart} due batches: ${CONCURRENT_READS} reads ${JSON.stringify(Object.fromEntries(statuses))}` +
        `${messages.length > 0 ? ` (${[...new Set(messages)].join("; ")})` : ""}; admin write ${adminWrite.status}, ` +
        `sign-in ${operatorToken === null ? "failed" : "200"}, admin read ${adminRead.status} in ${Math.round(performance.now() - started)} ms, ` +
        `${pendingAfter} batches still due`,
    );
    expect(pendingAtStart).toBeGreaterThan(0);
    expect(messages.filter((message) => message.includes("waiting for a database connection"))).toEqual([]);
    expect(statuses.get(200)).toBe(CONCURRENT_READS);
    expect(signedIn).toContain("403");
    expect(adminWrite.status, JSON.stringify(adminWrite.body)).toBe(200);
    expect(operatorToken).not.toBeNull();
    expect(adminRead.status, JSON.stringify(adminRead.body)).toBe(200);
    // The catch-up still completes.
    await pollUntil("every due batch to finalize", 120_000, async () => ((await pendingBatches()) === 0 ? true : undefined));
  }, 300_000);
});
