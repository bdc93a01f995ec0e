import { randomBytes } from "node:crypto";
import { SYSTEM_ACTOR } from "../src/domain/api-keys.js";
import { expect } from "vitest";
import type { ManualClock } from "../src/clock.js";
import type { AddressKey } from "../src/domain/address.js";
import { DEFAULT_POINT_TYPES, type Batch, type NewBatch, type Transfer } from "../src/domain/batch.js";
import { MAX_POINTS_UNITS, UNITS_PER_POINT } from "../src/domain/points.js";
import type { BatchPosition, LedgerStore, NewCredit } from "../src/store/store.js";
import { LedgerModel, availableIn, type ModelBatch } from "./helpers/ledger-model.js";

/**
 * A seeded randomized workload against any LedgerStore: credits, submits (random sizes and
 * amounts, reused batchIds, exact retries, over-balance attempts), cancels, clock advances and
 * finalizeDue calls. After every step the store must answer what the reference model predicts,
 * hold the same balances for every address and point type, and pass store.verify().
 *
 * The seed alone decides every action, so a failure reruns exactly with the same seed; the
 * addresses get a random prefix per run so a shared database never sees the same names twice.
 * Like the contract suite, it must be the only caller of finalizeDue on its database.
 */

export interface WorkloadOptions {
  store: LedgerStore;
  seed: number;
  steps: number;
  clock: ManualClock;
  /** Run store.verify() every this many steps (1: after every step, the default). */
  verifyEvery?: number;
  /** How to rerun one seed, printed with a failure. */
  rerunHint?: string;
}

export interface WorkloadReport {
  seed: number;
  steps: number;
  actions: Record<string, number>;
  /** How often each answer came back, e.g. "submit exists mismatch", "cancel not_cancellable". */
  outcomes: Record<string, number>;
  batchesFinalized: number;
  batchesCancelled: number;
  submitsRefused: number;
}

const PARTICIPANTS = 10;
/** How long the events check waits for PostgreSQL to list the newest events (see checkEvents). */
const EVENTS_VISIBLE_WITHIN_MS = 10_000;
/** The first participants also send batches; every participant can receive. */
const SENDERS = 4;
const MAX_ADVANCE_MS = 90_000;
const MAX_FINALIZE_SECONDS = 120;

/** mulberry32: tiny, fast and deterministic; quality is plenty for choosing test actions. */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  uint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + (this.uint32() % (max - min + 1));
  }
  chance(probability: number): boolean {
    return this.uint32() / 2 ** 32 < probability;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[this.int(0, items.length - 1)]!;
  }
  /** A bigint in [0, bound) for bound > 0. */
  below(bound: bigint): bigint {
    let value = 0n;
    for (let scale = 1n; scale <= bound * 2n ** 32n; scale *= 2n ** 32n) value = value * 2n ** 32n + BigInt(this.uint32());
    return value % bound;
  }
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

type Action = "credit" | "submit" | "retry" | "cancel" | "advance" | "finalize" | "list";
const ACTION_WEIGHTS: [Action, number][] = [
  ["credit", 17],
  ["submit", 33],
  ["retry", 6],
  ["cancel", 12],
  ["advance", 14],
  ["finalize", 15],
  ["list", 3],
];

export async function runWorkload(options: WorkloadOptions): Promise<WorkloadReport> {
  const workload = new Workload(options);
  await workload.prepare();
  for (let step = 0; step < options.steps; step++) {
    await withSeedInError(options, step, workload, async () => {
      await workload.perform(workload.chooseAction());
      await workload.checkAfterStep(step);
    });
  }
  await withSeedInError(options, options.steps, workload, () => workload.checkListings());
  await withSeedInError(options, options.steps, workload, () => workload.checkEvents());
  return workload.report();
}

/** Rethrows any failure with the seed, step and action, so it can be rerun exactly. */
async function withSeedInError(options: WorkloadOptions, step: number, workload: Workload, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    const hint = options.rerunHint ?? `SEED=${options.seed}`;
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`workload failed: seed=${options.seed} step=${step} action=${workload.lastDescription} (rerun: ${hint})\n${message}`, {
      cause: error,
    });
  }
}

class Workload {
  private readonly store: LedgerStore;
  private readonly clock: ManualClock;
  private readonly random: Prng;
  private readonly model = new LedgerModel();
  private readonly participants: AddressKey[];
  private readonly senders: AddressKey[];
  /** Every request sent, for exact retries and batchId reuse. */
  private readonly requests: NewBatch[] = [];
  private readonly credits: NewCredit[] = [];
  private readonly actions: Record<string, number> = {};
  private readonly outcomes: Record<string, number> = {};
  private readonly counts = { batchesFinalized: 0, batchesCancelled: 0, submitsRefused: 0 };
  private readonly horizonMs: number;
  private nextId = 0;
  lastDescription = "start";

