import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  appendToTiles,
  edgeTiles,
  HASH_BYTES,
  nodeHashesFromTiles,
  nodesNeeded,
  tilesOf,
  TILE_WIDTH,
  type StoredTile,
  type Tile,
  treeHash,
  verifyConsistency,
  verifyInclusion,
} from "../src/domain/tlog.js";
import { openStore } from "../src/ledger/open.js";
import type { LedgerStore } from "../src/store/store.js";
import { quantile, round } from "./stats.js";

/**
 * `npm run bench -- --tlog-proofs [--events N] [--samples N]`: inclusion and consistency proofs
 * of the transparency log at N logged events (default 10,000,000) on SQLite, at the store level
 * (the flow the routes call, no HTTP). The tree is seeded straight into log_tiles (random leaf
 * hashes appended by the domain's appendToTiles, the tiles written as the log's job writes them),
 * since logging 10,000,000 events through the event path takes hours; a few thousand events rows
 * carry a logIndex spread over the tree so inclusion proofs start from an event id as the route's
 * do. Reports p50/p99 of each proof (against the checkpoint at N, consistency from a random size),
 * the tree's bytes per event (log_tiles' pages and its index, from dbstat), and the RSS before the
 * proofs and after each quarter of them. Each proof is verified against the checkpoint's root.
 * Target (issue 32): p99 ≤ 10 ms, ≤ 100 bytes an event, memory flat.
 */

const DEFAULT_EVENTS = 10_000_000;
const DEFAULT_SAMPLES = 2000;
const EVENT_ROWS = 5000;
const SEED_LEAVES_PER_STEP = 65_536;

const mb = (bytes: number) => Math.round(bytes / 1048576);

/**
 * The tree of `size` random leaves, written as the log's job writes it: appendToTiles in steps of
 * SEED_LEAVES_PER_STEP leaves, each step's changed tiles (with their inner nodes) written over the
 * stored ones in one transaction.
 */
function seedTree(path: string, size: number): void {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  const write = db.prepare(
    `INSERT INTO log_tiles (tile_level, tile_index, hashes, inner_nodes) VALUES (?, ?, ?, ?)
     ON CONFLICT (tile_level, tile_index) DO UPDATE SET hashes = excluded.hashes, inner_nodes = excluded.inner_nodes`,
  );
  const writeAll = db.transaction((tiles: Tile[]) => {
    for (const tile of tiles) write.run(tile.level, tile.index, tile.hashes, tile.nodes);
  });
  const stored = new Map<string, Tile>();
  for (let logged = 0; logged < size;) {
    const count = Math.min(SEED_LEAVES_PER_STEP, size - logged);
    const random = randomBytes(count * HASH_BYTES);
    const leaves = Array.from({ length: count }, (_, i) => random.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    const edge = edgeTiles(logged).map((key) => stored.get(`${key.level}/${key.index}`)!);
    const changed = appendToTiles(logged, edge, leaves);
    writeAll(changed);
    for (const tile of changed) stored.set(`${tile.level}/${tile.index}`, tile);
    logged += count;
    for (const [name, tile] of stored) if (tile.hashes.length === TILE_WIDTH * HASH_BYTES) stored.delete(name);
  }
  db.close();
}

/** A few thousand events rows with a logIndex spread over the tree, and log_state at `size`. */
function seedEventsAndState(path: string, size: number, root: Uint8Array): string[] {
  const db = new Database(path);
  const insert = db.prepare(
    "INSERT INTO events (event_id, type, stream, occurred_at_ms, data, log_index) VALUES (?, 'credit.created', NULL, 0, '{}', ?)",
  );
  const ids: string[] = [];
  db.transaction(() => {
    for (let i = 0; i < EVENT_ROWS; i++) {
      const id = `evt_bench${i.toString().padStart(23, "0")}`;
      insert.run(id, Math.floor((i * size) / EVENT_ROWS) + (i % 97));
      ids.push(id);
    }
    db.prepare(
      `UPDATE log_state SET size = ?, position_seq = (SELECT max(seq) FROM events),
       checkpoint_size = ?, checkpoint_root = ?, checkpoint_note = 'bench', checkpoint_at_ms = 0 WHERE id = 1`,
    ).run(size, size, Buffer.from(root));
  })();
  db.close();
  return ids;
}

function treeBytes(path: string): { bytes: number; tiles: number } {
  const db = new Database(path, { readonly: true });
  const pages = db.prepare("SELECT sum(pgsize) AS bytes FROM dbstat WHERE name IN ('log_tiles', 'sqlite_autoindex_log_tiles_1')").get() as {
    bytes: number;
  };
  const tiles = db.prepare("SELECT count(*) AS n FROM log_tiles").pluck().get() as number;
  db.close();
  return { bytes: pages.bytes, tiles };
}

async function timeProofs(
  store: LedgerStore,
  ids: string[],
  size: number,
  root: Uint8Array,
  rootAt: (size: number) => Uint8Array,
  samples: number,
) {
  const inclusion: number[] = [];
  const consistency: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = ids[Math.floor(Math.random() * ids.length)]!;
    let started = performance.now();
    const answer = await store.logInclusionProof(id, null, null);
    inclusion.push(performance.now() - started);
    if (answer.kind !== "proof") throw new Error(`no inclusion proof for ${id}: ${answer.kind}`);
    if (!verifyInclusion(answer.logIndex, size, answer.leafHash, answer.proof, root)) throw new Error(`the proof of ${id} does not verify`);
    const from = 1 + Math.floor(Math.random() * (size - 1));
    started = performance.now();
    const proved = await store.logConsistencyProof(from, size);
    consistency.push(performance.now() - started);
    if (proved.kind !== "proof") throw new Error(`no consistency proof from ${from}`);
    if (!verifyConsistency(from, size, rootAt(from), root, proved.proof))
      throw new Error(`the consistency proof from ${from} does not verify`);
  }
  return { inclusion, consistency };
}

