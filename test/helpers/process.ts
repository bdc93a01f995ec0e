import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getAddress } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";

/**
 * Helpers that drive the real built server as a child process: spawn it with an environment,
 * wait for /readyz, kill it with a signal, call the CLI, sign in as an operator.
 */

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The built CLI under test; POINTS_LEDGER_CLI points at another build (e.g. a deliberately broken copy). */
export const CLI_PATH = process.env.POINTS_LEDGER_CLI ?? join(REPO_ROOT, "dist/src/cli/main.js");

/** Deadlines; generous because the 2-core machine runs other suites at the same time. */
export const READY_TIMEOUT_MS = 20_000;
export const EXIT_TIMEOUT_MS = 20_000;
const POLL_INTERVAL_MS = 50;
/** Only the tail of a child's output is kept, for failure messages. */
const OUTPUT_LIMIT_CHARS = 64_000;
/** Attempts at start-up when another process took the chosen port in the meantime. */
const PORT_ATTEMPTS = 3;
/** Variables passed through to children; everything else comes from the test, so runs are hermetic. */
const INHERITED_VARIABLES = ["PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT"];

export type Env = Record<string, string>;

/**
 * Load shedding off, both kinds (event-loop delay, queueing time). They react to the event loop of the process serving, and a busy 2-core machine
 * running several suites stalls test processes at random (more so a server inside the test's own
 * process), so a test server would shed requests that no test meant as load. The shedding test
 * turns it on explicitly; every other test server, in-process or spawned, runs with this.
 */
export const NO_LOAD_SHEDDING: Env = { MAX_EVENT_LOOP_DELAY_MS: "0", MAX_QUEUE_DELAY_MS: "0", CLIENT_TURN_BUDGET_MS: "0" };

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function assertBuilt(): void {
  if (!existsSync(CLI_PATH)) {
    throw new Error(`${CLI_PATH} is missing: run \`npm run build\` (npm test builds first) before these tests`);
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `points-ledger-${prefix}-`));
}

export function sqliteUrl(dir: string, name = "ledger.db"): string {
  return `sqlite:${join(dir, name)}`;
}

/** A random admin token of the length config.ts requires. */
export function newAdminToken(): string {
  return randomBytes(24).toString("base64url");
}

/** A random checksummed address nobody holds a key for (recipients, contracts). */
export function randomAddress(): `0x${string}` {
  return getAddress(`0x${randomBytes(20).toString("hex")}`);
}

/** A port that was free a moment ago; start-up retries if it is taken before the server binds it. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

/** Polls `check` until it returns a value other than undefined, or fails naming `what` at the deadline. */
export async function pollUntil<T>(what: string, deadlineMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await sleep(POLL_INTERVAL_MS);
  }
}

function childEnv(env: Env): Env {
  const base: Env = {};
  for (const name of INHERITED_VARIABLES) {
    const value = process.env[name];
    if (value !== undefined) base[name] = value;
  }
  return { ...base, ...env };
}

/** A child process whose output is collected and whose exit is a promise. */
class Child {
  stdout = "";
  stderr = "";
  readonly exited: Promise<ExitInfo>;
  exit: ExitInfo | null = null;

