import Database from "better-sqlite3";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { formatSignerKey, generateSignerKey, parseSignerKey } from "../src/domain/signed-note.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON, withSearchPath, type TestSchema } from "./helpers/postgres.js";
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
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * The transparency log across restores and key changes (issue 37), as an operator and a witness
 * meet them, through the built server and CLI: a copy made by `backup` and started begins a new
 * epoch that the witness follows with a clear message (the events after the copy are said to be
 * left behind), while the same restore made by copying the file, unannounced, still fails the
 * witness; on PostgreSQL a pg_dump restored with `log new-epoch` is followed and one without is
 * refused; a start with another LOG_SIGNING_KEY is refused in one line, and `log rotate-key`
 * changes it in a way the witness follows to the new key.
 */

const DEADLINE_MS = 30_000;
let servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.kill("SIGTERM")));
  servers = [];
});
beforeAll(() => assertBuilt());

async function start(env: Env): Promise<ServerProcess> {
  const server = await startServerProcess({ LOG_CHECKPOINT_SECONDS: "0.2", ...env });
  servers.push(server);
  return server;
}

async function stop(server: ServerProcess): Promise<void> {
  servers = servers.filter((candidate) => candidate !== server);
  await server.kill("SIGTERM");
}

/** `count` credits, then waits until a checkpoint holds every event. */
async function addEvents(server: ServerProcess, adminToken: string, count: number, tag: string): Promise<number> {
  for (let i = 0; i < count; i++) await creditPoints(server.url, adminToken, randomAddress(), `${tag}-${i}`, "PHASE2_POINTS", "1");
  return pollUntil("every event in a checkpoint", DEADLINE_MS, async () => {
    const status = (await (await fetch(`${server.url}/v1/log/status`)).json()) as {
      treeSize: number;
      checkpointSize: number | null;
      oldestUnloggedAt: string | null;
    };
    return status.oldestUnloggedAt === null && status.checkpointSize === status.treeSize ? status.treeSize : undefined;
  });
}

async function witness(server: ServerProcess, state: string) {
  const run = await runCli(["log", "verify", "--url", server.url, "--state", state], {});
  return { code: run.code, output: `${run.stdout}\n${run.stderr}` };
}

