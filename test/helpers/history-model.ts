/**
 * An independent model of balances over time, for the history suites (test/history-suite.ts): a
 * running ledger (credits, submits, cancels, finalizations applied as they happen) that records
 * every account's balance after each change, with the time of the change. A balance as of a time
 * is then the last recorded one at or before it: nothing here knows how the store answers
 * `asOf` (which rows it reads, which times it compares).
 */

export interface ModelBalance {
  earnedCumulative: bigint;
  receivedCumulative: bigint;
  finalizedSentCumulative: bigint;
  pendingSent: bigint;
}

const ZERO: ModelBalance = Object.freeze({ earnedCumulative: 0n, receivedCumulative: 0n, finalizedSentCumulative: 0n, pendingSent: 0n });

export interface ModelBatch {
  contract: string;
  batchId: string;
  pointType: string;
  transfers: { toAddress: string; amount: bigint }[];
  total: bigint;
  createdAtMs: number;
  finalizeAtMs: number;
  status: "PENDING" | "CANCELLED" | "FINALIZED";
}

export function availableIn(balance: ModelBalance): bigint {
  return balance.earnedCumulative + balance.receivedCumulative - balance.finalizedSentCumulative - balance.pendingSent;
}

export class HistoryModel {
  /** Per `address pointType`: the balance after each change, in time order. */
  private readonly recorded = new Map<string, { atMs: number; balance: ModelBalance }[]>();
  readonly batches = new Map<string, ModelBatch>();
  /** Every time at which something changed, in order (with repeats removed). */
  readonly eventTimes: number[] = [];
  private lastMs = -Infinity;

  private change(address: string, pointType: string, atMs: number, delta: Partial<ModelBalance>): void {
    if (atMs < this.lastMs) throw new Error(`model clock went back: ${atMs} < ${this.lastMs}`);
    this.lastMs = atMs;
    if (this.eventTimes.at(-1) !== atMs) this.eventTimes.push(atMs);
    const key = `${address} ${pointType}`;
    const history = this.recorded.get(key) ?? [];
    const before = history.at(-1)?.balance ?? ZERO;
    const after: ModelBalance = {
      earnedCumulative: before.earnedCumulative + (delta.earnedCumulative ?? 0n),
      receivedCumulative: before.receivedCumulative + (delta.receivedCumulative ?? 0n),
      finalizedSentCumulative: before.finalizedSentCumulative + (delta.finalizedSentCumulative ?? 0n),
      pendingSent: before.pendingSent + (delta.pendingSent ?? 0n),
    };
    if (availableIn(after) < 0n || after.pendingSent < 0n) throw new Error(`model overdrew ${key}`);
    history.push({ atMs, balance: after });
    this.recorded.set(key, history);
  }

  current(address: string, pointType: string): ModelBalance {
    return this.recorded.get(`${address} ${pointType}`)?.at(-1)?.balance ?? ZERO;
  }

  /** The balance after every change at or before asOfMs; zero before the first. */
  asOf(address: string, pointType: string, asOfMs: number): ModelBalance {
    let found = ZERO;
    for (const entry of this.recorded.get(`${address} ${pointType}`) ?? []) {
      if (entry.atMs > asOfMs) break;
      found = entry.balance;
    }
    return found;
  }

  /** Every address that any change touched. */
  addresses(): string[] {
    return [...new Set([...this.recorded.keys()].map((key) => key.slice(0, key.indexOf(" "))))].sort();
  }

  credit(address: string, pointType: string, amount: bigint, atMs: number): void {
    this.change(address, pointType, atMs, { earnedCumulative: amount });
  }

  submit(batch: Omit<ModelBatch, "status">): void {
    this.change(batch.contract, batch.pointType, batch.createdAtMs, { pendingSent: batch.total });
    this.batches.set(`${batch.contract} ${batch.batchId}`, { ...batch, status: "PENDING" });
  }

  cancel(contract: string, batchId: string, atMs: number): void {
    const batch = this.pending(contract, batchId);
    batch.status = "CANCELLED";
    this.change(contract, batch.pointType, atMs, { pendingSent: -batch.total });
  }

  finalize(contract: string, batchId: string, atMs: number): void {
    const batch = this.pending(contract, batchId);
    batch.status = "FINALIZED";
    this.change(contract, batch.pointType, atMs, { pendingSent: -batch.total, finalizedSentCumulative: batch.total });
    for (const transfer of batch.transfers) this.change(transfer.toAddress, batch.pointType, atMs, { receivedCumulative: transfer.amount });
  }

  /** PENDING batches whose finalizeAt has come at nowMs, as `contract batchId`. */
  due(nowMs: number): string[] {
    return [...this.batches.entries()].filter(([, b]) => b.status === "PENDING" && b.finalizeAtMs <= nowMs).map(([key]) => key);
  }

  private pending(contract: string, batchId: string): ModelBatch {
    const batch = this.batches.get(`${contract} ${batchId}`);
    if (!batch || batch.status !== "PENDING") throw new Error(`model: ${batchId} of ${contract} is not pending`);
    return batch;
  }
}
