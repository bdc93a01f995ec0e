/**
 * Issue 30, "start-up mistakes in one line": the built `serve` given a port already taken, a
 * PostgreSQL database that does not exist, a SQLite path it cannot open, or a malformed
 * DATABASE_URL exits non-zero with ONE line on stderr saying what is wrong and what to do, and no
 * stack trace. The PostgreSQL case is skipped without DATABASE_URL_TEST.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import { assertBuilt, CLI_PATH, EXIT_TIMEOUT_MS, runCli, tempDir, type CliResult, type Env } from "./helpers/process.js";

/** stderr's one line (the test fails on a second line or any stack frame). */
function oneLine(result: CliResult): string {
  expect(result.stderr.endsWith("\n"), result.stderr).toBe(true);
  const lines = result.stderr.slice(0, -1).split("\n");
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

function serve(env: Env): Promise<CliResult> {
  return runCli(["serve"], { LOG_LEVEL: "warn", PORT: "0", ...env });
}

/** An unprivileged user the tests can run the CLI as when they run as root (who may open any file). */
const NOBODY = { uid: 65534, gid: 65534 };
const IS_ROOT = process.getuid?.() === 0;
/**
 * Whether NOBODY can run the built CLI here: a checkout inside a folder only root may enter (a
 * `mktemp -d` clone) cannot be run as another user, and then these two tests cannot tell anything.
 */
const NOBODY_CAN_RUN =
  !IS_ROOT || spawnSync(process.execPath, ["-e", `require("fs").accessSync(${JSON.stringify(CLI_PATH)})`], NOBODY).status === 0;
const NOBODY_SKIP = NOBODY_CAN_RUN ? "" : " (skipped: user nobody cannot reach the checkout; run it from a folder others may enter)";

/** `serve` as NOBODY when the test runs as root, so file permissions apply; as the test's own user otherwise. */
function serveUnprivileged(env: Env): Promise<CliResult> {
  if (!IS_ROOT) return serve(env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "serve"], {
      env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      ...NOBODY,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve as nobody did not exit within ${EXIT_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, EXIT_TIMEOUT_MS);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("start-up mistakes, each in one line", () => {
  let dir: string;
  let taken: Server;
  let takenPort: number;

  beforeAll(async () => {
    assertBuilt();
    dir = tempDir("startup-errors");
    // Readable by the unprivileged user, so only the permissions a case sets apply.
    chmodSync(dir, 0o755);
    taken = createServer();
    takenPort = await new Promise<number>((resolve) =>
      taken.listen(0, "127.0.0.1", () => resolve((taken.address() as { port: number }).port)),
    );
  });
  afterAll(async () => {
    await new Promise((resolve) => taken?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("the port taken: names the port and PORT=, exits 1", async () => {
    const result = await serve({ DATABASE_URL: `sqlite:${join(dir, "port.db")}`, HOST: "127.0.0.1", PORT: String(takenPort) });
    expect(result.code).toBe(1);
    const line = oneLine(result);
    expect(line).toMatch(new RegExp(`^points-ledger: port ${takenPort} is already in use .*PORT=`));
  });

  it("a malformed DATABASE_URL: names the variable, exits 2, and never prints the password", async () => {
    for (const url of ["mysql://localhost/points", "postgres://ops:s3cret-pw@db.internal:not-a-port/points"]) {
      const result = await serve({ DATABASE_URL: url });
      expect(result.code, url).toBe(2);
      const line = oneLine(result);
      expect(line).toMatch(/^points-ledger: invalid configuration: DATABASE_URL /);
      expect(line).not.toContain("s3cret-pw");
    }
  });

  it("a SQLite path that is a folder: names the path, exits 1", async () => {
    const folder = join(dir, "folder.db");
    mkdirSync(folder);
    const result = await serve({ DATABASE_URL: `sqlite:${folder}` });
    expect(result.code).toBe(1);
    expect(oneLine(result)).toBe(
      `points-ledger: cannot open the SQLite database ${folder} (SQLITE_CANTOPEN): it must be a file (or not exist yet) in a folder this user may read and write; check DATABASE_URL=sqlite:<path> and the permissions`,
    );
  });

  it("a SQLite path under a file (its folder cannot be made): names the path, exits 1", async () => {
    writeFileSync(join(dir, "plain-file"), "");
    const result = await serve({ DATABASE_URL: `sqlite:${join(dir, "plain-file", "ledger.db")}` });
    expect(result.code).toBe(1);
    expect(oneLine(result)).toMatch(/^points-ledger: cannot use the SQLite database .*plain-file\/ledger\.db: mkdir .* failed \(E[A-Z]+\)/);
  });

  it("a file that is not a SQLite database: names it, exits 1", async () => {
    const file = join(dir, "notes.txt");
    writeFileSync(file, "these are not the pages of a database, only a few words of text, long enough to be read\n".repeat(20));
    const result = await serve({ DATABASE_URL: `sqlite:${file}` });
    expect(result.code).toBe(1);
    expect(oneLine(result)).toMatch(new RegExp(`^points-ledger: ${file} is not a points-ledger SQLite database \\(SQLITE_NOTADB\\)`));
  });

  it.skipIf(!NOBODY_CAN_RUN)(`a SQLite database in a folder this user may not write: names the path, exits 1${NOBODY_SKIP}`, async () => {
    const locked = join(dir, "locked");
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const result = await serveUnprivileged({ DATABASE_URL: `sqlite:${join(locked, "ledger.db")}` });
    expect(result.code, result.stderr).toBe(1);
    expect(oneLine(result)).toMatch(/^points-ledger: cannot open the SQLite database .*locked\/ledger\.db \(SQLITE_CANTOPEN\)/);
  });

  it.skipIf(!NOBODY_CAN_RUN)(`a SQLite database file this user may not read: names the path, exits 1${NOBODY_SKIP}`, async () => {
    const file = join(dir, "unreadable.db");
    const made = await runCli(["migrate"], { DATABASE_URL: `sqlite:${file}` });
    expect(made.code, made.stderr).toBe(0);
    chmodSync(file, 0o000);
    const result = await serveUnprivileged({ DATABASE_URL: `sqlite:${file}` });
    expect(result.code, result.stderr).toBe(1);
    expect(oneLine(result)).toMatch(/^points-ledger: cannot open the SQLite database .*unreadable\.db \(SQLITE_CANTOPEN\)/);
  });

  it.skipIf(!DATABASE_URL_TEST)(
    `a PostgreSQL database that does not exist: names it and how to create it, exits 1${DATABASE_URL_TEST ? "" : ` (${SKIP_REASON})`}`,
    async () => {
      const name = `plt_missing_${randomBytes(4).toString("hex")}`;
      const url = new URL(DATABASE_URL_TEST!);
      url.pathname = `/${name}`;
      const result = await serve({ DATABASE_URL: url.toString() });
      expect(result.code).toBe(1);
      const line = oneLine(result);
      expect(line).toMatch(new RegExp(`^points-ledger: the PostgreSQL database "${name}" does not exist on `));
      expect(line).toContain(`createdb -h ${url.hostname} -p ${url.port || "5432"}`);
      expect(line).toContain(`CREATE DATABASE "${name}";`);
    },
  );
});
