import type { AddressKey } from "../../domain/address.js";
import type { Tile, TileKey } from "../../domain/tlog.js";
import type { LogIdentity, LogState, LoggedEvent, StoredCheckpoint, StoredEpoch, TransparencyLogPort } from "../ports/tlog.js";
import { toNumber, tryTransactionLock, type Queryable } from "./db.js";
import { committedEventsAfter, toStoredEvent } from "./events.js";

/**
 * The transparency log on PostgreSQL (ports/tlog.ts). Several instances run the logging job; each
 * step takes a transaction advisory lock, tried, so one logs at a time and the others skip (no
 * transaction id is taken before the events are read, so the logger's own transaction never holds
 * back the snapshot's xmin). Events are read by the event log's one reading rule (events.ts
 * committedEventsAfter): in (tx, seq) order, only those of transactions older than every one still
 * running, an order that only grows at its end; a position is "<tx>.<seq>".
 */

/** Key of the transaction advisory lock (of this schema: db.ts tryTransactionLock) a logging step runs under. */
const LOG_LOCK_KEY = "7061221916";

async function claimLogger(db: Queryable): Promise<boolean> {
  return tryTransactionLock(db, "pl-log-claim", LOG_LOCK_KEY);
}

interface StateRow {
  size: string;
  position_tx: string;
  position_seq: string;
  checkpoint_size: string | null;
  checkpoint_root: Buffer | null;
  checkpoint_note: string | null;
  checkpoint_at_ms: string | null;
  epoch: number;
}

async function logState(db: Queryable): Promise<LogState> {
  const { rows } = await db.query<StateRow>({
    name: "pl-log-state",
    text: `SELECT size, position_tx::text AS position_tx, position_seq, checkpoint_size, checkpoint_root, checkpoint_note, checkpoint_at_ms, epoch
           FROM log_state WHERE id = 1`,
  });
  const row = rows[0]!;
  const checkpoint: StoredCheckpoint | null =
    row.checkpoint_size === null
      ? null
      : {
          size: toNumber(row.checkpoint_size),
          root: new Uint8Array(row.checkpoint_root!),
          note: row.checkpoint_note!,
          signedAtMs: toNumber(row.checkpoint_at_ms),
        };
  return { size: toNumber(row.size), position: `${row.position_tx}.${row.position_seq}`, checkpoint, epoch: row.epoch };
}

async function eventsToLog(db: Queryable, position: string, limit: number) {
  const [tx, seq] = position.split(".") as [string, string];
  return (await committedEventsAfter(db, "pl-log-events", [tx, seq], limit)).map(toStoredEvent);
}

async function readTiles(db: Queryable, keys: readonly TileKey[]): Promise<Tile[]> {
  const { rows } = await db.query<{ tile_level: number; tile_index: string; hashes: Buffer; inner_nodes: Buffer | null }>({
    name: "pl-log-read-tiles",
    text: `SELECT t.tile_level, t.tile_index, t.hashes, t.inner_nodes FROM log_tiles t
           JOIN unnest($1::int[], $2::bigint[]) AS k(level, index) ON t.tile_level = k.level AND t.tile_index = k.index`,
    values: [keys.map((key) => key.level), keys.map((key) => key.index)],
  });
  return rows.map((row) => ({ level: row.tile_level, index: toNumber(row.tile_index), hashes: row.hashes, nodes: row.inner_nodes }));
}

async function writeTiles(db: Queryable, tiles: readonly Tile[]): Promise<void> {
  if (tiles.length === 0) return;
  await db.query({
    name: "pl-log-write-tiles",
    text: `INSERT INTO log_tiles (tile_level, tile_index, hashes, inner_nodes)
           SELECT * FROM unnest($1::int[], $2::bigint[], $3::bytea[], $4::bytea[])
           ON CONFLICT (tile_level, tile_index) DO UPDATE SET hashes = excluded.hashes, inner_nodes = excluded.inner_nodes`,
    values: [
      tiles.map((tile) => tile.level),
      tiles.map((tile) => tile.index),
      tiles.map((tile) => Buffer.from(tile.hashes)),
      tiles.map((tile) => (tile.nodes === null ? null : Buffer.from(tile.nodes))),
    ],
  });
}

async function setLogIndexes(db: Queryable, entries: readonly { eventId: string; logIndex: number }[]): Promise<void> {
  if (entries.length === 0) return;
  await db.query({
    name: "pl-log-set-indexes",
    text: `UPDATE events SET log_index = v.log_index FROM unnest($1::text[], $2::bigint[]) AS v(event_id, log_index)
           WHERE events.event_id = v.event_id`,
    values: [entries.map((entry) => entry.eventId), entries.map((entry) => entry.logIndex)],
  });
}

