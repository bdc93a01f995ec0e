import { spawn, type ChildProcess } from "node:child_process";
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { pollUntil } from "./stats.js";

/** The CLI the bench starts, exactly as `npm start` would. */
export const CLI_PATH = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
/** How long a child may take to answer /readyz before the bench gives up. */
const READY_TIMEOUT_MS = 30_000;
/** Bound on a graceful stop; past it the child is killed. */
const STOP_TIMEOUT_MS = 20_000;
/** Output kept from each child, to explain a failure. */
const OUTPUT_TAIL_BYTES = 8192;

/** The port a listener bound on 127.0.0.1 (0: one the kernel picks), closed again; null when it could not bind. */
function probePort(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(null));
    probe.listen(port, "127.0.0.1", () => {
      const address = probe.address();
      const bound = typeof address === "object" && address ? address.port : null;
      probe.close(() => resolve(bound));
    });
  });
}

export async function freePort(): Promise<number> {
  const port = await probePort(0);
  if (port === null) throw new Error("could not bind a port on 127.0.0.1");
  return port;
}

/** Tries left for a port below the ephemeral range before giving up (each a random port, bind-checked). */
const UNEPHEMERAL_PORT_TRIES = 50;
/** The lowest port handed out below the ephemeral range: above the well-known and registered services most hosts run. */
const UNEPHEMERAL_PORT_FLOOR = 20_000;

/** Ports this process handed out: two callers (a stack's ten ports) never get the same one before either binds it. */
const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range (ip_local_port_range), read once. */
let ephemeralLow: number | undefined;

/**
 * A free port below the kernel's ephemeral range (ip_local_port_range), for a child that binds
 * it many seconds later (a Patroni standby's PostgreSQL binds after its base backup): outgoing
 * connections and `listen(0)` take their ports from the ephemeral range, so in a busy test run a
 * port from freePort() can be taken by another process's connection before the child binds it;
 * one from here can only be taken by another caller of this function.
 */
export async function portBelowEphemeral(): Promise<number> {
  ephemeralLow ??= Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  const ceiling = ephemeralLow > UNEPHEMERAL_PORT_FLOOR + 1000 ? ephemeralLow : 32_768;
  for (let attempt = 0; attempt < UNEPHEMERAL_PORT_TRIES; attempt++) {
    const port = UNEPHEMERAL_PORT_FLOOR + randomInt(ceiling - UNEPHEMERAL_PORT_FLOOR);
    if (handedOut.has(port) || (await probePort(port)) === null) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port in ${UNEPHEMERAL_PORT_FLOOR}-${ceiling - 1} after ${UNEPHEMERAL_PORT_TRIES} tries`);
}

export interface ChildService {
  name: string;
  url: string;
  pid: number;
  /** Milliseconds from spawn to the first successful readiness answer. */
  startupToReadyMs: number;
  /** Peak resident set so far (VmHWM), in MB. */
  peakRssMb(): number | null;
  /** Current resident set (VmRSS), in MB. */
  rssMb(): number | null;
  /** SIGTERM, then wait for a clean exit; returns the peak RSS read just before the signal. */
  stop(): Promise<number | null>;
  output(): string;
}

function readStatusMb(pid: number, field: "VmHWM" | "VmRSS"): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Starts a Node script as a child with `env`, waits until `readyPath` answers 200 (with a
 * deadline) and returns a handle. Output is kept (tail only) and shown if the child dies.
 */
export async function startChild(options: {
  name: string;
  script: string;
  args?: string[];
  env: Record<string, string>;
  port: number;
  readyPath: string;
  nodeArgs?: string[];
}): Promise<ChildService> {
  const startedMs = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script, ...(options.args ?? [])], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let dead = false;
  void exited.then(() => (dead = true));
  const url = `http://127.0.0.1:${options.port}`;
  await waitReady(options.name, url + options.readyPath, () => (dead ? tail : null)).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  const startupToReadyMs = performance.now() - startedMs;
  return handle(options.name, url, child, exited, startupToReadyMs, () => tail);
}

/** Polls `readyUrl` until it answers 200; `deadOutput` returns the child's output once it has exited. */
function waitReady(name: string, readyUrl: string, deadOutput: () => string | null): Promise<boolean> {
  return pollUntil(
    `${name} to be ready`,
    async () => {
      const output = deadOutput();
      if (output !== null) throw new Error(`${name} exited during start-up:\n${output}`);
      try {
        const response = await fetch(readyUrl);
        await response.arrayBuffer();
        return response.ok ? true : undefined;
      } catch {
        return undefined;
      }
    },
    10,
    Date.now() + READY_TIMEOUT_MS,
  );
}

function handle(
  name: string,
  url: string,
  child: ChildProcess,
  exited: Promise<number | null>,
  startupToReadyMs: number,
  output: () => string,
): ChildService {
  const pid = child.pid!;
  let stopping: Promise<number | null> | null = null;
  return {
    name,
    url,
    pid,
    startupToReadyMs,
    peakRssMb: () => readStatusMb(pid, "VmHWM"),
    rssMb: () => readStatusMb(pid, "VmRSS"),
    output,
    stop: () =>
      (stopping ??= (async () => {
        const peak = readStatusMb(pid, "VmHWM");
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        const code = await exited;
        clearTimeout(timer);
        if (code !== 0) process.stderr.write(`bench: ${name} exited with code ${code}\n${output()}\n`);
        return peak;
      })()),
  };
}

/** The value of one metric (summed over label sets) from Prometheus text, or 0 when absent. */
export function metricValue(text: string, name: string): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    const value = Number(rest.slice(rest.lastIndexOf(" ") + 1));
    if (Number.isFinite(value)) total += value;
  }
  return total;
}

export async function scrapeMetrics(service: Pick<ChildService, "url">): Promise<string> {
  const response = await fetch(`${service.url}/metrics`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /metrics → ${response.status}: ${text.slice(0, 200)}`);
  return text;
}
