import { DAY_MS } from "../../domain/leaderboard.js";
import { formatPoints } from "../../domain/points.js";
import type { Violation, VerifyPort } from "../ports/verify.js";
import { AVAILABLE_SQL } from "./accounts.js";
import type { Queryable } from "./db.js";
import { rankBandSql } from "./leaderboard-tables.js";

/**
 * Per (address, pointType), what the records say each account field must be. NUMERIC sums are
 * exact, so the comparison happens in SQL and only the rows that disagree reach JavaScript.
 */
const EXPECTED_SQL = `
  pending AS (SELECT contract AS address, point_type, sum(total_units) AS units FROM batches
              WHERE status IN ('PENDING', 'FINALIZING') GROUP BY 1, 2),
  finalized AS (SELECT contract AS address, point_type, sum(total_units) AS units FROM batches
                WHERE status = 'FINALIZED' GROUP BY 1, 2),
  earned AS (SELECT address, point_type, sum(amount_units) AS units FROM credits GROUP BY 1, 2),
  received AS (SELECT t.to_address AS address, b.point_type, sum(t.amount_units) AS units
               FROM transfers t JOIN batches b ON b.seq = t.seq WHERE b.status = 'FINALIZED' GROUP BY 1, 2)`;

/** [label, account column, expected-sum CTE] for invariant 2. */
const FIELDS = [
  ["pendingSent", "pending_units", "pending"],
  ["finalizedSentCumulative", "finalized_sent_units", "finalized"],
  ["earnedCumulative", "earned_units", "earned"],
  ["receivedCumulative", "received_units", "received"],
] as const;

interface MismatchRow {
  key: string;
  label: string;
  stored: string;
  expected: string;
}

/** Checks the ledger invariants 1-4 (README, Architecture: Ledger model) over the whole database; call in one REPEATABLE READ snapshot. */
async function verifyLedger(db: Queryable): Promise<Violation[]> {
  const violations: Violation[] = [];
  const negative = await db.query<{ key: string }>(
    `SELECT a.address || ' ' || a.point_type AS key FROM accounts a WHERE ${AVAILABLE_SQL} < 0 ORDER BY 1`,
  );
  for (const row of negative.rows) violations.push({ invariant: 1, message: `${row.key}: available < 0` });
  await checkAccountSums(db, violations);
  await checkConservation(db, violations);
  await checkBatchTotals(db, violations);
  await checkHistory(db, violations);
  await checkWindowBoards(db, violations);
  return violations;
}

/** A finalized batch's UTC day (addReceipts's day_ms), of `ms` (a BIGINT column). */
const dayOf = (ms: string) => `(${ms} - ((${ms} % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS})`;

/**
 * The batches the projection has applied (src/ledger/projection.ts): FINALIZED and off its queue.
 * A CTE, so each check joins it (an anti-join with the queue once) instead of probing the queue per row.
 */
const APPLIED_SQL = `applied AS (SELECT b.seq, b.contract, b.point_type, b.finalized_at_ms FROM batches b
  WHERE b.status = 'FINALIZED' AND NOT EXISTS (SELECT 1 FROM projection_queue q WHERE q.seq = b.seq))`;

/** A board's entries counted by rank band, per board (`keys`): the CTE `counted`, over the CTE `entries`. */
const countedSql = (keys: readonly string[]) =>
  `counted AS (SELECT ${keys.join(", ")}, ${rankBandSql("points_units")} AS band, count(*) AS entries
               FROM entries GROUP BY ${keys.map((_, i) => i + 1).join(", ")}, ${keys.length + 1})`;

/**
 * A board's two checks, one for the all-time boards and the window boards alike (boards keyed by
 * `keys`): each entry is what the applied batches sent the address (the CTEs `entries`, `sent`),
 * and each rank band counts its entries (`counted`, `bands`). Mismatch rows (MismatchRow).
 */