async function advanceLog(db: Queryable, size: number, position: string): Promise<void> {
  const [tx, seq] = position.split(".");
  await db.query({
    name: "pl-log-advance",
    text: "UPDATE log_state SET size = $1, position_tx = $2::xid8, position_seq = $3 WHERE id = 1",
    values: [size, tx, seq],
  });
}

async function storeCheckpoint(db: Queryable, checkpoint: StoredCheckpoint): Promise<void> {
  await db.query({
    name: "pl-log-store-checkpoint",
    text: "UPDATE log_state SET checkpoint_size = $1, checkpoint_root = $2, checkpoint_note = $3, checkpoint_at_ms = $4 WHERE id = 1",
    values: [checkpoint.size, Buffer.from(checkpoint.root), checkpoint.note, checkpoint.signedAtMs],
  });
}

async function loggedEvent(db: Queryable, eventId: string): Promise<LoggedEvent | null> {
  const { rows } = await db.query<{ stream: string | null; log_index: string | null }>({
    name: "pl-log-event",
    text: "SELECT stream, log_index FROM events WHERE event_id = $1",
    values: [eventId],
  });
  const row = rows[0];
  if (row === undefined) return null;
  return { stream: row.stream as AddressKey | null, logIndex: row.log_index === null ? null : toNumber(row.log_index) };
}

async function oldestUnloggedAtMs(db: Queryable): Promise<number | null> {
  // Any event past the position, visible to this statement or not yet readable past (an older
  // transaction still running holds it back): either way the log has not got to it.
  const { rows } = await db.query<{ occurred_at_ms: string }>({
    name: "pl-log-oldest-unlogged",
    text: `SELECT e.occurred_at_ms FROM events e, log_state s
           WHERE s.id = 1 AND (e.tx, e.seq) > (s.position_tx, s.position_seq) AND e.type <> 'webhook.test'
           ORDER BY e.tx, e.seq LIMIT 1`,
  });
  return rows[0] === undefined ? null : toNumber(rows[0].occurred_at_ms);
}

async function logIdentity(db: Queryable): Promise<LogIdentity> {
  const { rows } = await db.query<{ origin: string | null; verifier_key: string | null; epoch: number; new_epoch_due: boolean }>({
    name: "pl-log-identity",
    text: "SELECT origin, verifier_key, epoch, new_epoch_due FROM log_state WHERE id = 1 FOR UPDATE",
  });
  const row = rows[0]!;
  return { origin: row.origin, verifierKey: row.verifier_key, epoch: row.epoch, newEpochDue: row.new_epoch_due };
}

async function setLogIdentity(db: Queryable, origin: string, verifierKey: string): Promise<void> {
  await db.query({
    name: "pl-log-set-identity",
    text: "UPDATE log_state SET origin = $1, verifier_key = $2 WHERE id = 1",
    values: [origin, verifierKey],
  });
}

async function beginEpoch(db: Queryable, epoch: StoredEpoch): Promise<void> {
  await db.query({
    name: "pl-log-begin-epoch",
    text: "INSERT INTO log_epochs (epoch, origin, note, started_at_ms) VALUES ($1, $2, $3, $4)",
    values: [epoch.epoch, epoch.origin, epoch.note, epoch.startedAtMs],
  });
  await db.query({
    name: "pl-log-epoch",
    text: "UPDATE log_state SET epoch = $1, new_epoch_due = false WHERE id = 1",
    values: [epoch.epoch],
  });
}

async function markNewEpochDue(db: Queryable): Promise<void> {
  await db.query("UPDATE log_state SET new_epoch_due = true WHERE id = 1");
}

async function logEpochs(db: Queryable): Promise<StoredEpoch[]> {
  const { rows } = await db.query<{ epoch: number; origin: string; note: string; started_at_ms: string }>({
    name: "pl-log-epochs",
    text: "SELECT epoch, origin, note, started_at_ms FROM log_epochs ORDER BY epoch",
  });
  return rows.map((row) => ({ epoch: row.epoch, origin: row.origin, note: row.note, startedAtMs: toNumber(row.started_at_ms) }));
}

export const postgresTransparencyLog = {
  claimLogger,
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
} satisfies TransparencyLogPort<Queryable, "async">;
