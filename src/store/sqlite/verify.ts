import type { PointType } from "../../domain/batch.js";
import { availableOf } from "../../domain/balance.js";
import type { Violation, VerifyPort } from "../ports/verify.js";
import { toBalance, type AccountRow } from "./accounts.js";
import { readSupply } from "./credits.js";
import { fromPair, fromTriple, statement, type SqliteDb } from "./db.js";
import { ADDRESS_TEXT } from "./leaderboards.js";
import { DAY_MS, rankBandOf } from "../../domain/leaderboard.js";
import { formatPoints } from "../../domain/points.js";

type Sums = Map<string, bigint>;

function add(sums: Sums, key: string, amount: bigint): void {
  sums.set(key, (sums.get(key) ?? 0n) + amount);
}

/** Streams rows of (key, whole, fraction) into exact bigint sums per key. */
function sumBy(db: SqliteDb, sql: string): Sums {
  const sums: Sums = new Map();
  for (const [key, whole, fraction] of statement(db, sql).raw(true).iterate() as Iterable<[string, bigint, bigint]>) {
    add(sums, key, fromPair(whole, fraction));
  }
  return sums;
}

function compare(violations: Violation[], label: string, key: string, stored: bigint, expected: bigint | undefined): void {
  const want = expected ?? 0n;
  if (stored !== want) {
    violations.push({
      invariant: 2,
      message: `${key}: ${label} is ${formatPoints(stored)} but its records sum to ${formatPoints(want)}`,
    });
  }
}

/** Checks the ledger invariants 1-4 (README, Architecture: Ledger model) over the whole database; read in one snapshot. */
function verifyLedger(db: SqliteDb): Violation[] {
  const violations: Violation[] = [];
  const pending = sumBy(
    db,
    "SELECT contract || ' ' || point_type, total_w, total_f FROM batches WHERE status IN ('PENDING', 'FINALIZING')",
  );
  const finalized = sumBy(db, "SELECT contract || ' ' || point_type, total_w, total_f FROM batches WHERE status = 'FINALIZED'");
  const earned = new Map<string, bigint>();
  for (const [key, units] of statement(db, "SELECT address || ' ' || point_type, amount_units FROM credits")
    .raw(true)
    .iterate() as Iterable<[string, string]>) {
    add(earned, key, BigInt(units));
  }
  const received = sumBy(
    db,
    `SELECT t.to_address || ' ' || b.point_type, t.amount_w, t.amount_f
     FROM transfers t JOIN batches b ON b.seq = t.seq WHERE b.status = 'FINALIZED'`,
  );
  const totals = { received: new Map<string, bigint>(), sent: new Map<string, bigint>() };
  const seen = new Set<string>();
  for (const row of statement(db, "SELECT * FROM accounts").iterate() as Iterable<AccountRow & { address: string; point_type: string }>) {
    const key = `${row.address} ${row.point_type}`;
    seen.add(key);
    const balance = toBalance(row);
    if (availableOf(balance) < 0n) violations.push({ invariant: 1, message: `${key}: available < 0` });
    compare(violations, "pendingSent", key, balance.pendingSent, pending.get(key));
    compare(violations, "finalizedSentCumulative", key, balance.finalizedSentCumulative, finalized.get(key));
    compare(violations, "earnedCumulative", key, balance.earnedCumulative, earned.get(key));
    compare(violations, "receivedCumulative", key, balance.receivedCumulative, received.get(key));
    add(totals.received, String(row.point_type), balance.receivedCumulative);
    add(totals.sent, String(row.point_type), balance.finalizedSentCumulative);
  }
  for (const sums of [pending, finalized, earned, received]) {
    for (const [key, amount] of sums) {
      if (!seen.has(key) && amount !== 0n) violations.push({ invariant: 2, message: `${key}: records exist but no account` });
    }
  }
  for (const [pointType, received] of totals.received) {
    const sent = totals.sent.get(pointType) ?? 0n;
    if (received !== sent) {
      violations.push({
        invariant: 3,
        message: `${pointType}: sum(received) ${formatPoints(received)} ≠ sum(finalizedSent) ${formatPoints(sent)}`,
      });
    }
  }
  verifyBatchTotals(db, violations);
  verifySupply(db, earned, violations);
  verifyHistory(db, violations);
  verifyWindowBoards(db, violations);
  return violations;
}

