import type { AddressKey } from "./address.js";
import { SYSTEM_ACTOR, type Actor } from "./api-keys.js";
import { availableOf, type Balance } from "./balance.js";
import type { Batch, NewBatch } from "./batch.js";
import { assertInvariant } from "./errors.js";
import { batchEvent, creditCreated, operatorChanged, type CreditFacts, type LedgerEvent } from "./events.js";
import { MAX_SUPPLY_UNITS } from "./points.js";

/**
 * The ledger's transitions, decided once, here (README, Architecture: Ledger model). Each takes the state
 * the store read inside its transaction and returns what changes and the events it causes; the
 * adapters (src/store/sqlite, src/store/postgres) apply the change under a status or row guard
 * and append the events in the same transaction. Nothing here does I/O.
 */

/** Amounts added to (negative: taken from) one account's counters. */
export type BalanceChange = Partial<Balance>;

/** The balance after `change`; a change that would make a counter or `available` negative is a broken invariant. */
export function applyChange(balance: Balance, change: BalanceChange): Balance {
  const after: Balance = {
    earnedCumulative: balance.earnedCumulative + (change.earnedCumulative ?? 0n),
    receivedCumulative: balance.receivedCumulative + (change.receivedCumulative ?? 0n),
    finalizedSentCumulative: balance.finalizedSentCumulative + (change.finalizedSentCumulative ?? 0n),
    pendingSent: balance.pendingSent + (change.pendingSent ?? 0n),
  };
  assertInvariant(after.pendingSent >= 0n, "pendingSent would fall below zero");
  assertInvariant(availableOf(after) >= 0n, "available would fall below zero");
  return after;
}

export type SubmitTransition =
  | { kind: "insufficient"; available: bigint; requested: bigint }
  | { kind: "accepted"; batch: Batch; senderChange: BalanceChange; events: LedgerEvent[] };

/** submit by `submittedBy`: the total must fit the sender's available balance; it moves into pendingSent at once. */
export function submitTransition(batch: NewBatch, sender: Balance, submittedBy: Actor): SubmitTransition {
  const available = availableOf(sender);
  if (available < batch.total) return { kind: "insufficient", available, requested: batch.total };
  const accepted = acceptedBatch(batch, submittedBy);
  return {
    kind: "accepted",
    batch: accepted,
    senderChange: { pendingSent: batch.total },
    events: [batchEvent("batch.accepted", accepted, batch.createdAtMs, submittedBy)],
  };
}

/** A new batch as stored: PENDING, finalizing `secondsToFinalize` after its creation. */
export function acceptedBatch(batch: NewBatch, submittedBy: Actor): Batch {
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    pointType: batch.pointType,
    status: "PENDING",
    total: batch.total,
    transferCount: batch.transfers.length,
    secondsToFinalize: batch.secondsToFinalize,
    createdAtMs: batch.createdAtMs,
    finalizeAtMs: batch.createdAtMs + batch.secondsToFinalize * 1000,
    updatedAtMs: null,
    finalizedAtMs: null,
    cancelledAtMs: null,
    submittedBy,
    cancelledBy: null,
  };
}

export type CancelTransition =
  | { kind: "already_cancelled" }
  | { kind: "not_cancellable" }
  | { kind: "cancelled"; batch: Batch; senderChange: BalanceChange; events: LedgerEvent[] };

/**
 * cancel: PENDING → CANCELLED while now < finalizeAt (at finalizeAt it belongs to the finalizer);
 * its total leaves pendingSent. A repeated cancel changes nothing and makes no event (and keeps
 * the first cancel's cancelledBy).
 */
export function cancelTransition(batch: Batch, nowMs: number, cancelledBy: Actor): CancelTransition {
  if (batch.status === "CANCELLED") return { kind: "already_cancelled" };
  if (batch.status !== "PENDING" || nowMs >= batch.finalizeAtMs) return { kind: "not_cancellable" };
  const cancelled: Batch = { ...batch, status: "CANCELLED", updatedAtMs: nowMs, cancelledAtMs: nowMs, cancelledBy };
  return {
    kind: "cancelled",
    batch: cancelled,
    senderChange: { pendingSent: -batch.total },
    events: [batchEvent("batch.cancelled", cancelled, nowMs, cancelledBy)],
  };
}

export type FinalizeTransition =
  { kind: "not_due" } | { kind: "finalized"; batch: Batch; senderChange: BalanceChange; events: LedgerEvent[] };

/**
 * finalize: PENDING → FINALIZED once finalizeAt has come; the sender's pendingSent moves to
 * finalizedSentCumulative and every recipient's receivedCumulative grows by its transfer (the
 * adapter applies the recipients' part as one bulk statement, from the stored transfers).
 */
export function finalizeTransition(batch: Batch, nowMs: number): FinalizeTransition {
  if (batch.status !== "PENDING" || nowMs < batch.finalizeAtMs) return { kind: "not_due" };
  const finalized: Batch = { ...batch, status: "FINALIZED", updatedAtMs: nowMs, finalizedAtMs: nowMs };
  return {
    kind: "finalized",
    batch: finalized,
    senderChange: { pendingSent: -batch.total, finalizedSentCumulative: batch.total },
    // Finalization is the service's own work, whoever submitted the batch.
    events: [batchEvent("batch.finalized", finalized, nowMs, SYSTEM_ACTOR)],
  };
}

export type CreditTransition =
  { kind: "overflow" } | { kind: "credited"; supplyAfter: bigint; change: BalanceChange; events: LedgerEvent[] };

/** credit: points enter the ledger; the point type's supply (all credits) stays ≤ MAX_SUPPLY_UNITS, so no amount can overflow. */
export function creditTransition(credit: CreditFacts, supplyBefore: bigint, nowMs: number, actor: Actor): CreditTransition {
  const supplyAfter = supplyBefore + credit.amount;
  if (supplyAfter > MAX_SUPPLY_UNITS) return { kind: "overflow" };
  return { kind: "credited", supplyAfter, change: { earnedCumulative: credit.amount }, events: [creditCreated(credit, nowMs, actor)] };
}

export type OperatorTransition = { kind: "unchanged" } | { kind: "changed"; revokeTokens: true; events: LedgerEvent[] };

/** operator change: setting the same operator again keeps its tokens; a change revokes them all. */
export function operatorTransition(
  contract: AddressKey,
  current: AddressKey | null,
  next: AddressKey,
  nowMs: number,
  actor: Actor,
): OperatorTransition {
  if (current === next) return { kind: "unchanged" };
  return { kind: "changed", revokeTokens: true, events: [operatorChanged(contract, next, current, nowMs, actor)] };
}
