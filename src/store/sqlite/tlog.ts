import type { AddressKey } from "../../domain/address.js";
import type { Tile, TileKey } from "../../domain/tlog.js";
import type { LogIdentity, LogState, LoggedEvent, StoredCheckpoint, StoredEpoch, TransparencyLogPort } from "../ports/tlog.js";
import { statement, toNumber, type SqliteDb } from "./db.js";
import { toStoredEvent, type EventRow } from "./events.js";

/**
 * The transparency log on SQLite (ports/tlog.ts): one process writes, so seq order is commit order
 * and a position is the seq of the last event read into the log. Tiles are rows of
 * (tile_level, tile_index) holding up to 256 hashes (domain/tlog.ts).
 */

interface StateRow {
  size: bigint;
  position_seq: bigint;
  checkpoint_size: bigint | null;
  checkpoint_root: Buffer | null;
  checkpoint_note: string | null;
  checkpoint_at_ms: bigint | null;
  epoch: bigint;
  origin: string | null;
  verifier_key: string | null;
  new_epoch_due: bigint;
}

function logState(db: SqliteDb): LogState {
  const row = statement(db, "SELECT * FROM log_state WHERE id = 1").get() as StateRow;
  const checkpoint: StoredCheckpoint | null =
    row.checkpoint_size === null
      ? null
      : {
          size: toNumber(row.checkpoint_size),
          root: new Uint8Array(row.checkpoint_root!),
          note: row.checkpoint_note!,
          signedAtMs: toNumber(row.checkpoint_at_ms),
        };
  return { size: toNumber(row.size), position: row.position_seq.toString(), checkpoint, epoch: toNumber(row.epoch) };
}

function eventsToLog(db: SqliteDb, position: string, limit: number) {
  const rows = statement(db, "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?").all(BigInt(position), limit) as EventRow[];
  return rows.map(toStoredEvent);
}

function readTiles(db: SqliteDb, keys: readonly TileKey[]): Tile[] {
  const read = statement(db, "SELECT hashes, inner_nodes FROM log_tiles WHERE tile_level = ? AND tile_index = ?");
  const tiles: Tile[] = [];
  for (const key of keys) {
    const row = read.get(key.level, key.index) as { hashes: Buffer; inner_nodes: Buffer | null } | undefined;
    if (row !== undefined) tiles.push({ ...key, hashes: row.hashes, nodes: row.inner_nodes });
  }
  return tiles;
}

function writeTiles(db: SqliteDb, tiles: readonly Tile[]): void {
  const write = statement(
    db,
    `INSERT INTO log_tiles (tile_level, tile_index, hashes, inner_nodes) VALUES (?, ?, ?, ?)
     ON CONFLICT (tile_level, tile_index) DO UPDATE SET hashes = excluded.hashes, inner_nodes = excluded.inner_nodes`,
  );
  for (const tile of tiles) write.run(tile.level, tile.index, tile.hashes, tile.nodes);
}

function setLogIndexes(db: SqliteDb, entries: readonly { eventId: string; logIndex: number }[]): void {
  const update = statement(db, "UPDATE events SET log_index = ? WHERE event_id = ?");
  for (const { eventId, logIndex } of entries) update.run(logIndex, eventId);
}

function advanceLog(db: SqliteDb, size: number, position: string): void {
  statement(db, "UPDATE log_state SET size = ?, position_seq = ? WHERE id = 1").run(size, BigInt(position));
}

function storeCheckpoint(db: SqliteDb, checkpoint: StoredCheckpoint): void {
  statement(
    db,
    "UPDATE log_state SET checkpoint_size = ?, checkpoint_root = ?, checkpoint_note = ?, checkpoint_at_ms = ? WHERE id = 1",
  ).run(checkpoint.size, Buffer.from(checkpoint.root), checkpoint.note, checkpoint.signedAtMs);
}

function loggedEvent(db: SqliteDb, eventId: string): LoggedEvent | null {
  const row = statement(db, "SELECT stream, log_index FROM events WHERE event_id = ?").get(eventId) as
    { stream: string | null; log_index: bigint | null } | undefined;
  if (row === undefined) return null;
  return { stream: row.stream as AddressKey | null, logIndex: row.log_index === null ? null : toNumber(row.log_index) };
}

function oldestUnloggedAtMs(db: SqliteDb): number | null {
  const row = statement(
    db,
    `SELECT occurred_at_ms FROM events WHERE seq > (SELECT position_seq FROM log_state WHERE id = 1) AND type <> 'webhook.test'
     ORDER BY seq LIMIT 1`,
  ).get() as { occurred_at_ms: bigint } | undefined;
  return row === undefined ? null : toNumber(row.occurred_at_ms);
}

function logIdentity(db: SqliteDb): LogIdentity {
  const row = statement(db, "SELECT * FROM log_state WHERE id = 1").get() as StateRow;
  return { origin: row.origin, verifierKey: row.verifier_key, epoch: toNumber(row.epoch), newEpochDue: row.new_epoch_due !== 0n };
}

function setLogIdentity(db: SqliteDb, origin: string, verifierKey: string): void {
  statement(db, "UPDATE log_state SET origin = ?, verifier_key = ? WHERE id = 1").run(origin, verifierKey);
}

function beginEpoch(db: SqliteDb, epoch: StoredEpoch): void {
  statement(db, "INSERT INTO log_epochs (epoch, origin, note, started_at_ms) VALUES (?, ?, ?, ?)").run(
    epoch.epoch,
    epoch.origin,
    epoch.note,
    epoch.startedAtMs,
  );
  statement(db, "UPDATE log_state SET epoch = ?, new_epoch_due = 0 WHERE id = 1").run(epoch.epoch);
}

function markNewEpochDue(db: SqliteDb): void {
  statement(db, "UPDATE log_state SET new_epoch_due = 1 WHERE id = 1").run();
}

function logEpochs(db: SqliteDb): StoredEpoch[] {
  const rows = statement(db, "SELECT epoch, origin, note, started_at_ms FROM log_epochs ORDER BY epoch").all() as {
    epoch: bigint;
    origin: string;
    note: string;
    started_at_ms: bigint;
  }[];
  return rows.map((row) => ({ epoch: toNumber(row.epoch), origin: row.origin, note: row.note, startedAtMs: toNumber(row.started_at_ms) }));
}

export const sqliteTransparencyLog = {
  // One process is the only writer, and every step runs in one IMMEDIATE transaction.
  claimLogger: () => true,
  logState,
  eventsToLog,
  readTiles,
  writeTiles,
  setLogIndexes,
  advanceLog,
  storeCheckpoint,
  loggedEvent,
  oldestUnloggedAtMs,
  logIdentity,
  setLogIdentity,
  beginEpoch,
  markNewEpochDue,
  logEpochs,
} satisfies TransparencyLogPort<SqliteDb, "sync">;
