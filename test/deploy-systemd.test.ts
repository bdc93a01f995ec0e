/**
 * deploy/points-ledger.service and deploy/points-ledger.env.example (issue 30, "a supervisor as a
 * file that is tested"): systemd's own checker accepts the unit, it has the keys an operator
 * relies on (restart on failure, an environment file, hardening, SIGTERM and a stop timeout), the
 * example environment is a configuration the service accepts, and the service configured with it
 * stops on SIGTERM within the unit's TimeoutStopSec — also when a client holds a request open.
 *
 * No systemd runs as PID 1 here, so the unit is not started by systemd; the stop is tested on the
 * same process the unit starts (`node dist/src/cli/main.js serve`) with the same signal.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../src/config.js";
import { STOPPED_LINE } from "../src/server.js";
import { lastValue, parseEnvFile, parseUnit, readDeployFile, REPO_ROOT, timeSpanSeconds, which, type UnitFile } from "./helpers/deploy.js";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";
import { isEvent, openSse } from "./helpers/sse.js";

const UNIT_NAME = "points-ledger.service";
const unitText = readDeployFile(UNIT_NAME);
const unit: UnitFile = parseUnit(unitText);
const exampleEnv = parseEnvFile(readDeployFile("points-ledger.env.example"));
const timeoutStopMs = timeSpanSeconds(lastValue(unit, "Service", "TimeoutStopSec") ?? "90s") * 1000;
/** The service's own bound on a graceful stop, as the example environment sets it (config.ts's default otherwise). */
const shutdownTimeoutMs = loadConfig(exampleEnv).shutdownTimeoutMs;

const systemdAnalyze = which("systemd-analyze");
const NO_SYSTEMD_ANALYZE =
  "systemd-analyze is not installed (Debian package `systemd`): the unit is only checked by parsing it here, not by systemd's own verifier";
if (!systemdAnalyze) console.warn(`deploy-systemd: ${NO_SYSTEMD_ANALYZE}`);