/** Streams rows of (key, q, whole, fraction) into exact bigint sums per key. */
function sumTriplesBy(db: SqliteDb, sql: string): Sums {
  const sums: Sums = new Map();
  for (const [key, q, whole, fraction] of statement(db, sql).raw(true).iterate() as Iterable<[string, bigint, bigint, bigint]>) {
    add(sums, key, fromTriple(q, whole, fraction));
  }
  return sums;
}

function compareSums(violations: Violation[], label: string, stored: Sums, expected: Sums): void {
  for (const key of new Set([...stored.keys(), ...expected.keys()])) {
    const have = stored.get(key) ?? 0n;
    const want = expected.get(key) ?? 0n;
    if (have !== want) violations.push({ invariant: 5, message: `${key}: ${label} is ${have} but the ledger says ${want}` });
  }
}

/** The batches the projection has applied (src/ledger/projection.ts): FINALIZED at or before the projection file's through. */
const APPLIED = (batch: string) =>
  `${batch}.status = 'FINALIZED' AND ${batch}.finalized_at_ms <= (SELECT through_ms FROM projection_through WHERE id = 1)`;

/**
 * The projection's queue and through (../projection-file.ts): the queue lists every FINALIZED
 * batch at its finalization time and nothing else (through alone says which are applied), and the
 * finalizations' fence is at or past through.
 */
function verifyQueue(db: SqliteDb, violations: Violation[]): void {
  const throughMs = statement(db, "SELECT through_ms FROM projection_through WHERE id = 1").pluck().get() as bigint;
  const fenceMs = statement(db, "SELECT fence_ms FROM main.projection_state WHERE id = 1").pluck().get() as bigint;
  if (fenceMs < throughMs) {
    violations.push({ invariant: 5, message: `the finalizations' fence (${fenceMs}) is below the projection's through (${throughMs})` });
  }
  for (const [batchId, status, finalizedAtMs] of statement(
    db,
    `SELECT b.batch_id, b.status, b.finalized_at_ms FROM projection_queue q JOIN batches b ON b.seq = q.seq
     WHERE b.status <> 'FINALIZED' OR b.finalized_at_ms <> q.finalized_at_ms
     UNION ALL SELECT b.batch_id, b.status, b.finalized_at_ms FROM batches b
     WHERE b.status = 'FINALIZED' AND NOT EXISTS (SELECT 1 FROM projection_queue q WHERE q.seq = b.seq)`,
  )
    .raw(true)
    .iterate() as Iterable<[string, string, bigint | null]>) {
    violations.push({ invariant: 5, message: `batch ${batchId} (${status}, finalized at ${finalizedAtMs}) is not queued as it finalized` });
  }
}

/**
 * Invariant 5, the projection: it stands at through (every applied batch finalized at or before
 * it, every queued one after it, and the queue holds only FINALIZED batches), each board entry is
 * what its contract's applied transfers sent the address, each band counts its entries, each
 * address's received_daily adds up to its applied receipts, and each received_daily row is what
 * its contract's applied batches of that UTC day sent the address, between the first and the last
 * of their times.
 */