  constructor(private readonly options: WorkloadOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.random = new Prng(options.seed);
    const prefix = randomBytes(17).toString("hex");
    this.participants = Array.from({ length: PARTICIPANTS }, (_, i) => `0x${prefix}${(i + 1).toString(16).padStart(6, "0")}` as AddressKey);
    this.senders = this.participants.slice(0, SENDERS);
    this.horizonMs = options.clock.now() + options.steps * MAX_ADVANCE_MS + MAX_FINALIZE_SECONDS * 1000;
  }

  /** Finalizes anything an earlier run left due within this run's time span, so every finalizeDue answer is ours. */
  async prepare(): Promise<void> {
    for (let pass = 0; pass < 1000; pass++) {
      if ((await this.store.finalizeDue(this.horizonMs, 1000)).length === 0) return;
    }
    throw new Error("finalizeDue kept returning batches");
  }

  chooseAction(): Action {
    const total = ACTION_WEIGHTS.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.random.int(0, total - 1);
    for (const [action, weight] of ACTION_WEIGHTS) {
      if (roll < weight) return action;
      roll -= weight;
    }
    throw new Error("unreachable");
  }

  async perform(action: Action): Promise<void> {
    this.actions[action] = (this.actions[action] ?? 0) + 1;
    this.lastDescription = action;
    if (action === "credit") await this.credit();
    else if (action === "submit") await this.submit(this.newRequest());
    else if (action === "retry") await this.submit(this.retryRequest());
    else if (action === "cancel") await this.cancel();
    else if (action === "advance") this.advance();
    else if (action === "finalize") await this.finalize();
    else await this.checkListing(this.random.pick(this.senders));
  }

  private count(outcome: string): void {
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
  }

  private id(prefix: string): string {
    return `${prefix}${this.nextId++}`;
  }

  private async credit(): Promise<void> {
    const reuse = this.credits.length > 0 && this.random.chance(0.12);
    let credit: NewCredit;
    if (reuse) {
      const earlier = this.random.pick(this.credits);
      credit = this.random.chance(0.5) ? { ...earlier, createdAtMs: this.clock.now() } : { ...earlier, amount: earlier.amount + 1n };
    } else {
      credit = {
        // Mostly senders, so most batches are covered; any participant may be credited.
        address: this.random.pick(this.random.chance(0.7) ? this.senders : this.participants),
        creditId: this.id("c"),
        pointType: this.random.pick(DEFAULT_POINT_TYPES),
        amount: this.creditAmount(),
        createdAtMs: this.clock.now(),
      };
      this.credits.push(credit);
    }
    this.lastDescription = `credit ${credit.creditId} ${credit.amount} to ${credit.address} ${credit.pointType}`;
    const expected = this.model.credit(credit);
    expect(await this.store.credit(credit)).toEqual(expected);
    this.count(`credit ${expected.kind}${expected.kind === "exists" ? (expected.matchesRequest ? " match" : " mismatch") : ""}`);
  }

  /** Mostly modest amounts with fractions; rarely one near 10^18 points, so later credits overflow. */
  private creditAmount(): bigint {
    if (this.random.chance(0.02)) return MAX_POINTS_UNITS - this.random.below(1000n * UNITS_PER_POINT);
    const whole = BigInt(this.random.int(0, 500)) * UNITS_PER_POINT;
    const fraction = this.random.chance(0.5) ? this.random.below(UNITS_PER_POINT) : 0n;
    return whole + fraction + 1n;
  }

  private newRequest(): NewBatch {
    const contract = this.random.pick(this.senders);
    const pointType = this.random.pick(DEFAULT_POINT_TYPES);
    const earlier = this.requests.filter((r) => r.contract === contract);
    // Reusing a batchId with a different request must be refused as a conflict.
    const batchId = earlier.length > 0 && this.random.chance(0.08) ? this.random.pick(earlier).batchId : this.id("b");
    const others = this.participants.filter((p) => p !== contract);
    const count = this.random.chance(0.85) ? this.random.int(1, 3) : this.random.int(4, others.length);
    const recipients = this.random.shuffle(others).slice(0, count);
    const total = this.chooseTotal(availableIn(this.model.balance(contract, pointType)), count);
    const amounts = this.split(total, count);
    const transfers: Transfer[] = recipients.map((toAddress, i) => ({ toAddress, amount: amounts[i]! }));
    return {
      contract,
      batchId,
      pointType,
      transfers,
      total,
      secondsToFinalize: this.random.int(1, MAX_FINALIZE_SECONDS),
      createdAtMs: this.clock.now(),
    };
  }