let dir: string;
const servers: ServerProcess[] = [];
beforeAll(() => {
  dir = tempDir("deploy-systemd");
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The unit as systemd-analyze should read it: as shipped, except that its Node.js path is this
 * machine's when /usr/bin/node is absent (verify checks that ExecStart's program exists).
 */
function unitForThisMachine(): string {
  if (which("node") === "/usr/bin/node" || process.execPath === "/usr/bin/node") return unitText;
  return unitText.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `);
}

describe("deploy/points-ledger.service, checked by systemd-analyze", () => {
  it.skipIf(!systemdAnalyze)("`systemd-analyze verify` accepts it without a single warning", () => {
    const path = join(dir, UNIT_NAME);
    writeFileSync(path, unitForThisMachine());
    const result = spawnSync(systemdAnalyze!, ["verify", path], { encoding: "utf8", cwd: dir });
    // verify exits 0 on an unknown key or a bad value, and only warns: any output is a fault.
    expect({ status: result.status, stderr: result.stderr, stdout: result.stdout }).toEqual({ status: 0, stderr: "", stdout: "" });
  });

  it.skipIf(!systemdAnalyze)("`systemd-analyze security` rates its exposure 2.0 or lower (OK)", () => {
    const path = join(dir, UNIT_NAME);
    writeFileSync(path, unitForThisMachine());
    const result = spawnSync(systemdAnalyze!, ["security", "--offline=yes", "--threshold=20", path], { encoding: "utf8", cwd: dir });
    const overall = /Overall exposure level for \S+: ([\d.]+)/.exec(result.stdout);
    expect(overall, result.stdout + result.stderr).not.toBeNull();
    expect(Number(overall![1])).toBeLessThanOrEqual(2);
    expect(result.status, result.stdout).toBe(0);
  });
});

describe("deploy/points-ledger.service, its keys", () => {
  const service = (key: string) => lastValue(unit, "Service", key);

  it("restarts on failure, within a start limit", () => {
    expect(service("Restart")).toBe("on-failure");
    expect(timeSpanSeconds(service("RestartSec") ?? "0")).toBeGreaterThan(0);
    expect(lastValue(unit, "Unit", "StartLimitBurst")).toBeDefined();
    expect(lastValue(unit, "Install", "WantedBy")).toBe("multi-user.target");
  });

  it("reads its settings from an environment file and runs the built CLI's `serve` as an unprivileged user", () => {
    expect(service("EnvironmentFile")).toBe("/etc/points-ledger/points-ledger.env");
    expect(service("User")).toBe("points-ledger");
    const execStart = service("ExecStart")!.split(/\s+/);
    expect(execStart[0]).toBe("/usr/bin/node");
    const bin = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { bin: Record<string, string> }).bin;
    expect(execStart.slice(1)).toEqual([join(service("WorkingDirectory")!, bin["points-ledger"]!), "serve"]);
  });

  it("stops with SIGTERM and gives the service longer than its own SHUTDOWN_TIMEOUT_MS", () => {
    expect(service("KillSignal")).toBe("SIGTERM");
    expect(service("KillMode")).toBe("mixed");
    // A second of margin: the service's own timer exits 1 before systemd's SIGKILL.
    expect(shutdownTimeoutMs + 1000).toBeLessThanOrEqual(timeoutStopMs);
  });

  it("turns on systemd's hardening and may write only to its data folder", () => {
    const expected: Record<string, string> = {
      NoNewPrivileges: "yes",
      ProtectSystem: "strict",
      ProtectHome: "yes",
      PrivateTmp: "yes",
      PrivateDevices: "yes",
      PrivateMounts: "yes",
      ProtectKernelTunables: "yes",
      ProtectKernelModules: "yes",
      ProtectKernelLogs: "yes",
      ProtectControlGroups: "yes",
      ProtectClock: "yes",
      ProtectHostname: "yes",
      RestrictNamespaces: "yes",
      RestrictRealtime: "yes",
      RestrictSUIDSGID: "yes",
      LockPersonality: "yes",
      CapabilityBoundingSet: "",
      SystemCallArchitectures: "native",
      StateDirectory: "points-ledger",
      ReadWritePaths: "/var/lib/points-ledger",
    };
    const actual = Object.fromEntries(Object.keys(expected).map((key) => [key, service(key)]));
    expect(actual).toEqual(expected);
    expect(unit.Service?.SystemCallFilter).toContain("@system-service");
    // V8 compiles to executable memory: this option would kill the process at its first JIT.
    expect(service("MemoryDenyWriteExecute")).toBeUndefined();
  });
});

describe("deploy/points-ledger.env.example", () => {
  it("is a configuration the service accepts, writing its SQLite database in the unit's data folder", () => {
    const config = loadConfig(exampleEnv);
    expect(config.databaseUrl).toBe("sqlite:/var/lib/points-ledger/points.db");
    expect(config.host).toBe("127.0.0.1");
    expect(config.trustProxy).toBe("127.0.0.1");
    expect(exampleEnv.ADMIN_TOKEN, "the example must not ship a usable admin token").toBeUndefined();
  });
});

/** A PUT whose headers the server accepted (100 Continue) and whose body the test sends later: a request in flight. */
async function holdPut(agent: Agent, url: string, path: string, token: string, body: unknown) {
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
  await accepted;
  req.write(payload.subarray(0, payload.length >> 1));
  return { finish: () => req.end(payload.subarray(payload.length >> 1)), response };
}

/** The built server with the example environment; only where it listens, its database and the admin token differ. */
async function startAsTheUnitWould(name: string): Promise<{ server: ServerProcess; contract: string; token: string }> {
  assertBuilt();
  const adminToken = newAdminToken();
  const env: Env = { ...exampleEnv, DATABASE_URL: sqliteUrl(dir, `${name}.db`), ADMIN_TOKEN: adminToken, MINIMUM_FINALIZE_SECONDS: "1" };
  const server = await startServerProcess(env);
  servers.push(server);
  const contract = randomAddress();
  const operator = privateKeyToAccount(generatePrivateKey());
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "grant", "PHASE2_POINTS", "1000");
  return { server, contract, token: await signIn(server.url, contract, operator) };
}

const batch = (count: number) => ({
  pointType: "PHASE2_POINTS",
  secondsToFinalize: 60,
  transfers: Array.from({ length: count }, () => ({ toAddress: randomAddress(), points: "0.01" })),
});

describe("stopping the service as the unit does (SIGTERM, then SIGKILL after TimeoutStopSec)", () => {
  it("with an event stream open and a request in flight: answers the request, ends the stream and exits 0 well within TimeoutStopSec", async () => {
    const { server, contract, token } = await startAsTheUnitWould("graceful");
    const stream = await openSse(server.url, `/v1/contracts/${contract}/events/stream`, { authorization: `Bearer ${token}` });
    onTestFinished(() => stream.close());
    expect(stream.status).toBe(200);
    expect((await stream.next(isEvent)).event).toBe("operator.changed");
    const agent = new Agent({ keepAlive: true, timeout: 60_000 });
    onTestFinished(() => agent.destroy());
    const held = await holdPut(agent, server.url, `/v1/contracts/${contract}/batches/in-flight`, token, batch(500));

    const signalledMs = performance.now();
    server.signal("SIGTERM");
    held.finish();
    const answer = await held.response;
    expect(answer, server.output()).toEqual({ status: 200, body: JSON.stringify({ success: true, batchId: "in-flight" }) });
    // The stream was open and live before the signal; the server ends it rather than wait for the client.
    await stream.ended;
    const exit = await server.waitForExit(timeoutStopMs);
    const stopMs = performance.now() - signalledMs;
    console.log(`stopped ${Math.round(stopMs)} ms after SIGTERM (TimeoutStopSec ${timeoutStopMs} ms)`);
    expect(exit, server.output()).toEqual({ code: 0, signal: null });
    expect(server.output()).toContain(STOPPED_LINE);
    // Finished by the graceful path, not by the service's own shutdown timer.
    expect(stopMs).toBeLessThan(shutdownTimeoutMs);
  });

  it("when a client never finishes its request: the service gives up after SHUTDOWN_TIMEOUT_MS and exits 1 by itself, before TimeoutStopSec", async () => {
    const { server, contract, token } = await startAsTheUnitWould("stuck");
    const agent = new Agent({ keepAlive: true, timeout: 60_000 });
    onTestFinished(() => agent.destroy());
    const held = await holdPut(agent, server.url, `/v1/contracts/${contract}/batches/never-finished`, token, batch(10));
    held.response.catch(() => undefined);

    const signalledMs = performance.now();
    server.signal("SIGTERM");
    const exit = await server.waitForExit(timeoutStopMs);
    const stopMs = performance.now() - signalledMs;
    console.log(
      `gave up ${Math.round(stopMs)} ms after SIGTERM (SHUTDOWN_TIMEOUT_MS ${shutdownTimeoutMs}, TimeoutStopSec ${timeoutStopMs} ms)`,
    );
    expect(exit, server.output()).toEqual({ code: 1, signal: null });
    expect(stopMs).toBeGreaterThanOrEqual(shutdownTimeoutMs - 100);
    expect(stopMs).toBeLessThan(timeoutStopMs);
  }, 60_000);
});
