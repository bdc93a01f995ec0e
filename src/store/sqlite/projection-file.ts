import Database from "better-sqlite3";
import { amount as amountColumns, rankBand } from "./migrations/index.js";
import { openDatabase, statement, toNumber, type SqliteDb, type SqliteOptions } from "./db.js";

/**
 * The read models' own file (docs/performance.md "The projection's own file"): the all-time
 * boards, the window boards and received_daily live beside the ledger in `<ledger>-projection`,
 * attached to a connection as the schema `projection`. The ledger's file keeps what the
 * finalization writes for them (projection_queue, a row per FINALIZED batch, and the fence); the
 * projection's writer (a worker thread, src/ledger/sqlite-projection.ts) writes this file alone,
 * so the ledger's writer never waits for a pass, and the two commit on two cores. Every table here
 * is derived: its through (projection_through) is written in the same transaction as its rows, and
 * a file that is missing, or was built for another copy of the ledger (ledger_id: a backup gets a
 * new one), is emptied and rebuilt from the queue, which keeps every FINALIZED batch.
 */
export const PROJECTION_SCHEMA = "projection";

/** The projection file of a ledger at `path` (":memory:" keeps it in memory beside it). */
export function projectionPathOf(path: string): string {
  return path === ":memory:" ? ":memory:" : `${path}-projection`;
}

/** The schema's version in the file's user_version: a file of another version is emptied and rebuilt. */
const PROJECTION_FILE_VERSION = 1;

const TABLES = [
  "boards",
  "board_entries",
  "board_bands",
  "received_daily",
  "window_boards",
  "window_batches",
  "window_entries",
  "window_bands",
  "projection_through",
];

const s = PROJECTION_SCHEMA;

/**
 * A ranked board's tables: its entries keyed by `key` and the address's 20 bytes, the ranking
 * index, and the bands the triggers keep (domain/leaderboard.ts rankBandOf): the all-time boards'
 * and the window boards' have this one shape (SQLite migrations 15 and 16).
 */
function rankedTablesSql(name: "board" | "window", key: string): string {
  const [entries, bands] = [`${name}_entries`, `${name}_bands`];
  return `
  CREATE TABLE IF NOT EXISTS ${s}.${entries} (
    ${key} INTEGER NOT NULL,
    address BLOB NOT NULL CHECK (length(address) = 20),
    points_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(points_q) = 'integer' AND points_q >= 0),
    ${amountColumns("points")},
    PRIMARY KEY (${key}, address)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS ${s}.${name}_ranking ON ${entries} (${key}, points_q DESC, points_w DESC, points_f DESC, address);
  CREATE TABLE IF NOT EXISTS ${s}.${bands} (
    ${key} INTEGER NOT NULL,
    band INTEGER NOT NULL,
    entries INTEGER NOT NULL CHECK (entries >= 0),
    PRIMARY KEY (${key}, band)
  ) WITHOUT ROWID;
  CREATE TRIGGER IF NOT EXISTS ${s}.${bands}_on_insert AFTER INSERT ON ${entries} BEGIN
    INSERT INTO ${bands} (${key}, band, entries) VALUES (new.${key}, ${rankBand("new")}, 1)
      ON CONFLICT (${key}, band) DO UPDATE SET entries = entries + 1;
  END;
  CREATE TRIGGER IF NOT EXISTS ${s}.${bands}_on_update AFTER UPDATE ON ${entries} WHEN ${rankBand("old")} <> ${rankBand("new")} BEGIN
    UPDATE ${bands} SET entries = entries - 1 WHERE ${key} = old.${key} AND band = ${rankBand("old")};
    INSERT INTO ${bands} (${key}, band, entries) VALUES (new.${key}, ${rankBand("new")}, 1)
      ON CONFLICT (${key}, band) DO UPDATE SET entries = entries + 1;
  END;`;
}

/** The file's tables (the shapes of SQLite migrations 15–17), created in the attached schema. */
const SCHEMA_SQL = `
  CREATE TABLE IF NOT EXISTS ${s}.projection_through (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    through_ms INTEGER NOT NULL,
    ledger_id TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS ${s}.boards (
    board INTEGER PRIMARY KEY,
    contract TEXT NOT NULL,
    point_type TEXT NOT NULL,
    finalized_batches INTEGER NOT NULL DEFAULT 0,
    UNIQUE (contract, point_type)
  );
  ${rankedTablesSql("board", "board")}
  CREATE TABLE IF NOT EXISTS ${s}.received_daily (
    address BLOB NOT NULL CHECK (length(address) = 20),
    board INTEGER NOT NULL,
    day_ms INTEGER NOT NULL,
    first_at_ms INTEGER NOT NULL,
    last_at_ms INTEGER NOT NULL,
    amount_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(amount_q) = 'integer' AND amount_q >= 0),
    ${amountColumns("amount")},
    PRIMARY KEY (address, board, day_ms)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS ${s}.window_boards (
    window_id INTEGER PRIMARY KEY AUTOINCREMENT,
    board INTEGER NOT NULL,
    from_ms INTEGER NOT NULL,
    to_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('building', 'ready', 'dropping')),
    batches INTEGER NOT NULL DEFAULT 0,
    seen_finalized INTEGER NOT NULL DEFAULT -1,
    created_at_ms INTEGER NOT NULL,
    built_through_ms INTEGER NOT NULL DEFAULT 0
  );
  CREATE UNIQUE INDEX IF NOT EXISTS ${s}.window_boards_kept ON window_boards (board, from_ms, to_ms) WHERE state <> 'dropping';
  CREATE TABLE IF NOT EXISTS ${s}.window_batches (
    window_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (window_id, seq)
  ) WITHOUT ROWID;
  ${rankedTablesSql("window", "window_id")}`;