  /** Within the balance, exactly the balance, or just over it; at least one unit per transfer. */
  private chooseTotal(available: bigint, count: number): bigint {
    const roll = this.random.int(0, 99);
    let total: bigint;
    if (roll < 55) total = available > 0n ? 1n + this.random.below(available) : 1n;
    else if (roll < 70) total = available;
    else if (roll < 90) total = available + 1n + this.random.below(10n * UNITS_PER_POINT);
    else total = BigInt(this.random.int(1, 20)) * UNITS_PER_POINT;
    const floor = BigInt(count);
    const ceiling = BigInt(count) * MAX_POINTS_UNITS;
    return total < floor ? floor : total > ceiling ? ceiling : total;
  }

  /** Splits total into count positive parts, none above MAX_POINTS_UNITS. */
  private split(total: bigint, count: number): bigint[] {
    const parts: bigint[] = [];
    let remaining = total;
    for (let i = 0; i < count - 1; i++) {
      const left = BigInt(count - 1 - i);
      const lowest = remaining - left * MAX_POINTS_UNITS > 1n ? remaining - left * MAX_POINTS_UNITS : 1n;
      const highest = remaining - left < MAX_POINTS_UNITS ? remaining - left : MAX_POINTS_UNITS;
      const part = lowest + this.random.below(highest - lowest + 1n);
      parts.push(part);
      remaining -= part;
    }
    parts.push(remaining);
    return this.random.shuffle(parts);
  }

  /** The same request again (a client retrying after a lost response), later in time. */
  private retryRequest(): NewBatch {
    if (this.requests.length === 0) return this.newRequest();
    return { ...this.random.pick(this.requests), createdAtMs: this.clock.now() };
  }

  private async submit(request: NewBatch): Promise<void> {
    this.requests.push(request);
    this.lastDescription = `submit ${request.batchId} by ${request.contract} ${request.pointType} total ${request.total} in ${request.transfers.length}`;
    const expected = this.model.submit(request);
    const result = await this.store.submitBatch(request);
    this.count(`submit ${expected.kind}${expected.kind === "exists" ? (expected.matchesRequest ? " match" : " mismatch") : ""}`);
    if (expected.kind === "accepted") {
      expect(result).toEqual({ kind: "accepted", batch: storedShape(expected.batch) });
      await this.checkStoredBatch(expected.batch);
    } else {
      expect(result).toEqual(expected);
      if (expected.kind === "insufficient") this.counts.submitsRefused++;
    }
  }

  private async cancel(): Promise<void> {
    const batches = this.model.allBatches();
    const pending = batches.filter((b) => b.status === "PENDING");
    // Mostly PENDING batches (the interesting case), also settled and unknown ones.
    const pool = pending.length > 0 && this.random.chance(0.6) ? pending : batches;
    const target =
      pool.length > 0 && this.random.chance(0.9)
        ? this.random.pick(pool)
        : { contract: this.random.pick(this.senders), batchId: this.id("missing") };
    const nowMs = this.clock.now();
    this.lastDescription = `cancel ${target.batchId} of ${target.contract} at ${nowMs}`;
    const expected = this.model.cancel(target.contract, target.batchId, nowMs);
    const result = await this.store.cancelBatch(target.contract, target.batchId, nowMs);
    if (expected.kind === "not_found") expect(result).toEqual(expected);
    else expect(result).toEqual({ ...expected, batch: storedShape(expected.batch) });
    if (expected.kind === "cancelled" && expected.changed) this.counts.batchesCancelled++;
    this.count(`cancel ${expected.kind}${expected.kind === "cancelled" && !expected.changed ? " again" : ""}`);
    if (nowMs === this.model.batch(target.contract, target.batchId)?.finalizeAtMs) this.count("cancel at finalizeAt");
    if (expected.kind !== "not_found") await this.checkStoredBatch(this.model.batch(target.contract, target.batchId)!);
  }