function boardMismatchesSql(keys: readonly string[], board: string): string {
  const keyOf = (left: string, right: string) => keys.map((key) => `coalesce(${left}.${key}, ${right}.${key})`).join(" || ' ' || ");
  return `SELECT ${keyOf("e", "s")} || ' ' || coalesce(e.address, s.address) AS key,
            '${board} entry (units)' AS label, coalesce(e.points_units, 0)::text AS stored, coalesce(s.units, 0)::text AS expected
       FROM entries e FULL JOIN sent s USING (${keys.join(", ")}, address)
       WHERE coalesce(e.points_units, 0) <> coalesce(s.units, 0)
     UNION ALL
     SELECT ${keyOf("c", "b")} || ' band ' || coalesce(c.band, b.band),
            '${board} band entries', coalesce(b.entries, 0)::text, coalesce(c.entries, 0)::text
       FROM counted c FULL JOIN bands b USING (${keys.join(", ")}, band)
       WHERE coalesce(c.entries, 0) <> coalesce(b.entries, 0)`;
}

/**
 * Invariant 5, the projection (see the SQLite verify.ts), in SQL: only rows that disagree reach
 * JavaScript. It stands at through (every applied batch finalized at or before it, every queued
 * one after it, and the queue holds only FINALIZED batches at their own times); each board entry
 * is what its contract's applied transfers sent the address, each band counts its entries, each
 * address's received_daily adds up to its applied receipts, and each received_daily row is what
 * its contract's applied batches of that UTC day sent the address, between the first and the last
 * of their times (of the receipts that moved points).
 */
async function checkHistory(db: Queryable, violations: Violation[]): Promise<void> {
  await checkThrough(db, violations);
  const { rows } = await db.query<MismatchRow>(
    `WITH ${APPLIED_SQL},
          finalized AS (SELECT b.contract, b.point_type, b.finalized_at_ms, t.to_address AS address, t.amount_units AS units
                        FROM transfers t JOIN applied b ON b.seq = t.seq),
          sent AS (SELECT contract, point_type, address, sum(units) AS units FROM finalized GROUP BY 1, 2, 3),
          received AS (SELECT address, point_type, sum(units) AS units FROM finalized GROUP BY 1, 2),
          day_sent AS (SELECT address, point_type, ${dayOf("finalized_at_ms")} AS day_ms, contract, sum(units) AS units,
                              min(finalized_at_ms) FILTER (WHERE units > 0) AS first_at_ms,
                              max(finalized_at_ms) FILTER (WHERE units > 0) AS last_at_ms
                       FROM finalized GROUP BY 1, 2, 3, 4),
          entries AS (SELECT bo.contract, bo.point_type, '0x' || encode(e.address, 'hex') AS address, e.points_units
                      FROM board_entries e JOIN boards bo ON bo.board = e.board),
          history AS (SELECT address, point_type, sum(amount_units) AS units FROM received_daily GROUP BY 1, 2),
          ${countedSql(["contract", "point_type"])},
          bands AS (SELECT bo.contract, bo.point_type, bb.band, bb.entries
                    FROM board_bands bb JOIN boards bo ON bo.board = bb.board WHERE bb.entries <> 0)
     ${boardMismatchesSql(["contract", "point_type"], "leaderboard")}
     UNION ALL
     SELECT coalesce(h.address, r.address) || ' ' || coalesce(h.point_type, r.point_type), 'received history (units)',
            coalesce(h.units, 0)::text, coalesce(r.units, 0)::text
       FROM history h FULL JOIN received r USING (address, point_type)
       WHERE coalesce(h.units, 0) <> coalesce(r.units, 0)
     UNION ALL
     SELECT address || ' ' || point_type || ' ' || day_ms || ' ' || contract, 'received on a day (units)',
            coalesce(d.amount_units, 0)::text, coalesce(s.units, 0)::text
       FROM received_daily d FULL JOIN day_sent s USING (address, point_type, day_ms, contract)
       WHERE coalesce(d.amount_units, 0) <> coalesce(s.units, 0)
     UNION ALL
     SELECT address || ' ' || point_type || ' ' || day_ms || ' ' || contract, 'received on a day (first and last times)',
            coalesce(d.first_at_ms || ' ' || d.last_at_ms, 'none'), coalesce(s.first_at_ms || ' ' || s.last_at_ms, 'none')
       FROM received_daily d FULL JOIN day_sent s USING (address, point_type, day_ms, contract)
       WHERE (d.first_at_ms, d.last_at_ms) IS DISTINCT FROM (s.first_at_ms, s.last_at_ms)
     ORDER BY 1, 2`,
  );
  for (const row of rows) {
    violations.push({ invariant: 5, message: `${row.key}: ${row.label} is ${row.stored} but the ledger says ${row.expected}` });
  }
}