/**
 * Attaches the ledger's projection file to `db` as `projection` (created when missing). With
 * `prepare`, makes it this ledger's: its tables created, and emptied when it was built for another
 * copy of the ledger or another version (through back to 0: the passes rebuild it from the queue).
 * A read-only connection attaches it read-only and prepares nothing.
 */
export function attachProjection(
  db: SqliteDb,
  path: string,
  options: { prepare: boolean; synchronous?: SqliteOptions["synchronous"] },
): void {
  const attached = (db.prepare("PRAGMA database_list").all() as { name: string }[]).some(({ name }) => name === PROJECTION_SCHEMA);
  if (!attached) db.prepare(`ATTACH DATABASE ? AS ${PROJECTION_SCHEMA}`).run(projectionPathOf(path));
  if (!options.prepare) return;
  if (path !== ":memory:") db.pragma(`${PROJECTION_SCHEMA}.journal_mode = WAL`);
  if (options.synchronous) db.pragma(`${PROJECTION_SCHEMA}.synchronous = ${options.synchronous}`);
  const ledgerId = statement(db, "SELECT ledger_id FROM main.projection_state WHERE id = 1").pluck().get() as string;
  db.transaction(() => {
    const version = toNumber(db.pragma(`${PROJECTION_SCHEMA}.user_version`, { simple: true }));
    const current =
      version === PROJECTION_FILE_VERSION &&
      db.prepare(`SELECT 1 FROM ${PROJECTION_SCHEMA}.sqlite_master WHERE name = 'projection_through'`).get() !== undefined &&
      db.prepare(`SELECT ledger_id FROM ${PROJECTION_SCHEMA}.projection_through WHERE id = 1`).pluck().get() === ledgerId;
    if (current) return;
    for (const table of TABLES) db.exec(`DROP TABLE IF EXISTS ${PROJECTION_SCHEMA}.${table}`);
    db.exec(SCHEMA_SQL);
    db.prepare(`INSERT INTO ${PROJECTION_SCHEMA}.projection_through (id, through_ms, ledger_id) VALUES (1, 0, ?)`).run(ledgerId);
    db.pragma(`${PROJECTION_SCHEMA}.user_version = ${PROJECTION_FILE_VERSION}`);
  }).immediate();
  syncLedgerView(db);
}

/**
 * The ledger file's view of the projection (projection_state): its through, which the cut reads
 * (it may lag the file's after a crash: a pass then finds its batches applied and moves on), set
 * to the file's; the fence raised to it, so nothing finalizes at a time the file already answered for.
 */
function syncLedgerView(db: SqliteDb): void {
  const throughMs = toNumber(db.prepare(`SELECT through_ms FROM ${PROJECTION_SCHEMA}.projection_through WHERE id = 1`).pluck().get());
  db.prepare("UPDATE main.projection_state SET through_ms = ?, fence_ms = max(fence_ms, ?) WHERE id = 1").run(throughMs, throughMs);
}

/**
 * A connection for the projection (passes, window boards) and for the reads that join the ledger
 * with it (boards, asOf, verify): the ledger's file as main, the projection file attached. Its
 * transactions are DEFERRED: it writes the projection file only, so it never takes the ledger's lock.
 */
export function openProjectionConnection(options: SqliteOptions): SqliteDb {
  const db = openDatabase(options);
  try {
    attachProjection(db, options.path, { prepare: true, synchronous: options.synchronous });
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** A read-only connection to the ledger with its projection file attached (snapshots' own reader, tools). */
export function openReadOnlyWithProjection(path: string): SqliteDb {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    attachProjection(db, path, { prepare: false });
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Inside a read transaction on a connection with the projection file attached: reads the
 * projection file first, so its snapshot is never newer than the ledger's the rest of the read
 * takes (every batch it has applied is then FINALIZED in what the read sees of the ledger).
 */
export function readProjectionFirst(db: SqliteDb): void {
  statement(db, "SELECT through_ms FROM projection_through WHERE id = 1").get();
}