describe("a restored SQLite copy and a changed key", () => {
  it("a copy made by backup begins an announced epoch the witness follows; the same restore by a plain file copy fails it", async () => {
    const dir = tempDir("tlog-epochs");
    const adminToken = newAdminToken();
    const live = { DATABASE_URL: sqliteUrl(dir, "live.db"), ADMIN_TOKEN: adminToken };
    const state = join(dir, "witness.json");
    const running = await start(live);
    await addEvents(running, adminToken, 3, "a");
    expect((await witness(running, state)).code).toBe(0);
    const backup = await runCli(["backup", join(dir, "copy.db")], live);
    expect(backup.code, backup.stderr).toBe(0);
    const size = await addEvents(running, adminToken, 4, "b");
    expect((await witness(running, state)).code).toBe(0);
    await stop(running);
    // The same older state without backup's mark (a file copied while the service was stopped,
    // then restored by copying it back): an unannounced rewrite.
    copyFileSync(join(dir, "copy.db"), join(dir, "plain.db"));
    const plainDb = new Database(join(dir, "plain.db"));
    expect(plainDb.prepare("UPDATE log_state SET new_epoch_due = 0").run().changes).toBe(1);
    plainDb.close();
    const unwitnessedState = join(dir, "witness-plain.json");
    copyFileSync(state, unwitnessedState);

    const restored = await start({ DATABASE_URL: sqliteUrl(dir, "copy.db"), ADMIN_TOKEN: adminToken });
    const grown = await addEvents(restored, adminToken, 2, "c");
    const followed = await witness(restored, state);
    expect(followed.code, followed.output).toBe(0);
    expect(followed.output).toContain("NEW EPOCH: localhost/points-ledger/epoch-1 follows localhost/points-ledger from its first 3 events");
    expect(followed.output).toContain(`had ${size} events: the last ${size - 3} are not in the new epoch`);
    expect(followed.output).toContain(`ok: localhost/points-ledger/epoch-1 has ${grown} events`);
    await addEvents(restored, adminToken, 1, "d");
    const next = await witness(restored, state);
    expect(next.code, next.output).toBe(0);
    expect(next.output).toContain("extends the saved checkpoint");
    await stop(restored);

    const plain = await start({ DATABASE_URL: sqliteUrl(dir, "plain.db"), ADMIN_TOKEN: adminToken });
    await addEvents(plain, adminToken, 2, "e");
    const refused = await witness(plain, unwitnessedState);
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(
      /VERIFICATION FAILED: .*its history was rewritten \(and no epoch announced by .* follows localhost\/points-ledger\)/,
    );
  }, 240_000);

  it("a start with another LOG_SIGNING_KEY is refused in one line; log rotate-key changes it and the witness follows to the new key", async () => {
    const dir = tempDir("tlog-rotate");
    const adminToken = newAdminToken();
    const oldKey = generateSignerKey("ledger.test/points-ledger");
    const newKey = formatSignerKey("ledger.test/points-ledger", parseSignerKey(generateSignerKey("x")).seed);
    const env = { DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken };
    const state = join(dir, "witness.json");
    const first = await start({ ...env, LOG_SIGNING_KEY: oldKey });
    await addEvents(first, adminToken, 2, "a");
    expect((await witness(first, state)).code).toBe(0);
    await stop(first);

    const refused = spawnSync(process.execPath, ["dist/src/cli/main.js", "serve"], {
      env: { PATH: process.env.PATH, ...env, PORT: "0", LOG_SIGNING_KEY: newKey },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(refused.status).not.toBe(0);
    const lines = refused.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /invalid configuration: LOG_SIGNING_KEY \/ LOG_ORIGIN give the verifier key .* but this database's transparency log is signed by .*log rotate-key/,
    );

    writeFileSync(join(dir, "old.env"), `LOG_SIGNING_KEY=${oldKey}\n`);
    const rotated = await runCli(["log", "rotate-key", "--from-key-file", join(dir, "old.env")], { ...env, LOG_SIGNING_KEY: newKey });
    expect(rotated.code, rotated.stderr).toBe(0);
    const second = await start({ ...env, LOG_SIGNING_KEY: newKey });
    await addEvents(second, adminToken, 1, "b");
    const followed = await witness(second, state);
    expect(followed.code, followed.output).toBe(0);
    expect(followed.output).toMatch(
      /NEW EPOCH: ledger\.test\/points-ledger\/epoch-1 follows ledger\.test\/points-ledger from its first 2 events .*signed by ledger\.test\/points-ledger\+/,
    );
    // The witness now pins the new key: the next run checks with it.
    const next = await witness(second, state);
    expect(next.code, next.output).toBe(0);
  }, 240_000);
});

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
const havePgTools = spawnSync("pg_dump", ["--version"]).status === 0 && spawnSync("pg_restore", ["--version"]).status === 0;

describe.skipIf(!DATABASE_URL_TEST || !havePgTools)("a pg_dump restored on PostgreSQL", () => {
  let schema: TestSchema;
  const restoredDatabases: string[] = [];
  afterEach(async () => {
    await schema?.drop();
    const admin = new pg.Client({ connectionString: DATABASE_URL_TEST });
    await admin.connect();
    for (const name of restoredDatabases.splice(0)) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it("restored with `log new-epoch`, the witness follows the announced epoch; restored without it, the witness fails", async () => {
    schema = await createTestSchema(DATABASE_URL_TEST!);
    const dir = tempDir("tlog-pgdump");
    const adminToken = newAdminToken();
    const state = join(dir, "witness.json");
    const running = await start({ DATABASE_URL: schema.connectionString, ADMIN_TOKEN: adminToken, PG_POOL_SIZE: "2" });
    await addEvents(running, adminToken, 3, "a");
    expect((await witness(running, state)).code).toBe(0);
    const dump = join(dir, "points.dump");
    execFileSync("pg_dump", ["--format=custom", `--file=${dump}`, "--schema", schema.schema, DATABASE_URL_TEST!]);
    await addEvents(running, adminToken, 3, "b");
    expect((await witness(running, state)).code).toBe(0);
    await stop(running);
    const unannouncedState = join(dir, "witness-2.json");
    copyFileSync(state, unannouncedState);

    const restoreInto = async (name: string): Promise<string> => {
      const admin = new pg.Client({ connectionString: DATABASE_URL_TEST });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      restoredDatabases.push(name);
      const url = new URL(DATABASE_URL_TEST!);
      url.pathname = `/${name}`;
      execFileSync("pg_restore", ["--no-owner", `--dbname=${url.toString()}`, dump]);
      return withSearchPath(url.toString(), schema.schema);
    };
    const announcedUrl = await restoreInto(`${schema.schema}_a`);
    const marked = await runCli(["log", "new-epoch"], { DATABASE_URL: announcedUrl });
    expect(marked.code, marked.stderr).toBe(0);
    const announced = await start({ DATABASE_URL: announcedUrl, ADMIN_TOKEN: adminToken, PG_POOL_SIZE: "2" });
    await addEvents(announced, adminToken, 2, "c");
    const followed = await witness(announced, state);
    expect(followed.code, followed.output).toBe(0);
    expect(followed.output).toContain("NEW EPOCH: localhost/points-ledger/epoch-1 follows localhost/points-ledger from its first 3 events");
    await stop(announced);

    const unannouncedUrl = await restoreInto(`${schema.schema}_u`);
    const unannounced = await start({ DATABASE_URL: unannouncedUrl, ADMIN_TOKEN: adminToken, PG_POOL_SIZE: "2" });
    await addEvents(unannounced, adminToken, 4, "d");
    const refused = await witness(unannounced, unannouncedState);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain("its history was rewritten");
  }, 240_000);
});
