import Database from "better-sqlite3";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * `points-ledger log verify` as a witness against a tampered database (docs/transparency.md): the
 * witness saves a checkpoint; the service is stopped, its database rewritten (an event's data
 * changed, an event removed, two swapped) and the log rebuilt from the rewritten events, as an
 * operator covering their tracks would; after a restart the witness refuses the new history (exit
 * 1, a clear message) and keeps its saved checkpoint. An event changed without rebuilding the log
 * fails `log prove` instead. SQLite and PostgreSQL (its own schema of DATABASE_URL_TEST), through
 * the built CLI and server.
 */

const EVENTS = 4;
const DEADLINE_MS = 30_000;

let server: ServerProcess | null = null;
afterEach(async () => {
  await server?.kill("SIGTERM");
  server = null;
});
beforeAll(() => assertBuilt());

async function start(databaseUrl: string, adminToken: string): Promise<ServerProcess> {
  server = await startServerProcess({
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: "warn",
    LOG_CHECKPOINT_SECONDS: "1",
  });
  return server;
}

async function checkpointSize(url: string): Promise<number> {
  const response = await fetch(`${url}/v1/log/checkpoint`);
  return response.status === 200 ? Number((await response.text()).split("\n")[1]) : -1;
}

async function waitForSize(url: string, size: number): Promise<void> {
  await pollUntil(`a checkpoint of ${size} events`, DEADLINE_MS, async () => ((await checkpointSize(url)) === size ? true : undefined));
}

/** Rebuilds the log from the events as they now are: the tiles, the state and every logIndex cleared. */
function rebuildLog(db: Database.Database): void {
  db.exec(`DELETE FROM log_tiles;
           UPDATE log_state SET size = 0, position_seq = 0, checkpoint_size = NULL, checkpoint_root = NULL, checkpoint_note = NULL, checkpoint_at_ms = NULL;
           UPDATE events SET log_index = NULL;`);
}

/** What is done to the database, and whether a new event follows (the log then has EVENTS + 1 or, one removed, EVENTS again). */
const TAMPERINGS: [string, (db: Database.Database) => void, boolean][] = [
  ["one event's data changed", (db) => db.exec(`UPDATE events SET data = replace(data, '"5"', '"500"') WHERE log_index = 1`), true],
  ["an event removed", (db) => db.exec("DELETE FROM events WHERE log_index = 1"), true],
  [
    "two events swapped",
    (db) => {
      const [a, b] = db.prepare("SELECT seq FROM events WHERE log_index IN (1, 2) ORDER BY log_index").pluck(true).all() as bigint[];
      db.prepare("UPDATE events SET seq = -1 WHERE seq = ?").run(a);
      db.prepare("UPDATE events SET seq = ? WHERE seq = ?").run(a, b);
      db.prepare("UPDATE events SET seq = ? WHERE seq = -1").run(b);
    },
    true,
  ],
  [
    "a fork: the same size, another root",
    (db) => db.exec(`UPDATE events SET data = replace(data, '"5"', '"6"') WHERE log_index = 3`),
    false,
  ],
];

/**
 * Saves a checkpoint of EVENTS credits with the witness, stops the service, tampers with its
 * database and rebuilds the log (`tamper`), restarts it (a new event follows when `newEvent`), and
 * expects the witness to refuse the new history and keep its checkpoint.
 */
async function witnessRefusesAfter(databaseUrl: string, dir: string, what: string, tamper: () => Promise<void>, newEvent: boolean) {
  const state = join(dir, "witness.json");
  const adminToken = newAdminToken();
  let running = await start(databaseUrl, adminToken);
  const address = randomAddress();
  for (let i = 0; i < EVENTS; i++) await creditPoints(running.url, adminToken, address, `c${i}`, "PHASE2_POINTS", "5");
  await waitForSize(running.url, EVENTS);
  const first = await runCli(["log", "verify", "--url", running.url, "--state", state], {});
  expect(first.code, first.stderr).toBe(0);
  expect(first.stdout).toContain(`has ${EVENTS} events`);
  const saved = readFileSync(state, "utf8");

  await running.kill("SIGTERM");
  await tamper();
  running = await start(databaseUrl, adminToken);
  if (newEvent) await creditPoints(running.url, adminToken, address, "after", "PHASE2_POINTS", "5");
  await waitForSize(running.url, (what === "an event removed" ? EVENTS - 1 : EVENTS) + (newEvent ? 1 : 0));

  const second = await runCli(["log", "verify", "--url", running.url, "--state", state], {});
  expect(second.code, second.stdout).toBe(1);
  expect(second.stderr).toMatch(/VERIFICATION FAILED: .*(rewritten|forked)/);
  expect(readFileSync(state, "utf8")).toBe(saved);
}

