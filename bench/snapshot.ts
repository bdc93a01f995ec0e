import { ADMIN_ACTOR } from "../src/domain/actors.js";
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { takeSnapshot, snapshotProof, treeDumpText } from "../src/snapshots/snapshots.js";
import { openStore } from "../src/ledger/open.js";
import type { LedgerStore } from "../src/store/store.js";
import type { AddressKey } from "../src/domain/address.js";
import { createBenchSchema } from "./postgres-schema.js";

/**
 * `npm run bench -- --snapshot [--db sqlite|postgres] [--addresses N]`: a snapshot of N
 * (default 1,000,000) addresses, each holding a 12-decimal amount, taken in this process as the
 * server takes one (consistent read, tree, chunks, publication); then one proof and the whole
 * tree dump read back. Reports the time of each and the process's peak RSS (sampled every 20 ms,
 * and the kernel's maxRSS). The target (docs/performance.md): ≤ 30 s and ≤ 1 GB at 1,000,000 addresses.
 */

const DEFAULT_ADDRESSES = 1_000_000;
const RSS_SAMPLE_MS = 20;
const POINT_TYPE = "PHASE2_POINTS";

const mb = (bytes: number) => Math.round(bytes / 1048576);

async function fill(url: string, count: number): Promise<void> {
  // Straight SQL: the bench measures the snapshot, not a million credits.
  if (url.startsWith("sqlite:")) {
    const db = new Database(url.slice("sqlite:".length));
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO accounts (address, point_type, earned_w, earned_f)
       SELECT printf('0x%08x%032x', i * 2654435761 % 4294967296, i), ?, i % 100000, (i * 7919) % 1000000000000 + 1 FROM n`,
    ).run(count, POINT_TYPE);
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    `INSERT INTO accounts (address, point_type, earned_units)
     SELECT '0x' || lpad(to_hex(i::bigint * 2654435761 % 4294967296), 8, '0') || lpad(to_hex(i), 32, '0'), $1,
            (i % 100000)::numeric * 1000000000000 + (i::numeric * 7919) % 1000000000000 + 1
     FROM generate_series(1, $2::int) AS i`,
    [POINT_TYPE, count],
  );
  await client.end();
}

/**
 * Wall time, this process's CPU time (user + system: what the work cost, whatever else the
 * machine runs), and peak RSS while `work` runs.
 */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; cpuSeconds: number; peakRssMb: number }> {
  let peak = process.memoryUsage.rss();
  const cpuBefore = process.cpuUsage();
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  const started = performance.now();
  try {
    const value = await work();
    const cpu = process.cpuUsage(cpuBefore);
    return {
      value,
      seconds: Math.round((performance.now() - started) / 10) / 100,
      cpuSeconds: Math.round((cpu.user + cpu.system) / 10_000) / 100,
      peakRssMb: mb(Math.max(peak, process.memoryUsage.rss())),
    };
  } finally {
    clearInterval(sampler);
  }
}

async function measure(store: LedgerStore, url: string, count: number, db: string): Promise<Record<string, unknown>> {
  await store.migrate();
  const fillStarted = performance.now();
  await fill(url, count);
  const fillSeconds = Math.round((performance.now() - fillStarted) / 100) / 10;
  const rssBeforeMb = mb(process.memoryUsage.rss());
  const take = await timed(() =>
    takeSnapshot(store, { id: "bench", pointType: POINT_TYPE, measure: "available", decimals: 18, asOfMs: null }, Date.now, ADMIN_ACTOR),
  );
  if (take.value.kind !== "created") throw new Error(`snapshot not created: ${take.value.kind}`);
  const snapshot = take.value.snapshot;
  const someone =
    `0x${((7n * 2654435761n) % 4294967296n).toString(16).padStart(8, "0")}${(7).toString(16).padStart(32, "0")}` as AddressKey;
  const proof = await timed(() => snapshotProof(store, snapshot, someone));
  let dumpBytes = 0;
  const dump = await timed(async () => {
    for await (const text of treeDumpText(store, snapshot.id)) dumpBytes += Buffer.byteLength(text);
  });
  return {
    db,
    addresses: count,
    leafCount: snapshot.leafCount,
    root: snapshot.root,
    fillSeconds,
    rssBeforeSnapshotMb: rssBeforeMb,
    snapshotSeconds: take.seconds,
    snapshotCpuSeconds: take.cpuSeconds,
    loadAverage: os.loadavg().map((load) => Math.round(load * 10) / 10),
    snapshotPeakRssMb: take.peakRssMb,
    processMaxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    proofMs: Math.round(proof.seconds * 1000),
    proofLength: proof.value?.proof.length ?? null,
    dumpSeconds: dump.seconds,
    dumpMb: mb(dumpBytes),
    dumpPeakRssMb: dump.peakRssMb,
    targets: { snapshotSeconds: 30, peakRssMb: 1024 },
  };
}

export async function runSnapshotBench(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { snapshot: { type: "boolean" }, db: { type: "string", default: "sqlite" }, addresses: { type: "string" } },
    strict: false,
  });
  const count = values.addresses === undefined ? DEFAULT_ADDRESSES : Number(values.addresses);
  if (!Number.isInteger(count) || count < 1) throw new Error(`--addresses must be a whole number ≥ 1, got "${String(values.addresses)}"`);
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-bench-snapshot-"));
  const schema =
    values.db === "postgres" && process.env.BENCH_DATABASE_URL ? await createBenchSchema(process.env.BENCH_DATABASE_URL) : null;
  if (values.db === "postgres" && schema === null) {
    console.error("--db postgres needs BENCH_DATABASE_URL; skipped");
    return 0;
  }
  const url = schema?.url ?? `sqlite:${join(dir, "snapshot.db")}`;
  const store = await openStore({ databaseUrl: url, sqliteSynchronous: "NORMAL", pgPoolSize: 4, pgStatementTimeoutMs: 120_000 });
  try {
    const figures = await measure(store, url, count, schema === null ? "sqlite" : "postgres");
    process.stdout.write(JSON.stringify(figures, null, 2) + "\n");
    return 0;
  } finally {
    await store.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
