import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { portBelowEphemeral } from "./server-process.js";
import { pollUntil, sleep } from "./stats.js";

/**
 * deploy/patroni/ as shipped, run on one machine (issue 38): one etcd, three Patroni nodes running
 * PostgreSQL 15 and HAProxy in front, from those files with only the ports and folders changed.
 * Shared by test/patroni-failover.test.ts and bench/failover.ts. Each Patroni's output (with its
 * PostgreSQL's) goes to <dir>/nodeN.log: where the time of a failover went is read from there.
 * The processes run as the `postgres` user through runuser, so this needs root.
 */

export interface StackTools {
  patroni: string;
  etcd: string;
  haproxy: string;
}

/** The tools on PATH, or the names of those missing. */
export function findStackTools(): StackTools | string[] {
  const found = ["patroni", "etcd", "haproxy"].map((name) => {
    const result = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
    return [name, result.status === 0 ? result.stdout.trim() : ""] as const;
  });
  const missing = found.filter(([, path]) => path === "").map(([name]) => name);
  return missing.length > 0 ? missing : (Object.fromEntries(found) as unknown as StackTools);
}

export interface StackNode {
  name: string;
  restPort: number;
  pgPort: number;
  dataDir: string;
  logFile: string;
}

export interface Member {
  name: string;
  role: string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

export interface Stack {
  dir: string;
  nodes: StackNode[];
  writePort: number;
  readPort: number;
  /** postgres://postgres:…@HAProxy's write port/`database`. */
  url(database: string): string;
  /** The members as the first node that answers GET /cluster sees them. */
  members(): Promise<Member[] | undefined>;
  /** A leader, running, and both standbys streaming, one of them synchronous (bounded wait). */
  waitHealthy(timeoutMs: number): Promise<Member[]>;
  /** SIGKILL of the node's Patroni and PostgreSQL together; returns when it was done (epoch ms). */
  kill(node: StackNode): number;
  /** Starts the node's Patroni again (it rejoins as a standby, rewound if need be). */
  start(node: StackNode): void;
  /** The node's log lines (Patroni's and its PostgreSQL's), with their time (epoch ms). */
  logLines(node: StackNode): { atMs: number; text: string }[];
  /** Stops everything and deletes the folder; with `keepLogsIn`, copies the nodes' logs there first. */
  stop(keepLogsIn?: string): Promise<void>;
}

function childPid(parent: number): number | null {
  const result = spawnSync("ps", ["-o", "pid=", "--ppid", String(parent)], { encoding: "utf8" });
  const pid = Number(result.stdout.trim().split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function killQuietly(pid: number | null, signal: NodeJS.Signals): void {
  if (pid === null) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function clusterAt(restPort: number): Promise<Member[] | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${restPort}/cluster`, { signal: AbortSignal.timeout(1000) });
    return response.ok ? ((await response.json()) as { members: Member[] }).members : undefined;
  } catch {
    return undefined;
  }
}

/** Timed lines (Patroni's and PostgreSQL's, not the REST API's tracebacks) of each node's log a failed wait for health shows. */
const LOG_TAIL_LINES = 25;

/** "2026-12-06 08:23:03,123 INFO: …" (Patroni's default format, local time). */
const PATRONI_LINE = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3}) (.*)$/;
/** "2026-12-06 08:23:03.123 UTC [123] LOG:  …" (PostgreSQL's default log_line_prefix, '%m [%p] '). */
const POSTGRES_LINE = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)\.(\d{3}) UTC (.*)$/;

function timedLine(line: string): { atMs: number; text: string }[] {
  const patroni = PATRONI_LINE.exec(line);
  if (patroni) return [{ atMs: new Date(`${patroni[1]}T${patroni[2]}.${patroni[3]}`).getTime(), text: patroni[4]! }];
  const postgres = POSTGRES_LINE.exec(line);
  if (postgres) return [{ atMs: Date.parse(`${postgres[1]}T${postgres[2]}.${postgres[3]}Z`), text: postgres[4]! }];
  return [];
}

/**
 * `parameters`: PostgreSQL settings added to patroni.yml's bootstrap.dcs.postgresql.parameters
 * (for measuring one against the file as shipped; none by default).
 */
export async function startStack(tools: StackTools, deployDir: string, parameters: Record<string, string> = {}): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), "pl-patroni-"));
  const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout);
  const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout);
  chownSync(dir, uid, gid);
  const password = `su-${randomBytes(6).toString("hex")}`;
  const processes: ChildProcess[] = [];
  const runners = new Map<string, ChildProcess>();

  const etcdPort = await portBelowEphemeral();
  const peerUrl = `http://127.0.0.1:${await portBelowEphemeral()}`;
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  processes.push(
    spawn(
      tools.etcd,
      [
        ...["--name", "e", "--data-dir", join(dir, "etcd"), "--listen-client-urls", etcdUrl, "--advertise-client-urls", etcdUrl],
        ...["--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", `e=${peerUrl}`],
      ],
      { stdio: "ignore" },
    ),
  );
  const shipped = readFileSync(join(deployDir, "patroni", "patroni.yml"), "utf8");
  const added = Object.entries(parameters).map(([name, value]) => `\n        ${name}: ${JSON.stringify(value)}`);
  const config = shipped
    .replace("hosts: 127.0.0.1:2379", `hosts: 127.0.0.1:${etcdPort}`)
    .replace(/^( +max_standby_streaming_delay: .*)$/m, (line) => line + added.join(""));
  if (added.length > 0 && config === shipped.replace("hosts: 127.0.0.1:2379", `hosts: 127.0.0.1:${etcdPort}`)) {
    throw new Error("patroni.yml has no max_standby_streaming_delay line to add parameters after");
  }
  writeFileSync(join(dir, "patroni.yml"), config);

  const nodes: StackNode[] = [];
  for (const index of [1, 2, 3]) {
    nodes.push({
      name: `node${index}`,
      restPort: await portBelowEphemeral(),
      pgPort: await portBelowEphemeral(),
      dataDir: join(dir, `node${index}`),
      logFile: join(dir, `node${index}.log`),
    });
  }
  const start = (node: StackNode) => {
    const index = nodes.indexOf(node) + 1;
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      PATRONI_NAME: node.name,
      PATRONI_RESTAPI_LISTEN: `127.0.0.1:${node.restPort}`,
      PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${node.restPort}`,
      PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${node.pgPort}`,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${node.pgPort}`,
      PATRONI_POSTGRESQL_DATA_DIR: node.dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(dir, `pgpass${index}`),
      PATRONI_POSTGRESQL_PARAMETERS_UNIX_SOCKET_DIRECTORIES: dir,
      PATRONI_SUPERUSER_PASSWORD: password,
      PATRONI_REPLICATION_PASSWORD: `rep-${password}`,
      PATRONI_REWIND_PASSWORD: `rw-${password}`,
    };
    const log = openSync(node.logFile, "a");
    const runner = spawn("runuser", ["-u", "postgres", "--", tools.patroni, join(dir, "patroni.yml")], {
      env,
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    runners.set(node.name, runner);
  };
  nodes.forEach(start);

  // HAProxy from deploy/patroni/haproxy.cfg with these ports.
  const writePort = await portBelowEphemeral();
  const readPort = await portBelowEphemeral();
  let haproxyConfig = readFileSync(join(deployDir, "patroni", "haproxy.cfg"), "utf8")
    .replace("bind 127.0.0.1:5000", `bind 127.0.0.1:${writePort}`)
    .replace("bind 127.0.0.1:5001", `bind 127.0.0.1:${readPort}`);
  nodes.forEach((node, at) => {
    haproxyConfig = haproxyConfig
      .replaceAll(`127.0.0.1:${5433 + at}`, `127.0.0.1:${node.pgPort}`)
      .replaceAll(`check port ${8008 + at}`, `check port ${node.restPort}`);
  });
  writeFileSync(join(dir, "haproxy.cfg"), haproxyConfig);
  processes.push(spawn(tools.haproxy, ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: "ignore" }));

  const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${writePort}/${database}`;
  const members = async () => {
    for (const node of nodes) {
      const seen = await clusterAt(node.restPort);
      if (seen) return seen;
    }
    return undefined;
  };
  const stack: Stack = {
    dir,
    nodes,
    writePort,
    readPort,
    url,
    members,
    waitHealthy: async (timeoutMs) => {
      let seen: Member[] | undefined;
      try {
        return await pollUntil(
          "a leader and two streaming standbys, one synchronous",
          async () => {
            seen = await members();
            const leader = seen?.find((member) => member.role === "leader" && member.state === "running");
            const standbys = seen?.filter((member) => member.role !== "leader" && ["running", "streaming"].includes(member.state)) ?? [];
            const timeline = leader?.timeline;
            const caughtUp = standbys.filter((member) => member.timeline === undefined || member.timeline === timeline);
            return leader && caughtUp.length === 2 && caughtUp.some((member) => member.role === "sync_standby") ? seen : undefined;
          },
          250,
          Date.now() + timeoutMs,
        );
      } catch (error) {
        // What the wait saw last and each node's last lines: the reason is in them, and the folder is deleted at stop.
        const tails = nodes.map((node) => {
          const lines = stack.logLines(node).slice(-LOG_TAIL_LINES);
          return `${node.name}:\n${lines.map((line) => `${new Date(line.atMs).toISOString()} ${line.text}`).join("\n") || "(no log line)"}`;
        });
        throw new Error(
          `${(error as Error).message} after ${timeoutMs} ms; members: ${JSON.stringify(seen ?? null)}\n${tails.join("\n")}`,
          { cause: error },
        );
      }
    },
    kill: (node) => {
      const runner = runners.get(node.name);
      const patroni = runner?.pid === undefined ? null : childPid(runner.pid);
      const postmaster = postmasterPid(node.dataDir);
      const atMs = Date.now();
      killQuietly(patroni, "SIGKILL");
      killQuietly(postmaster, "SIGKILL");
      return atMs;
    },
    start,
    logLines: (node) => {
      if (!existsSync(node.logFile)) return [];
      return readFileSync(node.logFile, "utf8").split("\n").flatMap(timedLine);
    },
    stop: async (keepLogsIn) => {
      for (const runner of runners.values()) killQuietly(runner.pid === undefined ? null : childPid(runner.pid), "SIGTERM");
      await sleep(3000);
      for (const node of nodes) {
        const runner = runners.get(node.name);
        killQuietly(runner?.pid === undefined ? null : childPid(runner.pid), "SIGKILL");
        killQuietly(postmasterPid(node.dataDir), "SIGKILL");
      }
      for (const child of [...processes, ...runners.values()]) child.kill("SIGKILL");
      if (keepLogsIn !== undefined) {
        for (const node of nodes.filter((candidate) => existsSync(candidate.logFile))) {
          copyFileSync(node.logFile, join(keepLogsIn, `${node.name}.log`));
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/** Creates the database through the write port once the leader takes connections (bounded). */
export async function createDatabase(stack: Stack, database: string, timeoutMs: number): Promise<void> {
  await pollUntil(
    "the write port to reach the leader",
    async () => {
      const client = new pg.Client({ connectionString: stack.url("postgres") });
      client.on("error", () => undefined);
      try {
        await client.connect();
        await client.query(`CREATE DATABASE ${database}`);
        return true;
      } catch {
        return undefined;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    500,
    Date.now() + timeoutMs,
  );
}

/** One statement on a fresh connection through the write port. */
export async function queryStack<R extends pg.QueryResultRow>(stack: Stack, database: string, sql: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: stack.url(database) });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}