/** The projection's through between the applied batches and the queued ones (invariant 5). */
async function checkThrough(db: Queryable, violations: Violation[]): Promise<void> {
  const { rows } = await db.query<{ batch: string; status: string | null; finalized_at_ms: string | null; through_ms: string }>(
    `WITH ${APPLIED_SQL}, state AS (SELECT through_ms FROM projection_state WHERE id = 1)
     SELECT coalesce(b.batch_id, 'seq ' || q.seq) AS batch, b.status, b.finalized_at_ms::text, s.through_ms::text
       FROM projection_queue q CROSS JOIN state s LEFT JOIN batches b ON b.seq = q.seq
       WHERE b.seq IS NULL OR b.status <> 'FINALIZED' OR b.finalized_at_ms <> q.finalized_at_ms OR q.finalized_at_ms <= s.through_ms
     UNION ALL
     SELECT b.batch_id, 'FINALIZED', a.finalized_at_ms::text, s.through_ms::text
       FROM applied a CROSS JOIN state s JOIN batches b ON b.seq = a.seq WHERE a.finalized_at_ms > s.through_ms
     ORDER BY 1`,
  );
  for (const row of rows) {
    violations.push({
      invariant: 5,
      message: `batch ${row.batch} (${row.status ?? "missing"}, finalized at ${row.finalized_at_ms}) is on the wrong side of the projection's through (${row.through_ms})`,
    });
  }
}

/**
 * Window boards (invariant 5 too; see the SQLite verify.ts), in SQL: each kept one holds only
 * applied FINALIZED batches of its window, counts them, and its entries and bands are what those
 * batches sent each address; a ready one (read as exact at through) holds every applied batch of
 * its window. Keys name it as "window <from_ms> <to_ms> <contract> <point type>".
 */
async function checkWindowBoards(db: Queryable, violations: Violation[]): Promise<void> {
  const { rows } = await db.query<MismatchRow>(
    `WITH ${APPLIED_SQL},
          kept AS (SELECT w.window_id, w.state, w.from_ms, w.to_ms, w.batches, bo.contract, bo.point_type,
                          'window ' || w.from_ms || ' ' || w.to_ms || ' ' || bo.contract || ' ' || bo.point_type AS name
                   FROM window_boards w JOIN boards bo ON bo.board = w.board WHERE w.state <> 'dropping'),
          held AS (SELECT k.name, x.seq, b.seq IS NOT NULL AND b.contract = k.contract
                            AND b.point_type = k.point_type AND b.finalized_at_ms >= k.from_ms AND b.finalized_at_ms < k.to_ms AS fits
                   FROM kept k JOIN window_batches x ON x.window_id = k.window_id LEFT JOIN applied b ON b.seq = x.seq),
          ready AS (SELECT k.name, k.batches, (SELECT count(*) FROM applied b WHERE b.contract = k.contract AND b.point_type = k.point_type
                            AND b.finalized_at_ms >= k.from_ms AND b.finalized_at_ms < k.to_ms) AS applied
                    FROM kept k WHERE k.state = 'ready'),
          sent AS (SELECT k.name, t.to_address AS address, sum(t.amount_units) AS units
                   FROM kept k JOIN window_batches x ON x.window_id = k.window_id JOIN transfers t ON t.seq = x.seq
                   GROUP BY 1, 2 HAVING sum(t.amount_units) > 0),
          entries AS (SELECT k.name, '0x' || encode(e.address, 'hex') AS address, e.points_units
                      FROM kept k JOIN window_entries e ON e.window_id = k.window_id),
          ${countedSql(["name"])},
          bands AS (SELECT k.name, bb.band, bb.entries FROM kept k JOIN window_bands bb ON bb.window_id = k.window_id WHERE bb.entries <> 0)
     SELECT name || ' batch ' || seq AS key, 'held batch' AS label, 'held' AS stored, 'not an applied FINALIZED batch of the window' AS expected
       FROM held WHERE NOT fits
     UNION ALL
     SELECT name, 'ready window board batches', batches::text, applied::text FROM ready WHERE batches <> applied
     UNION ALL
     SELECT k.name, 'window board batches', k.batches::text, count(x.seq)::text
       FROM kept k LEFT JOIN window_batches x ON x.window_id = k.window_id GROUP BY k.name, k.batches HAVING k.batches <> count(x.seq)
     UNION ALL
     ${boardMismatchesSql(["name"], "window board")}
     ORDER BY 1, 2`,
  );
  for (const row of rows) {
    violations.push({ invariant: 5, message: `${row.key}: ${row.label} is ${row.stored} but the ledger says ${row.expected}` });
  }
}