async function measure(path: string, size: number, samples: number): Promise<Record<string, unknown>> {
  const url = `sqlite:${path}`;
  let store = await openStore({ databaseUrl: url, sqliteSynchronous: "NORMAL", pgPoolSize: 1, pgStatementTimeoutMs: 60_000 });
  await store.migrate();
  await store.close();
  const seedStarted = performance.now();
  seedTree(path, size);
  const seedSeconds = round((performance.now() - seedStarted) / 1000, 1);
  store = await openStore({ databaseUrl: url, sqliteSynchronous: "NORMAL", pgPoolSize: 1, pgStatementTimeoutMs: 60_000 });
  const read = new Database(path, { readonly: true });
  try {
    const root = rootOf(read, size);
    const ids = seedEventsAndState(path, size, root);
    const rootAt = (from: number) => rootOf(read, from);
    await timeProofs(store, ids, size, root, rootAt, Math.min(200, samples)); // warm-up: the JIT, the statement cache
    // Memory flat: the RSS before the proofs and after each quarter of them.
    const rssMb = [mb(process.memoryUsage.rss())];
    const inclusion: number[] = [];
    const consistency: number[] = [];
    for (let quarter = 0; quarter < 4; quarter++) {
      const times = await timeProofs(store, ids, size, root, rootAt, Math.ceil(samples / 4));
      inclusion.push(...times.inclusion);
      consistency.push(...times.consistency);
      rssMb.push(mb(process.memoryUsage.rss()));
    }
    const { bytes, tiles } = treeBytes(path);
    return {
      db: "sqlite",
      events: size,
      samples,
      seedSeconds,
      inclusionMs: {
        p50: round(quantile(inclusion, 0.5), 2),
        p99: round(quantile(inclusion, 0.99), 2),
        max: round(Math.max(...inclusion), 2),
      },
      consistencyMs: {
        p50: round(quantile(consistency, 0.5), 2),
        p99: round(quantile(consistency, 0.99), 2),
        max: round(Math.max(...consistency), 2),
      },
      tiles,
      treeBytesPerEvent: round(bytes / size, 1),
      rssMb,
      loadAverage: os.loadavg().map((load) => round(load, 1)),
      targets: { proofP99Ms: 10, treeBytesPerEvent: 100 },
    };
  } finally {
    read.close();
    await store.close();
  }
}

/** The root of the tree of the first `size` leaves as the service computes it (treeHash over the stored tiles). */
function rootOf(db: Database.Database, size: number): Uint8Array {
  const keys = tilesOf(nodesNeeded((node) => treeHash(size, node)));
  const get = db.prepare("SELECT hashes, inner_nodes AS nodes FROM log_tiles WHERE tile_level = ? AND tile_index = ?");
  const tiles = new Map(keys.map((key) => [`${key.level}/${key.index}`, get.get(key.level, key.index) as StoredTile]));
  return treeHash(size, nodeHashesFromTiles(tiles));
}

export async function runTlogProofsBench(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { "tlog-proofs": { type: "boolean" }, events: { type: "string" }, samples: { type: "string" } },
    strict: false,
  });
  const size = values.events === undefined ? DEFAULT_EVENTS : Number(values.events);
  const samples = values.samples === undefined ? DEFAULT_SAMPLES : Number(values.samples);
  if (!Number.isInteger(size) || size < EVENT_ROWS + 100) throw new Error(`--events must be a whole number ≥ ${EVENT_ROWS + 100}`);
  if (!Number.isInteger(samples) || samples < 1) throw new Error("--samples must be a whole number ≥ 1");
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-bench-tlog-"));
  try {
    const figures = await measure(join(dir, "tlog.db"), size, samples);
    process.stdout.write(JSON.stringify(figures, null, 2) + "\n");
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
