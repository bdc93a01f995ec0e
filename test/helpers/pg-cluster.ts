import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./process.js";

/**
 * PostgreSQL clusters of a test's own (initdb on a free port, in a temporary folder), for what a
 * shared server must not suffer: a shutdown under load, a server set read-only, a streaming
 * standby (pg_basebackup -R) promoted in a failover. The binaries are Debian's PostgreSQL 15 (or
 * PG_BIN); initdb and the server run as the `postgres` user (as root, through runuser).
 */

export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";
const RUN_AS = "postgres";
const run = promisify(execFile);

function missingTool(): string | null {
  if (!existsSync(join(PG_BIN, "initdb"))) return `no ${PG_BIN}/initdb (apt-get install postgresql-15, or set PG_BIN)`;
  const uid = process.getuid?.();
  if (uid !== 0 && process.env.USER !== RUN_AS) return "initdb must run as root (through runuser) or as the postgres user";
  return null;
}

const MISSING = missingTool();
/** Why the tests that need clusters of their own are skipped, or null when they run. */
export const CLUSTER_SKIP_REASON = MISSING === null ? null : `PostgreSQL clusters of the test's own are unavailable: ${MISSING}`;

export interface Cluster {
  port: number;
  dataDir: string;
  /** postgres://postgres@127.0.0.1:port/`database` (trust authentication). */
  url(database?: string): string;
  /** One statement on a fresh connection. */
  query<R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<R[]>;
  start(): Promise<void>;
  /** pg_ctl stop -m `mode`: fast disconnects every session (57P01), immediate is a crash. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** A streaming standby of this cluster (pg_basebackup -R), started on a port of its own. */
  standby(): Promise<Cluster>;
  promote(): Promise<void>;
  /** Stops the server and deletes its folder. */
  remove(): Promise<void>;
}

async function asPostgres(command: string, args: string[]): Promise<string> {
  const full = join(PG_BIN, command);
  const { stdout } = process.getuid?.() === 0 ? await run("runuser", ["-u", RUN_AS, "--", full, ...args]) : await run(full, args);
  return stdout;
}

function ownedFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (process.getuid?.() === 0) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
  }
  return dir;
}

let ids: { uid: number; gid: number } | null = null;
function postgresIds(): { uid: number; gid: number } {
  if (ids) return ids;
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith(`${RUN_AS}:`));
  if (!line) throw new Error(`no ${RUN_AS} user`);
  const fields = line.split(":");
  ids = { uid: Number(fields[2]), gid: Number(fields[3]) };
  return ids;
}

/**
 * `defaults`: PostgreSQL's own settings (fsync and autovacuum on, as production runs), for the
 * suites that must see what a default cluster does (test/global-setup.ts); otherwise fsync off and
 * fewer connections, for the clusters a test starts, stops and fails over.
 */
function clusterAt(dataDir: string, port: number, defaults = false): Cluster {
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const options = `-p ${port} -k ${dataDir} -c listen_addresses=127.0.0.1${defaults ? "" : " -c fsync=off -c max_connections=60"}`;
  const cluster: Cluster = {
    port,
    dataDir,
    url,
    query: async <R extends pg.QueryResultRow>(sql: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString: url() });
      client.on("error", () => undefined);
      await client.connect();
      try {
        return (await client.query<R>(sql, values)).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    start: async () => void (await asPostgres("pg_ctl", ["-D", dataDir, "-o", options, "-l", join(dataDir, "server.log"), "-w", "start"])),
    stop: async (mode = "fast") => void (await asPostgres("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "stop"])),
    standby: async () => {
      const standbyDir = ownedFolder("pl-standby-");
      await asPostgres("pg_basebackup", ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-D", standbyDir, "-R", "-X", "stream"]);
      // The standby's settings are the primary's kind: a standby may not allow fewer connections than its primary.
      const standby = clusterAt(standbyDir, await freePort(), defaults);
      await standby.start();
      return standby;
    },
    promote: async () => void (await asPostgres("pg_ctl", ["-D", dataDir, "-w", "promote"])),
    remove: async () => {
      await cluster.stop("immediate").catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** A new cluster, started, with trust authentication for local TCP (replication included, as initdb writes it). */
export async function startCluster(options: { defaults?: boolean } = {}): Promise<Cluster> {
  const dataDir = ownedFolder("pl-cluster-");
  await asPostgres("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"]);
  const cluster = clusterAt(dataDir, await freePort(), options.defaults);
  await cluster.start();
  return cluster;
}

/**
 * Moves the cluster's next transaction id to `margin` below the next power of ten at least
 * 2 × `margin` ahead, so that a load of more than `margin` transactions makes ids cross it (where
 * their text and numeric orders part, issue 37). Each subtransaction that writes takes an id.
 */
export async function burnTransactionIdsToBoundary(url: string, margin: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ next: string }>("SELECT pg_current_xact_id()::text AS next");
    const next = Number(rows[0]!.next);
    let boundary = 10;
    while (boundary - next < 2 * margin) boundary *= 10;
    await client.query("CREATE TEMP TABLE burn (i int)");
    await client.query(
      `DO $$ BEGIN FOR i IN 1..${boundary - margin - next} LOOP BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$`,
    );
    return boundary;
  } finally {
    await client.end();
  }
}
