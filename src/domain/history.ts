import { assertInvariant } from "./errors.js";

/**
 * Balances as they stood at a time (API.md `asOf`): the rules both databases read them by. The
 * adapters compute in bulk, in SQL (each adapter's history.ts); each SQL form of a rule below
 * is written once per adapter and pinned to it by test/history-rules.test.ts over random inputs.
 */

/**
 * Where a batch created at or before `asOfMs` stood then: finalized if it finalized by then,
 * else cancelled if it was cancelled by then, else still pending (its total reserved). A time
 * not reached (null: it never happened) does not count.
 */
export type BatchStateAsOf = "finalized" | "cancelled" | "pending";

export function batchStateAsOf(finalizedAtMs: number | null, cancelledAtMs: number | null, asOfMs: number): BatchStateAsOf {
  if (finalizedAtMs !== null && finalizedAtMs <= asOfMs) return "finalized";
  if (cancelledAtMs !== null && cancelledAtMs <= asOfMs) return "cancelled";
  return "pending";
}

/**
 * An address's received_daily row (one UTC day of one contract's receipts, with the times of its
 * first and last receipt) counts whole once its last receipt was by `asOfMs`, and not at all
 * before its first; in between (first ≤ asOf < last: only asOf's own day can) it straddles the
 * time, and only its receipts by then count.
 *
 * How a straddling day's receipts by `asOfMs` are read: from the day's batches of its contract
 * finalized in [fromMs, toMs] (every batch of the contract finalized in [first, last] lies in that
 * day), on the shorter side of asOf, since each batch read costs its transfers: "before", the
 * receipts from the first to asOf (they are the answer); "after", those after asOf to the last (the
 * answer is the day's amount less them). A tie reads before.
 */
export interface StraddlingDayRead {
  side: "before" | "after";
  fromMs: number;
  toMs: number;
}

export function straddlingDayRead(firstAtMs: number, lastAtMs: number, asOfMs: number): StraddlingDayRead {
  // Days whose last receipt was by then count whole; none before their first: only these straddle.
  assertInvariant(
    firstAtMs <= asOfMs && asOfMs < lastAtMs,
    `a day of receipts from ${firstAtMs} to ${lastAtMs} does not straddle ${asOfMs}`,
  );
  return asOfMs - firstAtMs <= lastAtMs - asOfMs
    ? { side: "before", fromMs: firstAtMs, toMs: asOfMs }
    : { side: "after", fromMs: asOfMs + 1, toMs: lastAtMs };
}

/** A straddling day's receipts by asOf, from the day's amount and the receipts its read side found. */
export function straddlingDayUnits(read: StraddlingDayRead, dayUnits: bigint, sideUnits: bigint): bigint {
  const units = read.side === "before" ? sideUnits : dayUnits - sideUnits;
  assertInvariant(units >= 0n && units <= dayUnits, `a straddling day's receipts by then (${units}) are not within its ${dayUnits}`);
  return units;
}