function verifyHistory(db: SqliteDb, violations: Violation[]): void {
  verifyQueue(db, violations);
  const sent = sumBy(
    db,
    `SELECT b.contract || ' ' || b.point_type || ' ' || t.to_address, t.amount_w, t.amount_f
     FROM transfers t JOIN batches b ON b.seq = t.seq WHERE ${APPLIED("b")}`,
  );
  const received = sumBy(
    db,
    `SELECT t.to_address || ' ' || b.point_type, t.amount_w, t.amount_f FROM transfers t JOIN batches b ON b.seq = t.seq WHERE ${APPLIED("b")}`,
  );
  const entries = sumTriplesBy(
    db,
    `SELECT bo.contract || ' ' || bo.point_type || ' ' || ${ADDRESS_TEXT("e.address")}, e.points_q, e.points_w, e.points_f
     FROM board_entries e JOIN boards bo ON bo.board = e.board`,
  );
  compareSums(violations, "leaderboard entry (units)", entries, sent);
  compareBands(
    db,
    violations,
    "leaderboard band entries",
    entries,
    `SELECT bo.contract || ' ' || bo.point_type || ' band ' || bb.band, bb.entries
     FROM board_bands bb JOIN boards bo ON bo.board = bb.board WHERE bb.entries <> 0`,
  );
  const daily = (columns: string) =>
    `SELECT ${ADDRESS_TEXT("r.address")} || ' ' || bo.point_type${columns} FROM received_daily r JOIN boards bo ON bo.board = r.board`;
  const history = sumTriplesBy(db, daily(", r.amount_q, r.amount_w, r.amount_f"));
  compareSums(violations, "received history (units)", history, received);
  // Each day's row, with its receipt times as "first last" of the receipts that moved points.
  const dayKey = (address: string, batch: string) =>
    `${address} || ' ' || ${batch}.point_type || ' ' || (${batch}.finalized_at_ms - ${batch}.finalized_at_ms % ${DAY_MS}) || ' ' || ${batch}.contract`;
  const days = sumTriplesBy(db, daily(" || ' ' || r.day_ms || ' ' || bo.contract, r.amount_q, r.amount_w, r.amount_f"));
  const daySent = sumBy(
    db,
    `SELECT ${dayKey("t.to_address", "b")}, t.amount_w, t.amount_f FROM transfers t JOIN batches b ON b.seq = t.seq WHERE ${APPLIED("b")}`,
  );
  compareSums(violations, "received on a day (units)", days, daySent);
  const times = (sql: string) =>
    new Map((statement(db, sql).raw(true).all() as [string, bigint, bigint][]).map(([key, first, last]) => [key, `${first} ${last}`]));
  const stored = times(daily(" || ' ' || r.day_ms || ' ' || bo.contract, r.first_at_ms, r.last_at_ms"));
  const expected = times(
    `SELECT ${dayKey("t.to_address", "b")}, min(b.finalized_at_ms), max(b.finalized_at_ms)
     FROM transfers t JOIN batches b ON b.seq = t.seq
     WHERE ${APPLIED("b")} AND (t.amount_w > 0 OR t.amount_f > 0) GROUP BY 1`,
  );
  for (const key of new Set([...stored.keys(), ...expected.keys()])) {
    if (stored.get(key) !== expected.get(key)) {
      violations.push({
        invariant: 5,
        message: `${key}: received on a day (first and last times) is ${stored.get(key)} but the ledger says ${expected.get(key)}`,
      });
    }
  }
}

/**
 * Each band of a board counts its entries: `entries` keyed "<board> <address>", `bandsSql` rows
 * of ("<board> band <band>", entries) for the bands that are not empty.
 */
function compareBands(db: SqliteDb, violations: Violation[], label: string, entries: Sums, bandsSql: string): void {
  const counted: Sums = new Map();
  for (const [key, units] of entries) add(counted, `${key.slice(0, key.lastIndexOf(" "))} band ${rankBandOf(units)}`, 1n);
  const bands: Sums = new Map();
  for (const [key, count] of statement(db, bandsSql).raw(true).iterate() as Iterable<[string, bigint]>) bands.set(key, BigInt(count));
  compareSums(violations, label, bands, counted);
}

/**
 * Window boards (invariant 5 too; src/store/ports/leaderboards.ts): each kept one holds only
 * FINALIZED batches of its window, counts them, and its entries and bands are what those batches
 * sent each address. Keys name the window board as "window <from_ms> <to_ms> <contract> <point type>".
 */
