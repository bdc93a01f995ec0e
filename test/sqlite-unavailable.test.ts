import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  assertBuilt,
  callOk,
  CLI_PATH,
  creditPoints,
  freePort,
  newAdminToken,
  NO_LOAD_SHEDDING,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * SQLite that cannot write, through the real server process: a full disk (a size-limited tmpfs
 * that is later enlarged with `mount -o remount,size=`) and a database file the server's user
 * may not write (the server runs as `nobody`, the files belong to root; later chowned to it).
 * In both, writes answer 503 UNAVAILABLE with Retry-After, /readyz answers 503, reads answer,
 * nothing answers 500, a refused batch leaves nothing behind, and once the database can write
 * again the same process recovers by itself. Both need root (mount, setuid); skipped otherwise.
 */

// startServerAsNobody passes this env as is, so it carries NO_LOAD_SHEDDING itself.
const SERVER_ENV: Env = { MINIMUM_FINALIZE_SECONDS: "1", FINALIZER_INTERVAL_MS: "100", LOG_LEVEL: "fatal", ...NO_LOAD_SHEDDING };
const POINT_TYPE = "PHASE2_POINTS";
/** Small enough to fill in a few seconds, large enough for the schema and a few batches. */
const FULL_DISK_BYTES = 2 * 1024 * 1024;
const ENLARGED_DISK_BYTES = 64 * 1024 * 1024;
/** Transfers per PUT while filling the disk: about 150 KB of rows each. */
const FILL_TRANSFERS = 2000;
/** A bound on the filling loop, far above what FULL_DISK_BYTES holds. */
const MAX_FILL_BATCHES = 200;
/** Far beyond any finalizer pass, so filling the disk is done by PUTs only. */
const FILL_SECONDS_TO_FINALIZE = 86_400;
const RECOVERY_DEADLINE_MS = 15_000;
const NOBODY = { uid: 65534, gid: 65534 };