  constructor(readonly process: ChildProcess) {
    process.stdout?.on("data", (chunk: Buffer) => {
      this.stdout = (this.stdout + chunk.toString("utf8")).slice(-OUTPUT_LIMIT_CHARS);
    });
    process.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-OUTPUT_LIMIT_CHARS);
    });
    this.exited = new Promise((resolveExit) => {
      process.once("close", (code, signal) => {
        this.exit = { code, signal };
        resolveExit(this.exit);
      });
    });
  }

  output(): string {
    return `stdout:\n${this.stdout}\nstderr:\n${this.stderr}`;
  }

  /** Sends `signal` and waits for the exit, failing at the deadline. */
  async kill(signal: NodeJS.Signals): Promise<ExitInfo> {
    if (this.exit) return this.exit;
    this.process.kill(signal);
    return this.waitForExit();
  }

  async waitForExit(timeoutMs = EXIT_TIMEOUT_MS): Promise<ExitInfo> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // A hung child must not outlive the test.
        this.process.kill("SIGKILL");
        reject(new Error(`process ${this.process.pid} did not exit within ${timeoutMs} ms:\n${this.output()}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function spawnCli(args: string[], env: Env): Child {
  assertBuilt();
  return new Child(spawn(process.execPath, [CLI_PATH, ...args], { env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] }));
}

export interface ServerProcess {
  url: string;
  pid: number;
  env: Env;
  /** Milliseconds from spawn to the first 200 from /readyz. */
  readyMs: number;
  output(): string;
  /** Sends `signal` without waiting for the exit. */
  signal(signal: NodeJS.Signals): void;
  kill(signal: NodeJS.Signals): Promise<ExitInfo>;
  waitForExit(timeoutMs?: number): Promise<ExitInfo>;
}

async function isReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`);
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Spawns `serve` on `port` and resolves once /readyz answers 200; null when the port was taken. */
async function trySpawnServer(env: Env, port: number): Promise<ServerProcess | null> {
  // Shedding on event-loop delay is off unless a test asks for it: these servers share 2 cores with
  // the test runner and other servers, and a 503 from a stall elsewhere is not what they test.
  const fullEnv: Env = { HOST: "127.0.0.1", LOG_LEVEL: "warn", ...NO_LOAD_SHEDDING, ...env, PORT: String(port) };
  const startedMs = performance.now();
  const child = spawnCli(["serve"], fullEnv);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await isReady(url))) {
    if (child.exit) {
      if (child.output().includes("EADDRINUSE")) return null;
      throw new Error(`server exited during start-up (${JSON.stringify(child.exit)}):\n${child.output()}`);
    }
    if (Date.now() > deadline) {
      child.process.kill("SIGKILL");
      throw new Error(`server not ready within ${READY_TIMEOUT_MS} ms:\n${child.output()}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
  return {
    url,
    pid: child.process.pid!,
    env: fullEnv,
    readyMs: Math.round(performance.now() - startedMs),
    output: () => child.output(),
    signal: (signal) => void child.process.kill(signal),
    kill: (signal) => child.kill(signal),
    waitForExit: (timeoutMs) => child.waitForExit(timeoutMs),
  };
}

/** Starts `node dist/src/cli/main.js serve` with `env` (PORT is chosen here) and waits until ready. */
export async function startServerProcess(env: Env): Promise<ServerProcess> {
  for (let attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
    const server = await trySpawnServer(env, await freePort());
    if (server) return server;
  }
  throw new Error(`no free port after ${PORT_ATTEMPTS} attempts`);
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion and returns its exit code and output. */
export async function runCli(args: string[], env: Env, timeoutMs = EXIT_TIMEOUT_MS): Promise<CliResult> {
  const child = spawnCli(args, env);
  const exit = await child.waitForExit(timeoutMs);
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}

export interface ApiResponse {
  status: number;
  body: Record<string, unknown>;
}

/** One JSON call to the API; `token` is an operator bearer token or the admin token. */
export async function call(base: string, method: string, path: string, token: string | null, body?: unknown): Promise<ApiResponse> {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** Like `call`, but any status other than 200 is an error naming the call and the body. */
export async function callOk(
  base: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const response = await call(base, method, path, token, body);
  if (response.status !== 200) throw new Error(`${method} ${path} → ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

export async function setOperator(base: string, adminToken: string, contract: string, operator: string): Promise<void> {
  await callOk(base, "PUT", `/v1/admin/contracts/${contract}/operator`, adminToken, { operatorAddress: operator });
}

export async function creditPoints(
  base: string,
  adminToken: string,
  address: string,
  creditId: string,
  pointType: string,
  points: string,
): Promise<void> {
  await callOk(base, "PUT", `/v1/admin/contracts/${address}/credits/${creditId}`, adminToken, { pointType, points });
}

/** One contract of a test server: the admin token, its operator's private key, and the points credited to it. */
export interface OperatedContract {
  adminToken: string;
  operatorKey: `0x${string}`;
  contract: string;
  points: string;
}

/**
 * The built server over a fresh SQLite file in a temporary directory (MINIMUM_FINALIZE_SECONDS 1),
 * with `operated.contract` registered to its operator and credited `points` PHASE2_POINTS; `stop`
 * ends the server and removes the directory.
 */
export async function startOperatedServer(
  dirPrefix: string,
  operated: OperatedContract,
): Promise<{ dir: string; server: ServerProcess; stop(): Promise<void> }> {
  assertBuilt();
  const dir = tempDir(dirPrefix);
  const server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: operated.adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
  });
  const stop = async () => {
    await server.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await setOperator(server.url, operated.adminToken, operated.contract, privateKeyToAccount(operated.operatorKey).address);
    await creditPoints(server.url, operated.adminToken, operated.contract, "grant-1", "PHASE2_POINTS", operated.points);
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, server, stop };
}

/** Challenge, personal_sign with viem, solve: returns the operator's bearer token for `contract`. */
export async function signIn(base: string, contract: string, operator: PrivateKeyAccount): Promise<string> {
  const challenge = await callOk(base, "POST", "/v1/dapp-auth/challenge", null, {
    contractAddress: contract,
    operatorAddress: operator.address,
  });
  const signature = await operator.signMessage({ message: String(challenge.message) });
  const solved = await callOk(base, "POST", "/v1/dapp-auth/solve", null, { challengeData: challenge.challengeData, signature });
  return String(solved.bearerToken);
}

export interface BatchSummary {
  id: string;
  status: string;
  pointType: string;
  points: string;
  transferCount: number;
  finalizeAt: string;
  finalizedAt: string | null;
}

/** Pages through every batch of `contract` (oldest first). */
export async function listAllBatches(base: string, token: string, contract: string): Promise<BatchSummary[]> {
  const batches: BatchSummary[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `sort=ASC&limit=1000${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const page = await callOk(base, "GET", `/v1/contracts/${contract}/batches?${query}`, token);
    batches.push(...(page.batches as BatchSummary[]));
    cursor = page.cursor as string | null;
  } while (cursor !== null);
  return batches;
}
