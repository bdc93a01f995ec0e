import { SchemaTooNewError } from "../store/migration-status.js";
import { StoreUnavailableError } from "../store/errors.js";
import { BrokerRefusedError } from "../publishers/broker.js";
import { UnknownChainError } from "../chain/operators.js";

/**
 * The mistakes an operator makes at start-up (a port taken, a database missing, unopenable or
 * newer than this version, …), each said in one line with what to do instead of a stack trace.
 * Anything not recognised here is left to main.ts, which prints it whole: that is a bug's trace.
 */

interface SystemError extends Error {
  code?: string;
  syscall?: string;
  address?: string;
  port?: number;
  path?: string;
}

/** Errors of the chain `error`, `error.cause`, … (bounded: a cause cycle must not hang the exit). */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && current !== null && chain.length < 8;) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** DATABASE_URL as it may be printed: without its password. */
export function printableDatabaseUrl(databaseUrl: string): string {
  return databaseUrl.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

function listenProblem(error: SystemError): string | null {
  if (error.syscall !== "listen") return null;
  const where = `${error.address ?? "?"}:${error.port ?? "?"}`;
  if (error.code === "EADDRINUSE") {
    return `port ${error.port} is already in use (${where}): stop what listens there, or choose another port with PORT=, e.g. PORT=${(error.port ?? 8080) + 1}`;
  }
  if (error.code === "EACCES") {
    return `this user may not listen on port ${error.port} (${where}; ports below 1024 need privileges): choose another port with PORT=, e.g. PORT=8080`;
  }
  if (error.code === "EADDRNOTAVAIL") {
    return `cannot listen on ${error.address}: no network interface of this machine has that address; set HOST= to one it has (127.0.0.1, 0.0.0.0)`;
  }
  return null;
}

/** How to create a missing PostgreSQL database, from the URL's host, port, user and database. */
function createDatabaseHint(databaseUrl: string, fallbackName: string): string {
  let url: URL | null = null;
  try {
    url = new URL(databaseUrl);
  } catch {
    url = null;
  }
  const name = url ? decodeURIComponent(url.pathname.slice(1)) || fallbackName : fallbackName;
  const host = url?.searchParams.get("host") ?? (url?.hostname || "localhost");
  const port = url?.port || "5432";
  const user = url?.username ? ` -U ${decodeURIComponent(url.username)}` : "";
  return `the PostgreSQL database "${name}" does not exist on ${host}:${port}: create it first (createdb -h ${host} -p ${port}${user} ${name}, or CREATE DATABASE "${name}"; in psql), then start again`;
}

function postgresProblem(error: unknown, databaseUrl: string): string | null {
  for (const cause of causes(error)) {
    const code = codeOf(cause);
    if (code === "3D000") {
      const named = /database "([^"]+)" does not exist/.exec((cause as Error).message ?? "");
      return createDatabaseHint(databaseUrl, named?.[1] ?? "points_ledger");
    }
    // 28P01: wrong password; 28000: no pg_hba.conf entry or no such role.
    if (code === "28P01" || code === "28000") {
      return `PostgreSQL refused the login at ${printableDatabaseUrl(databaseUrl)}: ${(cause as Error).message} (check the user and password of DATABASE_URL)`;
    }
  }
  return null;
}

function sqliteProblem(error: unknown, databaseUrl: string): string | null {
  const path = databaseUrl.slice("sqlite:".length);
  for (const cause of causes(error)) {
    const code = codeOf(cause) ?? "";
    if (code.startsWith("SQLITE_NOTADB") || code.startsWith("SQLITE_CORRUPT")) {
      return `${path} is not a points-ledger SQLite database (${code}): point DATABASE_URL=sqlite:<path> at the service's database file`;
    }
    if (code.startsWith("SQLITE_CANTOPEN") || code.startsWith("SQLITE_PERM") || code === "SQLITE_READONLY_DIRECTORY") {
      return `cannot open the SQLite database ${path} (${code}): it must be a file (or not exist yet) in a folder this user may read and write; check DATABASE_URL=sqlite:<path> and the permissions`;
    }
    // openDatabase creates the database's folder first (mkdir -p).
    const system = cause as SystemError;
    if (system.syscall === "mkdir" && system.path !== undefined) {
      return `cannot use the SQLite database ${path}: ${system.syscall} ${system.path} failed (${code}): its folder cannot be created; check DATABASE_URL=sqlite:<path> and the permissions`;
    }
  }
  return null;
}

/**
 * One line (without the `points-ledger: ` prefix) for a start-up mistake, or null when `error`
 * is not one. `databaseUrl` is the configured DATABASE_URL, null when the configuration did not load.
 */
export function startupProblem(error: unknown, databaseUrl: string | null): string | null {
  const listen = listenProblem(error as SystemError);
  if (listen !== null) return listen;
  if (error instanceof BrokerRefusedError || error instanceof UnknownChainError) return error.message;
  if (error instanceof SchemaTooNewError) {
    const where = databaseUrl === null ? "" : ` at ${printableDatabaseUrl(databaseUrl)}`;
    return `the database${where} has schema version ${error.databaseVersion}, newer than this version of points-ledger knows (${error.knownVersion}): upgrade points-ledger or restore a backup`;
  }
  if (databaseUrl !== null) {
    const specific = databaseUrl.startsWith("sqlite:") ? sqliteProblem(error, databaseUrl) : postgresProblem(error, databaseUrl);
    if (specific !== null) return specific;
  }
  if (error instanceof StoreUnavailableError) {
    const where = databaseUrl === null ? "" : ` (DATABASE_URL=${printableDatabaseUrl(databaseUrl)})`;
    return `${error.message.split("\n")[0]}${where}`;
  }
  return null;
}
