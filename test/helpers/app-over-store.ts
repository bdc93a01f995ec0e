/**
 * The real app (buildApp) over a store the test opens itself: a PostgreSQL schema, or a SQLite
 * file with a logger the test captures. createTestApp (./http.ts) covers the common SQLite case.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { loadConfig, type Config } from "../../src/config.js";
import { buildApp } from "../../src/http/app.js";
import { createSqliteStore } from "../../src/ledger/sqlite.js";
import type { LedgerStore } from "../../src/store/store.js";
import { TEST_ENV, injectSender, type Send } from "./http.js";

export interface StoreApp {
  app: FastifyInstance;
  store: LedgerStore;
  config: Config;
  adminToken: string;
  /** Requests through app.inject. */
  send: Send;
  /** Closes the app; the store stays with whoever opened it. */
  close(): Promise<void>;
}

export interface StoreAppOptions {
  /** Overrides of TEST_ENV. */
  env?: Record<string, string>;
  /** Passed to buildApp (pino options, e.g. `{ level: "info", stream }`); no logs by default. */
  logger?: boolean | object;
}

/** Builds the app over `store` (migrated here); `databaseUrl` only has to satisfy loadConfig. */
export async function buildAppOverStore(store: LedgerStore, databaseUrl: string, options: StoreAppOptions = {}): Promise<StoreApp> {
  const adminToken = `admin-${randomBytes(16).toString("hex")}`;
  const config = loadConfig({ ...TEST_ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: databaseUrl, ...options.env });
  await store.migrate();
  const app = await buildApp({ config, store, logger: options.logger ?? false });
  return { app, store, config, adminToken, send: injectSender(app), close: () => app.close() };
}

/** A SQLite store on a fresh temporary file, and how to remove it. */
export function temporarySqliteStore(create = createSqliteStore): { store: LedgerStore; databaseUrl: string; remove(): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-store-app-"));
  const path = join(dir, "ledger.db");
  const store = create({ path, synchronous: "NORMAL" });
  return {
    store,
    databaseUrl: `sqlite:${path}`,
    remove: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The built store (dist/), whose projection runs in its worker thread as a server's does (src/ledger/sqlite-projection.ts). */
const BUILT_SQLITE_STORE = new URL("../../dist/src/ledger/sqlite.js", import.meta.url);

/** Why suites of the built store skip: no build in dist/. */
export const NO_BUILT_STORE = "no build in dist/ (`npm run build`, which `npm test` runs first)";

/** createSqliteStore of the built store, or null when nothing is built. */
export async function builtSqliteStore(): Promise<typeof createSqliteStore | null> {
  if (!existsSync(fileURLToPath(BUILT_SQLITE_STORE))) return null;
  return ((await import(BUILT_SQLITE_STORE.href)) as { createSqliteStore: typeof createSqliteStore }).createSqliteStore;
}