function verifyWindowBoards(db: SqliteDb, violations: Violation[]): void {
  const name = "'window ' || w.from_ms || ' ' || w.to_ms || ' ' || bo.contract || ' ' || bo.point_type";
  const kept = "window_boards w JOIN boards bo ON bo.board = w.board";
  for (const [key, seq] of statement(
    db,
    `SELECT ${name}, x.seq FROM ${kept} JOIN window_batches x ON x.window_id = w.window_id LEFT JOIN batches b ON b.seq = x.seq
     WHERE w.state <> 'dropping' AND (b.seq IS NULL OR NOT (${APPLIED("b")}) OR b.contract <> bo.contract
       OR b.point_type <> bo.point_type OR b.finalized_at_ms < w.from_ms OR b.finalized_at_ms >= w.to_ms)`,
  )
    .raw(true)
    .iterate() as Iterable<[string, bigint]>) {
    violations.push({ invariant: 5, message: `${key}: holds batch ${seq}, which is not an applied FINALIZED batch of the window` });
  }
  for (const [key, stored, held] of statement(
    db,
    `SELECT ${name}, w.batches, (SELECT count(*) FROM window_batches x WHERE x.window_id = w.window_id) AS held
     FROM ${kept} WHERE w.state <> 'dropping' AND w.batches <> held`,
  )
    .raw(true)
    .iterate() as Iterable<[string, bigint, bigint]>) {
    violations.push({ invariant: 5, message: `${key}: counts ${stored} batches but holds ${held}` });
  }
  // A ready window board is read as exact at through: it holds every applied batch of its window.
  for (const [key, held, applied] of statement(
    db,
    `SELECT ${name}, w.batches, (SELECT count(*) FROM batches b WHERE b.contract = bo.contract AND b.point_type = bo.point_type
       AND b.finalized_at_ms >= w.from_ms AND b.finalized_at_ms < w.to_ms AND ${APPLIED("b")}) AS applied
     FROM ${kept} WHERE w.state = 'ready' AND w.batches <> applied`,
  )
    .raw(true)
    .iterate() as Iterable<[string, bigint, bigint]>) {
    violations.push({
      invariant: 5,
      message: `${key}: is ready with ${held} batches, but the projection applied ${applied} of its window`,
    });
  }
  const sent = sumBy(
    db,
    `SELECT ${name} || ' ' || t.to_address, t.amount_w, t.amount_f
     FROM ${kept} JOIN window_batches x ON x.window_id = w.window_id JOIN transfers t ON t.seq = x.seq WHERE w.state <> 'dropping'`,
  );
  const entries = sumTriplesBy(
    db,
    `SELECT ${name} || ' ' || ${ADDRESS_TEXT("e.address")}, e.points_q, e.points_w, e.points_f
     FROM ${kept} JOIN window_entries e ON e.window_id = w.window_id WHERE w.state <> 'dropping'`,
  );
  compareSums(violations, "window board entry (units)", entries, sent);
  compareBands(
    db,
    violations,
    "window board band entries",
    entries,
    `SELECT ${name} || ' band ' || bb.band, bb.entries FROM ${kept} JOIN window_bands bb ON bb.window_id = w.window_id
     WHERE w.state <> 'dropping' AND bb.entries <> 0`,
  );
}

/** The issued supply of each point type is the sum of its credits (invariant 2, per point type). */
function verifySupply(db: SqliteDb, earned: Sums, violations: Violation[]): void {
  const credited = new Map<string, bigint>();
  for (const [key, units] of earned) add(credited, key.slice(key.indexOf(" ") + 1), units);
  const pointTypes = statement(db, "SELECT point_type FROM point_supply").pluck().all() as string[];
  for (const pointType of new Set([...pointTypes, ...credited.keys()])) {
    compare(violations, "issued supply", pointType, readSupply(db, pointType as PointType), credited.get(pointType));
  }
}

function verifyBatchTotals(db: SqliteDb, violations: Violation[]): void {
  const sums = new Map<string, { total: bigint; count: number }>();
  for (const [seq, whole, fraction] of statement(db, "SELECT seq, amount_w, amount_f FROM transfers").raw(true).iterate() as Iterable<
    [bigint, bigint, bigint]
  >) {
    const key = seq.toString();
    const entry = sums.get(key) ?? { total: 0n, count: 0 };
    entry.total += fromPair(whole, fraction);
    entry.count += 1;
    sums.set(key, entry);
  }
  for (const [seq, batchId, whole, fraction, count] of statement(db, "SELECT seq, batch_id, total_w, total_f, transfer_count FROM batches")
    .raw(true)
    .iterate() as Iterable<[bigint, string, bigint, bigint, bigint]>) {
    const entry = sums.get(seq.toString()) ?? { total: 0n, count: 0 };
    if (entry.total !== fromPair(whole, fraction) || entry.count !== Number(count)) {
      violations.push({ invariant: 4, message: `batch ${batchId}: transfers do not sum to its points or count` });
    }
  }
}

/** The ledger invariants, checked over better-sqlite3. */
export const verify = { verifyLedger } satisfies VerifyPort<SqliteDb, "sync">;
