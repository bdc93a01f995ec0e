import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { PointsAdminClient, PointsApiError, PointsClient, type LedgerEvent } from "../src/client/index.js";
import {
  batchBody,
  createTestApp,
  creditPoints,
  listen,
  putBatch,
  randomAddress,
  registerOperator,
  signIn,
  type TestApp,
} from "./helpers/http.js";
import { CLI_PATH, assertBuilt, runCli } from "./helpers/process.js";

/**
 * client.events() and admin.events() (async iterators over the pull API that keep their cursor)
 * and `points-ledger events tail`, against the real app on a socket.
 */

let testApp: TestApp;
let baseUrl: string;
const operatorKey = generatePrivateKey();
const contract = randomAddress();
let token: string;
let client: PointsClient;

beforeAll(async () => {
  testApp = await createTestApp();
  baseUrl = await listen(testApp.app);
  const operator = privateKeyToAccount(operatorKey);
  await registerOperator(testApp.send, testApp.adminToken, contract, operator.address);
  await creditPoints(testApp.send, testApp.adminToken, contract, "PHASE2_POINTS", "100");
  token = await signIn(testApp.send, contract, operator);
  for (const batchId of ["b1", "b2", "b3"]) {
    await putBatch(
      testApp.send,
      { contract, token, operatorAccount: operator },
      batchId,
      batchBody([{ toAddress: randomAddress(), points: "1" }]),
    );
  }
  client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey });
});

afterAll(async () => {
  await testApp?.close();
});

async function collect(feed: AsyncIterable<LedgerEvent>, stopAfter = Infinity): Promise<LedgerEvent[]> {
  const events: LedgerEvent[] = [];
  for await (const event of feed) {
    events.push(event);
    if (events.length >= stopAfter) break;
  }
  return events;
}

const batchIdOf = (event: LedgerEvent) => ("batch" in event.data ? event.data.batch.id : event.type);

describe("client.events()", () => {
  it("yields every event of the contract once, in order, and ends with the cursor of the last page", async () => {
    const feed = client.events({ limit: 2 });
    expect(feed.cursor).toBeUndefined();
    const events = await collect(feed);
    expect(events.map(batchIdOf)).toEqual(["operator.changed", "credit.created", "b1", "b2", "b3"]);
    const direct = await client.listEvents({ limit: 1000 });
    expect(events.map((e) => e.id)).toEqual(direct.events.map((e) => e.id));
    expect(feed.cursor).toBe(direct.cursor);
    // Typed data: narrowing on type gives the fields.
    const credit = events.find((e) => e.type === "credit.created");
    expect(credit?.type === "credit.created" && credit.data.points).toBe("100");
    const filtered = await collect(client.events({ types: ["batch.accepted"], after: undefined }));
    expect(filtered.map(batchIdOf)).toEqual(["b1", "b2", "b3"]);
  });

  it("keeps a cursor that never skips an event: a page left half-read comes again", async () => {
    const feed = client.events({ limit: 2 });
    const firstThree = await collect(feed, 3);
    expect(firstThree.map(batchIdOf)).toEqual(["operator.changed", "credit.created", "b1"]);
    // The third event's page (b1, b2) was not finished: resuming starts at that page.
    const resumed = await collect(client.events({ after: feed.cursor, limit: 2 }));
    expect(resumed.map(batchIdOf)).toEqual(["b1", "b2", "b3"]);
  });

  it("follows: waits when caught up, yields new events as they come, and ends on abort", async () => {
    const stop = new AbortController();
    const feed = client.events({
      follow: true,
      pollIntervalMs: 100,
      signal: stop.signal,
      after: (await client.listEvents({ limit: 1000 })).cursor,
    });
    const iterator = feed[Symbol.asyncIterator]();
    const pending = iterator.next();
    await putBatch(
      testApp.send,
      { contract, token, operatorAccount: privateKeyToAccount(operatorKey) },
      "b4",
      batchBody([{ toAddress: randomAddress(), points: "1" }]),
    );
    const next = await pending;
    expect(next.done).toBe(false);
    expect(batchIdOf(next.value as LedgerEvent)).toBe("b4");
    const waiting = iterator.next();
    stop.abort();
    expect((await waiting).done).toBe(true);
    expect(feed.cursor).toBe((await client.listEvents({ limit: 1000 })).cursor);
  });

  it("surfaces an expired cursor as CURSOR_EXPIRED and a bad one as VALIDATION_FAILED", async () => {
    const bad = collect(client.events({ after: "garbage" }));
    await expect(bad).rejects.toSatisfy((error: unknown) => PointsApiError.is(error, "VALIDATION_FAILED"));
  });
});

describe("admin.events()", () => {
  it("yields the events of every stream", async () => {
    const admin = new PointsAdminClient({ baseUrl, adminToken: testApp.adminToken });
    const other = randomAddress();
    await admin.credit(other, "gift", "PHASE2_POINTS", "2");
    const events = await collect(admin.events({ limit: 3 }));
    const streams = new Set(events.map((e) => e.contractAddress));
    expect(streams).toEqual(new Set([contract, other]));
    expect(events.at(-1)).toMatchObject({ type: "credit.created", contractAddress: other, data: { creditId: "gift", points: "2" } });
  });
});

describe("points-ledger events tail", () => {
  const env = () => ({ PATH: process.env.PATH ?? "", POINTS_LEDGER_URL: baseUrl, OPERATOR_PRIVATE_KEY: operatorKey });

  it("prints one JSON line per event and the cursor to resume from", async () => {
    assertBuilt();
    const all = await runCli(["events", "tail", "--contract", contract], env());
    expect(all.code, all.stderr).toBe(0);
    const printed = all.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as LedgerEvent);
    const listed = await client.listEvents({ limit: 1000 });
    expect(printed.map((e) => e.id)).toEqual(listed.events.map((e) => e.id));
    const cursor = /cursor: (\S+)/.exec(all.stderr)?.[1];
    expect(cursor).toBe(listed.cursor);

    const none = await runCli(["events", "tail", "--contract", contract, "--after", cursor!, "--types", "batch.cancelled"], env());
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    const wrong = await runCli(["events", "tail", "--contract", contract, "--types", "batch.exploded"], env());
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/VALIDATION_FAILED[\s\S]*types/);
  });

  it("--follow prints new events as they come and the cursor on Ctrl-C", async () => {
    assertBuilt();
    const start = (await client.listEvents({ limit: 1000 })).cursor;
    const child = spawn(process.execPath, [CLI_PATH, "events", "tail", "--contract", contract, "--after", start, "--follow"], {
      env: env(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    try {
      await putBatch(
        testApp.send,
        { contract, token, operatorAccount: privateKeyToAccount(operatorKey) },
        "tailed",
        batchBody([{ toAddress: randomAddress(), points: "1" }]),
      );
      await expect.poll(() => stdout, { timeout: 10_000 }).toContain('"tailed"');
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as LedgerEvent);
    expect(lines.map(batchIdOf)).toEqual(["tailed"]);
    expect(/cursor: (\S+)/.exec(stderr)?.[1]).toBe((await client.listEvents({ limit: 1000 })).cursor);
  });
});
