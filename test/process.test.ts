import Database from "better-sqlite3";
import { copyFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { formatPoints, parsePoints, sumUnits } from "../src/domain/points.js";
import {
  assertBuilt,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sleep,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/** Deadlines for things that take milliseconds when the machine is idle. */
const CATCH_UP_DEADLINE_MS = 10_000;
const SHUTDOWN_STARTED_DEADLINE_MS = 10_000;

let dir: string;
const servers: ServerProcess[] = [];

beforeAll(() => {
  assertBuilt();
  dir = tempDir("process");
});
afterEach(async () => {
  // A failed test must not leave a server behind.
  for (const server of servers.splice(0)) await server.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(env: Env, label: string): Promise<ServerProcess> {
  const server = await startServerProcess(env);
  servers.push(server);
  console.log(`start-up to ready (${label}): ${server.readyMs} ms`);
  return server;
}

interface Ledger {
  env: Env;
  databasePath: string;
  adminToken: string;
  contract: string;
  operator: PrivateKeyAccount;
}

function newLedger(name: string): Ledger {
  const databasePath = join(dir, `${name}.db`);
  const adminToken = newAdminToken();
  return {
    env: { DATABASE_URL: `sqlite:${databasePath}`, ADMIN_TOKEN: adminToken, MINIMUM_FINALIZE_SECONDS: "1", FINALIZER_INTERVAL_MS: "100" },
    databasePath,
    adminToken,
    contract: randomAddress(),
    operator: privateKeyToAccount(generatePrivateKey()),
  };
}

/** Registers the operator, credits 1000 PHASE2_POINTS and signs in. */
async function openContract(server: ServerProcess, ledger: Ledger): Promise<string> {
  await setOperator(server.url, ledger.adminToken, ledger.contract, ledger.operator.address);
  await creditPoints(server.url, ledger.adminToken, ledger.contract, "seed", "PHASE2_POINTS", "1000");
  return signIn(server.url, ledger.contract, ledger.operator);
}

function batchBody(points: string[], secondsToFinalize: number) {
  return { pointType: "PHASE2_POINTS", transfers: points.map((p) => ({ toAddress: randomAddress(), points: p })), secondsToFinalize };
}

function readStatuses(databasePath: string): Record<string, string> {
  const db = new Database(databasePath, { readonly: true });
  try {
    const rows = db.prepare("SELECT batch_id, status FROM batches").all() as { batch_id: string; status: string }[];
    return Object.fromEntries(rows.map((row) => [row.batch_id, row.status]));
  } finally {
    db.close();
  }
}

describe("catch-up after downtime", () => {
  it("finalizes batches that came due while the server was stopped soon after it starts again", async () => {
    const ledger = newLedger("catch-up");
    let server = await start(ledger.env, "catch-up, first start");
    const token = await openContract(server, ledger);
    const amounts = ["1.5", "2.25", "0.01"];
    const batchIds = amounts.map((_, i) => `catch-up-${i}`);
    for (const [i, batchId] of batchIds.entries()) {
      // Long enough that the SIGTERM below lands before any of them is due.
      await callOk(server.url, "PUT", `/v1/contracts/${ledger.contract}/batches/${batchId}`, token, batchBody([amounts[i]!], 4));
    }
    const dueAtMs: number[] = [];
    for (const batchId of batchIds) {
      const { batch } = await callOk(server.url, "GET", `/v1/contracts/${ledger.contract}/batches/${batchId}`, token);
      dueAtMs.push(Date.parse((batch as { finalizeAt: string }).finalizeAt));
    }
    expect((await server.kill("SIGTERM")).code).toBe(0);
    const stoppedAtMs = Date.now();
    expect(stoppedAtMs, "the server must stop before the batches are due").toBeLessThan(Math.min(...dueAtMs));

    // Waiting for wall-clock time to pass finalizeAt is the point of this test, not a race.
    await sleep(Math.max(...dueAtMs) - Date.now() + 500);
    expect(Object.values(readStatuses(ledger.databasePath))).toEqual(["PENDING", "PENDING", "PENDING"]);

    server = await start(ledger.env, "catch-up, restart");
    const restartedAtMs = Date.now();
    const finalized = await pollUntil("the overdue batches to finalize", CATCH_UP_DEADLINE_MS, async () => {
      const statuses = readStatuses(ledger.databasePath);
      return batchIds.every((id) => statuses[id] === "FINALIZED") ? statuses : undefined;
    });
    console.log(`overdue batches finalized ${Date.now() - restartedAtMs} ms after ready`);
    expect(Object.keys(finalized).sort()).toEqual(batchIds);
    for (const batchId of batchIds) {
      const { batch } = (await callOk(server.url, "GET", `/v1/contracts/${ledger.contract}/batches/${batchId}`, token)) as {
        batch: { finalizedAt: string; finalizeAt: string };
      };
      expect(Date.parse(batch.finalizedAt)).toBeGreaterThan(stoppedAtMs);
    }
    const balances = await callOk(server.url, "GET", `/v1/contracts/${ledger.contract}/point-balances`, token);
    const sent = formatPoints(sumUnits(amounts.map((a) => parsePoints(a)!)));
    expect((balances.balancesByPointType as Record<string, unknown>).PHASE2_POINTS).toMatchObject({
      finalizedSentCumulative: sent,
      pendingSent: "0",
    });
  }, 60_000);
});

/** A PUT whose headers the server has accepted (100 Continue) and whose body the test sends later. */
interface HeldRequest {
  finish(): void;
  response: Promise<{ status: number; body: string }>;
}

async function holdPut(agent: Agent, url: string, path: string, token: string, body: unknown): Promise<HeldRequest> {
  const payload = Buffer.from(JSON.stringify(body));
  const req = request(url + path, {
    agent,
    method: "PUT",
    headers: {
      "content-type": "application/json",
      "content-length": payload.length,
      authorization: `Bearer ${token}`,
      expect: "100-continue",
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.once("error", reject);
    req.once("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      res.once("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.once("error", reject);
    });
  });
  const accepted = new Promise<void>((resolve) => req.once("continue", resolve));
  req.flushHeaders();
  // 100 Continue is written just before Node hands the request to Fastify: the request is in flight.
  await Promise.race([accepted, response.then((r) => Promise.reject(new Error(`answered before the body: ${r.status} ${r.body}`)))]);
  req.write(payload.subarray(0, payload.length >> 1));
  return { finish: () => req.end(payload.subarray(payload.length >> 1)), response };
}

async function refusesNewRequests(url: string): Promise<true | undefined> {
  try {
    const response = await fetch(`${url}/healthz`);
    await response.arrayBuffer();
    return response.status === 503 ? true : undefined;
  } catch {
    return true;
  }
}

describe("graceful shutdown", () => {
  it("on SIGTERM finishes the requests in flight, stores their batches and exits 0", async () => {
    const ledger = newLedger("graceful");
    const server = await start(ledger.env, "graceful shutdown");
    const token = await openContract(server, ledger);
    const bodies = [1, 2, 3].map((n) =>
      batchBody(
        Array.from({ length: 500 }, () => `0.0${n}`),
        60,
      ),
    );
    // Keeps idle sockets a minute, like a load balancer: shutdown must not wait for the client to hang up.
    const agent = new Agent({ keepAlive: true, timeout: 60_000 });
    onTestFinished(() => agent.destroy());
    const held = await Promise.all(
      bodies.map((body, i) => holdPut(agent, server.url, `/v1/contracts/${ledger.contract}/batches/in-flight-${i}`, token, body)),
    );
    server.signal("SIGTERM");
    await pollUntil("the server to refuse new requests", SHUTDOWN_STARTED_DEADLINE_MS, () => refusesNewRequests(server.url));
    for (const request of held) request.finish();
    const responses = await Promise.all(held.map((request) => request.response));
    expect(
      responses.map((r) => r.status),
      JSON.stringify(responses),
    ).toEqual([200, 200, 200]);
    expect(responses.map((r) => JSON.parse(r.body) as unknown)).toEqual(
      bodies.map((_, i) => ({ success: true, batchId: `in-flight-${i}` })),
    );
    const exit = await server.waitForExit();
    expect(exit, server.output()).toEqual({ code: 0, signal: null });

    const db = new Database(ledger.databasePath, { readonly: true });
    const counts = db
      .prepare("SELECT b.batch_id AS id, count(*) AS n FROM batches b JOIN transfers t ON t.seq = b.seq GROUP BY b.seq ORDER BY b.batch_id")
      .all();
    db.close();
    expect(counts).toEqual(bodies.map((_, i) => ({ id: `in-flight-${i}`, n: 500 })));
    expect((await runCli(["verify"], ledger.env)).code).toBe(0);
  }, 60_000);
});

describe("invalid configuration", () => {
  const cases: [string, Env, RegExp][] = [
    ["PORT=abc", { PORT: "abc" }, /PORT/],
    [
      "MINIMUM_FINALIZE_SECONDS > DEFAULT_FINALIZE_SECONDS",
      { MINIMUM_FINALIZE_SECONDS: "100", DEFAULT_FINALIZE_SECONDS: "50" },
      /DEFAULT_FINALIZE_SECONDS.*MINIMUM_FINALIZE_SECONDS/,
    ],
    ["DATABASE_URL=mysql://x", { DATABASE_URL: "mysql://x" }, /DATABASE_URL/],
    ["a short ADMIN_TOKEN", { ADMIN_TOKEN: "short" }, /ADMIN_TOKEN/],
    ["LOG_LEVEL=loud", { LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    ["MAX_TRANSFERS_PER_BATCH=0", { MAX_TRANSFERS_PER_BATCH: "0" }, /MAX_TRANSFERS_PER_BATCH/],
  ];
  it.each(cases)("%s stops start-up with a message naming the variable and a non-zero exit code", async (_label, env, names) => {
    const result = await runCli(["serve"], { DATABASE_URL: sqliteUrl(dir, "never.db"), PORT: "0", ...env });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toMatch(/invalid configuration/);
    expect(result.stderr).toMatch(names);
  });
});

describe("the CLI", () => {
  it("migrate, operator set, credit (idempotent with --id) and verify drive a database the server then serves", async () => {
    const ledger = newLedger("cli");
    const env = { DATABASE_URL: ledger.env.DATABASE_URL! };
    for (let run = 0; run < 2; run++) {
      const migrated = await runCli(["migrate"], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(migrated.stdout).toContain("up to date");
    }
    const operator = await runCli(["operator", "set", ledger.contract.toLowerCase(), ledger.operator.address], env);
    expect(operator.code, operator.stderr).toBe(0);
    expect(operator.stdout).toContain(`operator of ${ledger.contract} is ${ledger.operator.address}`);

    const first = await runCli(["credit", ledger.contract, "PHASE2_POINTS", "10.5", "--id", "cli-credit-1"], env);
    expect(first.code, first.stderr).toBe(0);
    const again = await runCli(["credit", ledger.contract, "PHASE2_POINTS", "10.5", "--id", "cli-credit-1"], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("already exists (matches: true)");
    const conflicting = await runCli(["credit", ledger.contract, "PHASE2_POINTS", "11", "--id", "cli-credit-1"], env);
    expect(conflicting.code).toBe(1);
    expect(conflicting.stdout).toContain("matches: false");
    expect((await runCli(["credit", ledger.contract, "PHASE2_GOLD", "0.000001"], env)).code).toBe(0);
    const badType = await runCli(["credit", ledger.contract, "GOLD", "1"], env);
    expect(badType.code).toBe(2);
    expect(badType.stderr).toContain("pointType");

    const server = await start(ledger.env, "CLI-prepared database");
    const token = await signIn(server.url, ledger.contract, ledger.operator);
    const balances = await callOk(server.url, "GET", `/v1/contracts/${ledger.contract}/point-balances`, token);
    expect(balances.balancesByPointType).toMatchObject({
      PHASE2_POINTS: { earnedCumulative: "10.5", available: "10.5" },
      PHASE2_GOLD: { earnedCumulative: "0.000001", available: "0.000001" },
    });
    // The CLI works with the admin's authority: its operator change and credits name the admin.
    const { events } = (await callOk(server.url, "GET", `/v1/contracts/${ledger.contract}/events`, token)) as {
      events: { type: string; actor: unknown }[];
    };
    expect(events.map((e) => [e.type, e.actor])).toEqual([
      ["operator.changed", { type: "admin" }],
      ["credit.created", { type: "admin" }],
      ["credit.created", { type: "admin" }],
    ]);
    await callOk(server.url, "PUT", `/v1/contracts/${ledger.contract}/batches/cli-batch`, token, batchBody(["2.5"], 3600));
    expect((await servers.pop()!.kill("SIGTERM")).code).toBe(0);

    const healthy = await runCli(["verify"], env);
    expect(healthy.code, healthy.stdout).toBe(0);
    expect(healthy.stdout).toContain("all invariants hold");
  }, 60_000);

  it("verify exits 1 naming the invariant when an account's pendingSent disagrees with its batches", async () => {
    const ledger = newLedger("corrupt-source");
    const env = { DATABASE_URL: ledger.env.DATABASE_URL! };
    expect((await runCli(["credit", ledger.contract, "PHASE2_POINTS", "5", "--id", "seed"], env)).code).toBe(0);
    const copyPath = join(dir, "corrupt-copy.db");
    copyFileSync(ledger.databasePath, copyPath);
    const db = new Database(copyPath);
    const changed = db
      .prepare("UPDATE accounts SET pending_w = pending_w + 1 WHERE address = ? AND point_type = 'PHASE2_POINTS'")
      .run(ledger.contract.toLowerCase());
    db.close();
    expect(changed.changes).toBe(1);

    const corrupt = await runCli(["verify"], { DATABASE_URL: `sqlite:${copyPath}` });
    expect(corrupt.code).toBe(1);
    expect(corrupt.stdout).toMatch(/invariant 2\b.*pendingSent/);
    expect((await runCli(["verify"], env)).code, "the original stays healthy").toBe(0);
  }, 60_000);

  it("demo runs the whole flow, prints the final balances and exits 0", async () => {
    const result = await runCli(["demo"], {});
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain("final balances");
    expect(result.stdout).toMatch(/available":"874\.375".*"finalizedSentCumulative":"125\.625"/);
    expect(result.stdout).toContain("ledger invariants: all hold");
  }, 60_000);
});