interface Answer {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

async function request(base: string, method: string, path: string, token: string | null, body?: unknown): Promise<Answer> {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>;
  const code = (parsed.error as { code?: string } | undefined)?.code;
  return { status: response.status, code, retryAfter: response.headers.get("retry-after"), body: parsed };
}

function describeAnswer(answer: Answer): string {
  return `${answer.status} ${answer.code ?? ""} retry-after=${answer.retryAfter} ${JSON.stringify(answer.body).slice(0, 200)}`;
}

/** 503 UNAVAILABLE with a Retry-After of whole seconds. */
function expectUnavailable(answer: Answer, what: string): void {
  expect(
    { status: answer.status, code: answer.code, retryAfterIsSeconds: /^[0-9]+$/.test(answer.retryAfter ?? "") },
    `${what}: ${describeAnswer(answer)}`,
  ).toEqual({
    status: 503,
    code: "UNAVAILABLE",
    retryAfterIsSeconds: true,
  });
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * Whether the unprivileged user can run the built server from this checkout: a checkout inside a
 * directory only root may enter (e.g. one made by `mktemp -d`) cannot be, whoever runs the tests.
 */
function nobodyCanRunServer(): boolean {
  if (!isRoot()) return false;
  const check = `const fs = require("node:fs"); fs.accessSync(${JSON.stringify(CLI_PATH)}, fs.constants.R_OK)`;
  return spawnSync(process.execPath, ["-e", check], { uid: 65534, gid: 65534, stdio: "ignore" }).status === 0;
}

const NOBODY_SKIP = isRoot()
  ? `the user nobody cannot read ${CLI_PATH} (the checkout sits in a directory only root may enter); run the tests from a world-readable checkout to include it`
  : "needs root to run the server as nobody";
const canRunAsNobody = nobodyCanRunServer();

/** Mounts a tmpfs of `sizeBytes` on `dir`; false when this machine does not allow it. */
function tryMountTmpfs(dir: string, sizeBytes: number): boolean {
  if (!isRoot()) return false;
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Probed once at load: whether a size-limited filesystem can be mounted here. */
const mountProbeDir = tempDir("mount-probe");
const canMount = tryMountTmpfs(mountProbeDir, FULL_DISK_BYTES);
if (canMount) execFileSync("umount", [mountProbeDir]);
rmSync(mountProbeDir, { recursive: true, force: true });
const MOUNT_SKIP = "needs root and permission to mount a tmpfs (a size-limited filesystem)";
if (!canMount) console.warn(`sqlite-unavailable: full-disk test skipped: ${MOUNT_SKIP}`);
if (!canRunAsNobody) console.warn(`sqlite-unavailable: read-only test skipped: ${NOBODY_SKIP}`);

function transfers(count: number): { toAddress: string; points: string }[] {
  return Array.from({ length: count }, () => ({ toAddress: randomAddress(), points: "0.01" }));
}

function batchPath(contract: string, batchId: string): string {
  return `/v1/contracts/${contract}/batches/${batchId}`;
}

/** What the helpers below need of a running server. */
interface Server {
  url: string;
}

interface Session {
  contract: string;
  token: string;
}

async function prepareSession(server: Server, adminToken: string, points: string): Promise<Session> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, `credit-${randomBytes(4).toString("hex")}`, POINT_TYPE, points);
  return { contract, token: await signIn(server.url, contract, operator) };
}

async function balancesOf(server: Server, session: Session): Promise<unknown> {
  return (await callOk(server.url, "GET", `/v1/contracts/${session.contract}/point-balances`, session.token)).balances;
}

async function waitUntilWritesRecover(server: Server, session: Session, batchId: string, body: unknown): Promise<Answer> {
  return pollUntil("writes to succeed again", RECOVERY_DEADLINE_MS, async () => {
    const answer = await request(server.url, "PUT", batchPath(session.contract, batchId), session.token, body);
    if (answer.status === 200) return answer;
    expectUnavailable(answer, "PUT while recovering");
    return undefined;
  });
}

async function waitUntilNotReady(server: Server): Promise<Answer> {
  return pollUntil("/readyz 503", RECOVERY_DEADLINE_MS, async () => {
    const answer = await request(server.url, "GET", "/readyz", null);
    if (answer.status !== 200) return answer;
    return undefined;
  });
}

async function waitUntilReady(server: Server): Promise<void> {
  await pollUntil("/readyz 200", RECOVERY_DEADLINE_MS, async () => {
    const answer = await request(server.url, "GET", "/readyz", null);
    if (answer.status === 200) return true;
    expectUnavailable(answer, "readyz while recovering");
    return undefined;
  });
}

describe.skipIf(!canMount)(`SQLite on a full disk${canMount ? "" : ` (skipped: ${MOUNT_SKIP})`}`, () => {
  let dir: string;
  let mounted = false;
  let server: ServerProcess | undefined;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir("full-disk");
    mounted = tryMountTmpfs(dir, FULL_DISK_BYTES);
  });
  afterAll(async () => {
    await server?.kill("SIGKILL");
    if (mounted) execFileSync("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers writes and /readyz 503 with Retry-After, keeps reads, changes nothing, and recovers when space returns", async () => {
    expect(mounted).toBe(true);
    const adminToken = newAdminToken();
    const env: Env = { ...SERVER_ENV, DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken };
    server = await startServerProcess(env);
    const session = await prepareSession(server, adminToken, "1000000");

    const statuses: string[] = [];
    let refused: { batchId: string; body: unknown; answer: Answer } | undefined;
    for (let i = 0; i < MAX_FILL_BATCHES && !refused; i++) {
      const batchId = `fill-${i}`;
      const body = { pointType: POINT_TYPE, transfers: transfers(FILL_TRANSFERS), secondsToFinalize: FILL_SECONDS_TO_FINALIZE };
      const before = await balancesOf(server, session);
      const answer = await request(server.url, "PUT", batchPath(session.contract, batchId), session.token, body);
      statuses.push(String(answer.status));
      if (answer.status === 200) continue;
      refused = { batchId, body, answer };
      // The refused batch left nothing: balances as before, and no such batch.
      expect(await balancesOf(server, session)).toEqual(before);
      expect((await request(server.url, "GET", batchPath(session.contract, batchId), session.token)).status).toBe(404);
    }
    // Readiness may reuse a probe result for up to a second, so it turns 503 shortly after.
    const ready = await waitUntilNotReady(server);
    console.log(
      `full disk: PUT statuses ${statuses.join(",")}; refused ${refused ? describeAnswer(refused.answer) : "none"}; readyz ${describeAnswer(ready)}`,
    );
    expect(refused, "the disk never filled").toBeDefined();
    expectUnavailable(refused!.answer, "PUT on a full disk");
    expect(String(refused!.answer.body.error && (refused!.answer.body.error as { message?: string }).message)).toMatch(/full/);
    expectUnavailable(ready, "readyz on a full disk");
    // (A small write such as a credit may still fit: WAL mode reuses its file. The refused batch does not.)
    expectUnavailable(
      await request(server.url, "PUT", batchPath(session.contract, refused!.batchId), session.token, refused!.body),
      "the same PUT again",
    );
    expect((await request(server.url, "GET", "/healthz", null)).status).toBe(200);

    execFileSync("mount", ["-o", `remount,size=${ENLARGED_DISK_BYTES}`, dir]);
    const retried = await waitUntilWritesRecover(server, session, refused!.batchId, refused!.body);
    expect(retried.body.success).toBe(true);
    await waitUntilReady(server);
    expect((await request(server.url, "GET", "/healthz", null)).status).toBe(200);
    await server.kill("SIGTERM");
    server = undefined;
    const verified = await runCli(["verify"], env);
    expect(verified.stdout, verified.stderr).toContain("all invariants hold");
  }, 120_000);
});

interface NobodyServer {
  url: string;
  output(): string;
  kill(): Promise<void>;
}

/**
 * `serve` as the unprivileged user nobody. process.ts's startServerProcess waits for /readyz 200,
 * which a server that cannot write must not give, so this waits for /healthz instead.
 */
async function startServerAsNobody(env: Env): Promise<NobodyServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI_PATH, "serve"], {
    env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    ...NOBODY,
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const exited = new Promise<void>((resolveExit) => child.once("close", () => resolveExit()));
  const url = `http://127.0.0.1:${port}`;
  await pollUntil(`/healthz of the server run as nobody (output: ${output})`, RECOVERY_DEADLINE_MS, async () => {
    if (child.exitCode !== null) throw new Error(`server as nobody exited ${child.exitCode}: ${output}`);
    return (await request(url, "GET", "/healthz", null).catch(() => null))?.status === 200 ? true : undefined;
  });
  return {
    url,
    output: () => output,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

const ROOT = { uid: 0, gid: 0 };

/** Gives the directory to `directoryOwner` and the files in it (database, -wal, -shm) to `fileOwner`; others may read. */
function setOwners(dir: string, directoryOwner: typeof ROOT, fileOwner: typeof ROOT): void {
  for (const name of readdirSync(dir)) {
    chownSync(join(dir, name), fileOwner.uid, fileOwner.gid);
    chmodSync(join(dir, name), 0o644);
  }
  chownSync(dir, directoryOwner.uid, directoryOwner.gid);
  chmodSync(dir, 0o755);
}

describe.skipIf(!canRunAsNobody)(`SQLite database the server may not write${canRunAsNobody ? "" : ` (skipped: ${NOBODY_SKIP})`}`, () => {
  let dir: string;
  let server: NobodyServer | undefined;
  beforeAll(() => {
    assertBuilt();
    // Under /tmp so that nobody can reach it; the directory itself is made traversable below.
    dir = join(tempDir("read-only"), "db");
    mkdirSync(dir);
    chmodSync(join(dir, ".."), 0o755);
  });
  afterAll(async () => {
    await server?.kill();
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });

  it("starts, serves reads, answers writes and /readyz 503 with Retry-After, and recovers once it may write", async () => {
    const adminToken = newAdminToken();
    const env: Env = { ...SERVER_ENV, DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken };
    // As root first: schema, an operator, points and a token to use later.
    const writable = await startServerProcess(env);
    const session = await prepareSession(writable, adminToken, "100");
    const accepted = { pointType: POINT_TYPE, transfers: transfers(3), secondsToFinalize: FILL_SECONDS_TO_FINALIZE };
    await callOk(writable.url, "PUT", batchPath(session.contract, "before"), session.token, accepted);
    await writable.kill("SIGTERM");
    // SQLite needs to create -wal and -shm beside the database: with the directory not
    // writable either, the server refuses to start and says why.
    setOwners(dir, ROOT, ROOT);
    await expect(startServerAsNobody(env)).rejects.toThrow(/read-only/);
    // The database file alone read-only: the server starts, SQLite opens the file read-only.
    setOwners(dir, NOBODY, ROOT);

    server = await startServerAsNobody(env);
    const balances = await balancesOf(server, session);
    expect((await request(server.url, "GET", batchPath(session.contract, "before"), session.token)).status).toBe(200);
    const body = { pointType: POINT_TYPE, transfers: transfers(2), secondsToFinalize: FILL_SECONDS_TO_FINALIZE };
    const put = await request(server.url, "PUT", batchPath(session.contract, "refused"), session.token, body);
    const ready = await request(server.url, "GET", "/readyz", null);
    const credit = await request(server.url, "PUT", `/v1/admin/contracts/${session.contract}/credits/more`, adminToken, {
      pointType: POINT_TYPE,
      points: "1",
    });
    console.log(`read-only database: PUT ${describeAnswer(put)}; credit ${describeAnswer(credit)}; readyz ${describeAnswer(ready)}`);
    expectUnavailable(put, "PUT on a read-only database");
    expect(String((put.body.error as { message?: string }).message)).toMatch(/read-only/);
    expectUnavailable(credit, "credit on a read-only database");
    expectUnavailable(ready, "readyz on a read-only database");
    expect(await balancesOf(server, session)).toEqual(balances);
    expect((await request(server.url, "GET", batchPath(session.contract, "refused"), session.token)).status).toBe(404);

    setOwners(dir, NOBODY, NOBODY);
    const retried = await waitUntilWritesRecover(server, session, "refused", body);
    expect(retried.body.success).toBe(true);
    await waitUntilReady(server);
    await server.kill();
    server = undefined;
    const verified = await runCli(["verify"], env);
    expect(verified.stdout, verified.stderr).toContain("all invariants hold");
  }, 120_000);
});