describe("log verify, the witness, against a tampered SQLite database", () => {
  it.each(TAMPERINGS)("fails after %s and the log rebuilt, keeping its checkpoint", async (what, tamper, newEvent) => {
    const dir = tempDir("witness");
    await witnessRefusesAfter(
      sqliteUrl(dir),
      dir,
      what,
      async () => {
        const db = new Database(join(dir, "ledger.db"));
        tamper(db);
        rebuildLog(db);
        db.close();
      },
      newEvent,
    );
  });

  it("log prove refuses an event whose data was changed without rebuilding the log; log verify passes (the tree is untouched)", async () => {
    const dir = tempDir("witness");
    const state = join(dir, "witness.json");
    const adminToken = newAdminToken();
    let running = await start(sqliteUrl(dir), adminToken);
    const address = randomAddress();
    for (let i = 0; i < EVENTS; i++) await creditPoints(running.url, adminToken, address, `c${i}`, "PHASE2_POINTS", "5");
    await waitForSize(running.url, EVENTS);
    expect((await runCli(["log", "verify", "--url", running.url, "--state", state], {})).code).toBe(0);
    await running.kill("SIGTERM");
    const db = new Database(join(dir, "ledger.db"));
    const eventId = db.prepare("SELECT event_id FROM events WHERE log_index = 2").pluck(true).get() as string;
    db.exec(`UPDATE events SET data = replace(data, '"5"', '"500"') WHERE log_index = 2`);
    db.close();
    running = await start(sqliteUrl(dir), adminToken);
    const proved = await runCli(["log", "prove", eventId, "--url", running.url, "--state", state], { ADMIN_TOKEN: adminToken });
    expect(proved.code, proved.stdout).toBe(1);
    expect(proved.stderr).toContain("VERIFICATION FAILED");
    const untouched = await runCli(
      ["log", "prove", (await firstEventId(running.url, adminToken))!, "--url", running.url, "--state", state],
      { ADMIN_TOKEN: adminToken },
    );
    expect(untouched.code, untouched.stderr).toBe(0);
    expect((await runCli(["log", "verify", "--url", running.url, "--state", state], {})).code).toBe(0);
  });
});

/** The same on PostgreSQL, where the event log's order is (tx, seq). */
const POSTGRES_TAMPERINGS: [string, (schema: TestSchema) => Promise<void>, boolean][] = [
  [
    "one event's data changed",
    async (schema) => void (await schema.query(`UPDATE events SET data = replace(data::text, '"5"', '"500"')::jsonb WHERE log_index = 1`)),
    true,
  ],
  ["an event removed", async (schema) => void (await schema.query("DELETE FROM events WHERE log_index = 1")), true],
  [
    "two events swapped",
    async (schema) => {
      const [a, b] = await schema.query<{ tx: string; seq: string }>(
        "SELECT tx::text AS tx, seq::text AS seq FROM events WHERE log_index IN (1, 2) ORDER BY log_index",
      );
      await schema.query("UPDATE events SET seq = -1 WHERE seq = $1", [a!.seq]);
      await schema.query("UPDATE events SET tx = $1::xid8, seq = $2 WHERE seq = $3", [a!.tx, a!.seq, b!.seq]);
      await schema.query("UPDATE events SET tx = $1::xid8, seq = $2 WHERE seq = -1", [b!.tx, b!.seq]);
    },
    true,
  ],
  [
    "a fork: the same size, another root",
    async (schema) => void (await schema.query(`UPDATE events SET data = replace(data::text, '"5"', '"6"')::jsonb WHERE log_index = 3`)),
    false,
  ],
];

/** Rebuilds the PostgreSQL log from the events as they now are, as rebuildLog does on SQLite. */
async function rebuildPostgresLog(schema: TestSchema): Promise<void> {
  await schema.query("DELETE FROM log_tiles");
  await schema.query(
    `UPDATE log_state SET size = 0, position_tx = '0', position_seq = 0,
     checkpoint_size = NULL, checkpoint_root = NULL, checkpoint_note = NULL, checkpoint_at_ms = NULL`,
  );
  await schema.query("UPDATE events SET log_index = NULL");
}

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

describe.skipIf(!DATABASE_URL_TEST)("log verify, the witness, against a tampered PostgreSQL database", () => {
  it.each(POSTGRES_TAMPERINGS)("fails after %s and the log rebuilt, keeping its checkpoint", async (what, tamper, newEvent) => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    try {
      await witnessRefusesAfter(
        schema.connectionString,
        tempDir("witness-pg"),
        what,
        async () => {
          await tamper(schema);
          await rebuildPostgresLog(schema);
        },
        newEvent,
      );
    } finally {
      await server?.kill("SIGTERM");
      server = null;
      await schema.drop();
    }
  });
});

async function firstEventId(url: string, adminToken: string): Promise<string | undefined> {
  const response = await fetch(`${url}/v1/admin/events?limit=1`, { headers: { authorization: `Bearer ${adminToken}` } });
  return ((await response.json()) as { events: { id: string }[] }).events[0]?.id;
}