/** Invariant 2: each account field equals the sum of its records; records never lack an account. */
async function checkAccountSums(db: Queryable, violations: Violation[]): Promise<void> {
  const mismatches = FIELDS.map(
    ([label, column, sums]) =>
      `SELECT a.address || ' ' || a.point_type AS key, '${label}' AS label, a.${column}::text AS stored,
              coalesce(s.units, 0)::text AS expected
       FROM accounts a LEFT JOIN ${sums} s USING (address, point_type)
       WHERE a.${column} <> coalesce(s.units, 0)`,
  );
  const { rows } = await db.query<MismatchRow>(`WITH ${EXPECTED_SQL} ${mismatches.join(" UNION ALL ")} ORDER BY key, label`);
  for (const row of rows) {
    violations.push({
      invariant: 2,
      message: `${row.key}: ${row.label} is ${formatPoints(BigInt(row.stored))} but its records sum to ${formatPoints(BigInt(row.expected))}`,
    });
  }
  const orphans = FIELDS.map(
    ([, , sums]) =>
      `SELECT s.address || ' ' || s.point_type AS key FROM ${sums} s
       WHERE s.units <> 0 AND NOT EXISTS (SELECT 1 FROM accounts a WHERE a.address = s.address AND a.point_type = s.point_type)`,
  );
  const orphaned = await db.query<{ key: string }>(`WITH ${EXPECTED_SQL} ${orphans.join(" UNION ALL ")} ORDER BY key`);
  for (const row of orphaned.rows) violations.push({ invariant: 2, message: `${row.key}: records exist but no account` });
}

/** Invariant 3: per point type, everything received was sent and finalized. */
async function checkConservation(db: Queryable, violations: Violation[]): Promise<void> {
  const { rows } = await db.query<{ point_type: string; received: string; sent: string }>(
    `SELECT point_type, sum(received_units)::text AS received, sum(finalized_sent_units)::text AS sent
     FROM accounts GROUP BY point_type HAVING sum(received_units) <> sum(finalized_sent_units) ORDER BY point_type`,
  );
  for (const row of rows) {
    violations.push({
      invariant: 3,
      message: `${row.point_type}: sum(received) ${formatPoints(BigInt(row.received))} ≠ sum(finalizedSent) ${formatPoints(BigInt(row.sent))}`,
    });
  }
}

/** Invariant 4: a batch's stored transfers sum to its points and number transferCount. */
async function checkBatchTotals(db: Queryable, violations: Violation[]): Promise<void> {
  const { rows } = await db.query<{ batch_id: string }>(
    `SELECT b.batch_id FROM batches b
     LEFT JOIN (SELECT seq, sum(amount_units) AS units, count(*) AS transfers FROM transfers GROUP BY seq) t ON t.seq = b.seq
     WHERE coalesce(t.units, 0) <> b.total_units OR coalesce(t.transfers, 0) <> b.transfer_count
     ORDER BY b.seq`,
  );
  for (const row of rows) {
    violations.push({ invariant: 4, message: `batch ${row.batch_id}: transfers do not sum to its points or count` });
  }
}

/** The ledger invariants, checked over pg. */
export const verify = { verifyLedger } satisfies VerifyPort<Queryable, "async">;