  /** Random steps, and sometimes exactly onto the next finalizeAt to hit the boundary. */
  private advance(): void {
    const next = this.modelNextFinalizeAtMs();
    const nowMs = this.clock.now();
    const randomMs = this.random.chance(0.7) ? this.random.int(0, MAX_ADVANCE_MS / 5) : this.random.int(0, MAX_ADVANCE_MS);
    const byMs = next !== null && next > nowMs && this.random.chance(0.25) ? next - nowMs : randomMs;
    this.lastDescription = `advance ${byMs} ms from ${nowMs}`;
    this.clock.advance(byMs);
  }

  private async finalize(): Promise<void> {
    const nowMs = this.clock.now();
    const limit = this.random.int(1, 4);
    this.lastDescription = `finalizeDue at ${nowMs} limit ${limit}`;
    const due = this.model.dueBatches(nowMs);
    const finalized = await this.store.finalizeDue(nowMs, limit);
    if (due.some((b) => b.finalizeAtMs === nowMs)) this.count("finalize at finalizeAt");
    if (due.length > limit) this.count("finalize limited");
    // An adapter may finalize fewer than asked (SQLite bounds each transaction by time, so a busy
    // machine gets fewer per call), but never none while something is due.
    expect(finalized.length).toBeLessThanOrEqual(Math.min(limit, due.length));
    if (due.length > 0) expect(finalized.length).toBeGreaterThan(0);
    const dueByKey = new Map(due.map((b) => [`${b.contract} ${b.batchId}`, b]));
    for (const item of finalized) {
      const batch = dueByKey.get(`${item.contract} ${item.batchId}`);
      if (!batch) throw new Error(`finalizeDue returned ${item.batchId}, which is not a due PENDING batch of this run`);
      dueByKey.delete(`${item.contract} ${item.batchId}`);
      expect(item).toEqual({
        contract: batch.contract,
        batchId: batch.batchId,
        transferCount: batch.transfers.length,
        finalizeAtMs: batch.finalizeAtMs,
        finalizedAtMs: nowMs,
      });
    }
    expectFairClaim(due, finalized);
    for (const item of finalized) {
      this.model.finalize(item.contract, item.batchId, nowMs);
      this.counts.batchesFinalized++;
      await this.checkStoredBatch(this.model.batch(item.contract, item.batchId)!);
    }
  }

  private modelNextFinalizeAtMs(): number | null {
    const pending = this.model.allBatches().filter((b) => b.status === "PENDING");
    return pending.length === 0 ? null : Math.min(...pending.map((b) => b.finalizeAtMs));
  }

  private async checkStoredBatch(batch: ModelBatch): Promise<void> {
    const stored = await this.store.getBatch(batch.contract, batch.batchId);
    expect(stored, `stored batch ${batch.batchId}`).toEqual({ ...storedShape(batch), transfers: batch.transfers });
  }

  async checkAfterStep(step: number): Promise<void> {
    for (const address of this.participants) {
      const balances = await this.store.getBalances(address);
      for (const pointType of DEFAULT_POINT_TYPES) {
        expect(balances[pointType], `balance of ${address} ${pointType}`).toEqual(this.model.balance(address, pointType));
      }
    }
    expect(this.model.selfCheck(this.participants)).toEqual([]);
    const next = await this.store.nextFinalizeAtMs();
    const expectedNext = this.modelNextFinalizeAtMs();
    if (expectedNext !== null) expect(next).toBe(expectedNext);
    else expect(next === null || next > this.horizonMs, `nextFinalizeAtMs ${next}`).toBe(true);
    if (step % (this.options.verifyEvery ?? 1) === 0) expect(await this.store.verify()).toEqual([]);
  }

  /** Pages through a sender's batches and compares them, in order, with the model. */
  async checkListing(contract: AddressKey): Promise<void> {
    const sort = this.random.chance(0.5) ? "ASC" : "DESC";
    const limit = this.random.int(1, 5);
    this.lastDescription = `list ${contract} ${sort} limit ${limit}`;
    const ordered = this.model
      .allBatches()
      .filter((b) => b.contract === contract)
      .sort((a, b) => a.createdAtMs - b.createdAtMs || a.order - b.order);
    if (sort === "DESC") ordered.reverse();
    const seen: string[] = [];
    let after: BatchPosition | undefined;
    for (let page = 0; page <= ordered.length + 1; page++) {
      const result = await this.store.listBatches(contract, { sort, limit, after });
      for (const batch of result.batches) {
        const expected = this.model.batch(contract, batch.batchId);
        expect(batch.status, batch.batchId).toBe(expected?.status);
        seen.push(batch.batchId);
      }
      if (result.next === null) break;
      after = result.next;
    }
    expect(seen).toEqual(ordered.map((b) => b.batchId));
  }

