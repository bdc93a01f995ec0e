import Database from "better-sqlite3";
import pg from "pg";
import type { LedgerEvent } from "../../src/domain/events.js";
import { fanOutDeliveries as pgFanOut } from "../../src/store/postgres/webhooks.js";
import { fanOutDeliveries as sqliteFanOut } from "../../src/store/sqlite/webhooks.js";

/**
 * Fans events out to webhook deliveries in a committed transaction of the test's own, on a
 * connection of its own, as the ledger's transitions do inside theirs: for store tests that need
 * deliveries without running a whole transition.
 */
export interface FanOut {
  emit(events: LedgerEvent[], nowMs: number): Promise<void>;
  close(): Promise<void>;
}

/** On the SQLite database file at `path`. */
export function sqliteFanOutAt(path: string): FanOut {
  const raw = new Database(path);
  return {
    emit: async (events, nowMs) => raw.transaction(() => sqliteFanOut(raw, events, nowMs)).immediate(),
    close: async () => void raw.close(),
  };
}

/** On the PostgreSQL schema of `connectionString`, through a pool of `connections`. */
export function postgresFanOutAt(connectionString: string, connections: number): FanOut {
  const pool = new pg.Pool({ connectionString, max: connections });
  return {
    emit: async (events, nowMs) => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await pgFanOut(client, events, nowMs);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
