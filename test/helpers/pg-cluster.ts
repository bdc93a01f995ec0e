import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/**
 * A PostgreSQL cluster of the test run's own, made by `initdb` with PostgreSQL's default settings
 * (autovacuum on, the machine's cluster has it off), on its own port and data folder: the
 * production defaults the issue-37 fault hid from. It never touches the machine's own cluster.
 * As root, initdb and the server run as the `postgres` user (PostgreSQL refuses root).
 */

export interface OwnCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  dataDir: string;
  stop(): void;
}

/** Where the server binaries are: pg_config's bindir, else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string | null {
  const fromConfig = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  const candidates = fromConfig.status === 0 ? [fromConfig.stdout.trim()] : [];
  if (existsSync("/usr/lib/postgresql")) {
    const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => `/usr/lib/postgresql/${version}/bin`));
  }
  return candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) ?? null;
}

const isRoot = () => process.getuid?.() === 0;

/** Why an own cluster cannot be made here, or null when it can. */
export function ownClusterUnavailable(): string | null {
  if (postgresBinDir() === null) return "PostgreSQL's server binaries (initdb, pg_ctl) are not installed (Debian: postgresql)";
  if (isRoot() && spawnSync("id", ["-u", "postgres"]).status !== 0)
    return "running as root and there is no `postgres` user to run initdb as";
  return null;
}

function runAsOwner(command: string, args: string[]): void {
  const [file, argv] = isRoot() ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
  execFileSync(file, argv, { stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
}

/** initdb with the defaults (trust auth for the test), started on `port`; `settings` are passed as -c options. */
export async function startOwnCluster(port: number, settings: Record<string, string> = {}): Promise<OwnCluster> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error(ownClusterUnavailable() ?? "no PostgreSQL binaries");
  const root = mkdtempSync(join(tmpdir(), "points-ledger-pg-"));
  if (isRoot())
    chownSync(root, Number(execFileSync("id", ["-u", "postgres"]).toString()), Number(execFileSync("id", ["-g", "postgres"]).toString()));
  const dataDir = join(root, "data");
  runAsOwner(join(bin, "initdb"), ["-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const options = [
    `-p ${port}`,
    `-k ${root}`,
    "-c listen_addresses=127.0.0.1",
    ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
  ];
  runAsOwner(join(bin, "pg_ctl"), ["-D", dataDir, "-o", options.join(" "), "-l", join(root, "server.log"), "-w", "-t", "60", "start"]);
  const stop = () => {
    try {
      runAsOwner(join(bin, "pg_ctl"), ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, dataDir, stop };
}

/** Statements in `url`'s cluster. */
export async function clusterQuery<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Moves the cluster's next transaction id to `margin` below the next power of ten at least
 * 2 × `margin` ahead, so that a load of more than `margin` transactions makes ids cross it (the
 * point where their text and numeric orders part). Each subtransaction that writes takes an id.
 */
export async function burnTransactionIdsToBoundary(url: string, margin: number): Promise<number> {
  const [row] = await clusterQuery<{ next: string }>(url, "SELECT pg_current_xact_id()::text AS next");
  const next = Number(row!.next);
  let boundary = 10;
  while (boundary - next < 2 * margin) boundary *= 10;
  const burn = boundary - margin - next;
  await clusterQuery(
    url,
    `CREATE TEMP TABLE burn (i int);
     DO $$ BEGIN FOR i IN 1..${burn} LOOP BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$;`,
  );
  return boundary;
}