  async checkListings(): Promise<void> {
    for (const sender of this.senders) await this.checkListing(sender);
  }

  /**
   * Every batch state change has its event, and nothing else does: per sender, the stream holds
   * one batch.accepted per batch, one batch.cancelled per CANCELLED and one batch.finalized per
   * FINALIZED batch, each with the batch's state after that change.
   */
  async checkEvents(): Promise<void> {
    for (const sender of this.senders) {
      const expected: string[] = [];
      for (const batch of this.model.allBatches().filter((b) => b.contract === sender)) {
        expected.push(`batch.accepted ${batch.batchId} PENDING`);
        if (batch.status === "CANCELLED") expected.push(`batch.cancelled ${batch.batchId} CANCELLED`);
        if (batch.status === "FINALIZED") expected.push(`batch.finalized ${batch.batchId} FINALIZED`);
      }
      // On PostgreSQL an event is listed once every transaction older than it has ended, on the
      // whole database (src/store/postgres/events.ts): another suite's open transaction can hold
      // the newest ones back for a moment. Read again until they are all there or time is up.
      let seen = await this.readEvents(sender, expected.length);
      for (const deadlineMs = Date.now() + EVENTS_VISIBLE_WITHIN_MS; seen.length < expected.length && Date.now() < deadlineMs;) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        seen = await this.readEvents(sender, expected.length);
      }
      expect(seen.sort(), `events of ${sender}`).toEqual(expected.sort());
    }
  }

  /** The sender's batch events as `type id status`, every page read once. */
  private async readEvents(sender: AddressKey, expectedCount: number): Promise<string[]> {
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page <= expectedCount + 1; page++) {
      const result = await this.store.listEvents({
        stream: sender,
        after,
        types: ["batch.accepted", "batch.cancelled", "batch.finalized"],
        limit: 50,
      });
      if (result.kind !== "page") throw new Error("event cursor expired during the workload");
      for (const { event } of result.events) {
        const batch = (event.data as { batch: { id: string; status: string } }).batch;
        seen.push(`${event.type} ${batch.id} ${batch.status}`);
      }
      after = result.position;
      if (!result.hasMore) break;
    }
    return seen;
  }

  report(): WorkloadReport {
    return { seed: this.options.seed, steps: this.options.steps, actions: this.actions, outcomes: this.outcomes, ...this.counts };
  }
}

/** The Batch the store should hold for a model batch. */
function storedShape(batch: ModelBatch): Batch {
  return {
    contract: batch.contract,
    batchId: batch.batchId,
    pointType: batch.pointType,
    status: batch.status,
    total: batch.total,
    transferCount: batch.transfers.length,
    secondsToFinalize: batch.secondsToFinalize,
    createdAtMs: batch.createdAtMs,
    finalizeAtMs: batch.finalizeAtMs,
    updatedAtMs: batch.updatedAtMs,
    finalizedAtMs: batch.finalizedAtMs,
    cancelledAtMs: batch.cancelledAtMs,
    // The workload drives the store naming no actor: the service itself.
    submittedBy: SYSTEM_ACTOR,
    cancelledBy: batch.status === "CANCELLED" ? SYSTEM_ACTOR : null,
  };
}

/**
 * The fair claim of store.ts finalizeDue: round-robin by contract. Each contract's batches are
 * taken oldest first (as the model orders them), every contract's n-th before any contract's
 * (n+1)-th, so a contract left with due batches got at most one fewer than any other.
 */
function expectFairClaim(due: ModelBatch[], finalized: { contract: AddressKey; batchId: string }[]): void {
  const dueByContract = new Map<AddressKey, string[]>();
  for (const batch of due) dueByContract.set(batch.contract, [...(dueByContract.get(batch.contract) ?? []), batch.batchId]);
  const taken = new Map<AddressKey, string[]>();
  let lastTurn = 0;
  for (const item of finalized) {
    const ids = [...(taken.get(item.contract) ?? []), item.batchId];
    taken.set(item.contract, ids);
    expect(ids.length, `turn of ${item.batchId}`).toBeGreaterThanOrEqual(lastTurn);
    lastTurn = ids.length;
  }
  const most = Math.max(0, ...[...taken.values()].map((ids) => ids.length));
  for (const [contract, ids] of dueByContract) {
    const took = taken.get(contract) ?? [];
    expect(took, `batches taken from ${contract}`).toEqual(ids.slice(0, took.length));
    if (took.length < ids.length) expect(took.length, `round-robin share of ${contract}`).toBeGreaterThanOrEqual(most - 1);
  }
}
