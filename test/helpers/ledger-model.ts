import type { AddressKey } from "../../src/domain/address.js";
import type { BatchStatus, NewBatch, PointType, Transfer } from "../../src/domain/batch.js";
import { MAX_POINTS_UNITS } from "../../src/domain/points.js";
import type { AssetEarnings, Balance, NewCredit } from "../../src/store/store.js";

/**
 * An in-memory reference ledger written straight from the ledger model (README, Architecture), with no shared code with the
 * adapters. The randomized workload applies every operation to it and to the store, and demands
 * the same answers and the same balances.
 */

export interface ModelBatch {
  contract: AddressKey;
  batchId: string;
  pointType: PointType;
  status: BatchStatus;
  transfers: Transfer[];
  total: bigint;
  secondsToFinalize: number;
  createdAtMs: number;
  finalizeAtMs: number;
  updatedAtMs: number | null;
  finalizedAtMs: number | null;
  cancelledAtMs: number | null;
  /** Submission order: the tie-break between equal createdAt or finalizeAt. */
  order: number;
}

export type ExpectedCredit = { kind: "credited" } | { kind: "exists"; matchesRequest: boolean } | { kind: "overflow" };

export type ExpectedSubmit =
  | { kind: "accepted"; batch: ModelBatch }
  | { kind: "exists"; status: BatchStatus; matchesRequest: boolean }
  | { kind: "insufficient"; available: bigint; requested: bigint };

export type ExpectedCancel =
  { kind: "cancelled"; changed: boolean; batch: ModelBatch } | { kind: "not_found" } | { kind: "not_cancellable"; batch: ModelBatch };

const zero = (): Balance => ({ earnedCumulative: 0n, receivedCumulative: 0n, finalizedSentCumulative: 0n, pendingSent: 0n });

export function availableIn(balance: Balance): bigint {
  return balance.earnedCumulative + balance.receivedCumulative - balance.finalizedSentCumulative - balance.pendingSent;
}

export class LedgerModel {
  private readonly balances = new Map<string, Balance>();
  private readonly credits = new Map<string, { pointType: PointType; amount: bigint; asset: string | null; block: number | null }>();
  /** Per (address, pointType, asset): the credits that named the asset, summed, and their highest block. */
  private readonly assetEarnings = new Map<string, AssetEarnings & { address: AddressKey }>();
  private readonly batches = new Map<string, ModelBatch>();
  private submissions = 0;

  balance(address: AddressKey, pointType: PointType): Balance {
    return { ...(this.balances.get(`${address} ${pointType}`) ?? zero()) };
  }

  batch(contract: AddressKey, batchId: string): ModelBatch | undefined {
    return this.batches.get(`${contract} ${batchId}`);
  }

  allBatches(): ModelBatch[] {
    return [...this.batches.values()];
  }

  private update(address: AddressKey, pointType: PointType, change: (balance: Balance) => void): void {
    const balance = this.balance(address, pointType);
    change(balance);
    this.balances.set(`${address} ${pointType}`, balance);
  }

  credit(credit: NewCredit): ExpectedCredit {
    const key = `${credit.address} ${credit.creditId}`;
    const existing = this.credits.get(key);
    const asset = credit.asset ?? null;
    const block = credit.block ?? null;
    if (existing) {
      const matchesRequest =
        existing.pointType === credit.pointType &&
        existing.amount === credit.amount &&
        existing.asset === asset &&
        existing.block === block;
      return { kind: "exists", matchesRequest };
    }
    // The supply cap: all credits of a point type together stay within 10^18 points.
    let supply = credit.amount;
    for (const stored of this.credits.values()) if (stored.pointType === credit.pointType) supply += stored.amount;
    if (supply > MAX_POINTS_UNITS) return { kind: "overflow" };
    this.credits.set(key, { pointType: credit.pointType, amount: credit.amount, asset, block });
    this.update(credit.address, credit.pointType, (b) => (b.earnedCumulative += credit.amount));
    if (asset !== null) this.earnOnAsset(credit.address, credit.pointType, asset, credit.amount, block ?? 0);
    return { kind: "credited" };
  }

  private earnOnAsset(address: AddressKey, pointType: PointType, asset: string, amount: bigint, block: number): void {
    const key = `${address} ${pointType} ${asset}`;
    const earned = this.assetEarnings.get(key) ?? { address, pointType, asset, earnedCumulative: 0n, earnedCumulativeBlock: 0 };
    earned.earnedCumulative += amount;
    earned.earnedCumulativeBlock = Math.max(earned.earnedCumulativeBlock, block);
    this.assetEarnings.set(key, earned);
  }

  /** What getAssetEarnings must answer for `address`, sorted by point type then asset. */
  assetEarningsOf(address: AddressKey): AssetEarnings[] {
    return [...this.assetEarnings.values()]
      .filter((earned) => earned.address === address)
      .map(({ pointType, asset, earnedCumulative, earnedCumulativeBlock }) => ({
        pointType,
        asset,
        earnedCumulative,
        earnedCumulativeBlock,
      }))
      .sort(byPointTypeThenAsset);
  }

  /** Every point type the model holds a balance, batch or credit of. */
  pointTypesInUse(): PointType[] {
    const types = new Set<PointType>();
    for (const key of this.balances.keys()) types.add(key.split(" ")[1]!);
    for (const batch of this.batches.values()) types.add(batch.pointType);
    for (const credit of this.credits.values()) types.add(credit.pointType);
    return [...types].sort();
  }

  submit(request: NewBatch): ExpectedSubmit {
    const existing = this.batch(request.contract, request.batchId);
    if (existing) return { kind: "exists", status: existing.status, matchesRequest: sameRequest(existing, request) };
    const available = availableIn(this.balance(request.contract, request.pointType));
    if (available < request.total) return { kind: "insufficient", available, requested: request.total };
    const batch: ModelBatch = {
      contract: request.contract,
      batchId: request.batchId,
      pointType: request.pointType,
      status: "PENDING",
      transfers: request.transfers.map((t) => ({ ...t })),
      total: request.total,
      secondsToFinalize: request.secondsToFinalize,
      createdAtMs: request.createdAtMs,
      finalizeAtMs: request.createdAtMs + request.secondsToFinalize * 1000,
      updatedAtMs: null,
      finalizedAtMs: null,
      cancelledAtMs: null,
      order: this.submissions++,
    };
    this.batches.set(`${batch.contract} ${batch.batchId}`, batch);
    this.update(batch.contract, batch.pointType, (b) => (b.pendingSent += batch.total));
    return { kind: "accepted", batch: { ...batch } };
  }

  cancel(contract: AddressKey, batchId: string, nowMs: number): ExpectedCancel {
    const batch = this.batch(contract, batchId);
    if (!batch) return { kind: "not_found" };
    if (batch.status === "CANCELLED") return { kind: "cancelled", changed: false, batch: { ...batch } };
    if (batch.status !== "PENDING" || nowMs >= batch.finalizeAtMs) return { kind: "not_cancellable", batch: { ...batch } };
    batch.status = "CANCELLED";
    batch.updatedAtMs = nowMs;
    batch.cancelledAtMs = nowMs;
    this.update(contract, batch.pointType, (b) => (b.pendingSent -= batch.total));
    return { kind: "cancelled", changed: true, batch: { ...batch } };
  }

  /** PENDING batches with finalizeAt ≤ nowMs, oldest finalizeAt first. */
  dueBatches(nowMs: number): ModelBatch[] {
    return this.allBatches()
      .filter((b) => b.status === "PENDING" && b.finalizeAtMs <= nowMs)
      .sort((a, b) => a.finalizeAtMs - b.finalizeAtMs || a.order - b.order);
  }

  finalize(contract: AddressKey, batchId: string, nowMs: number): void {
    const batch = this.batch(contract, batchId);
    if (!batch || batch.status !== "PENDING") throw new Error(`model: ${batchId} is not PENDING`);
    batch.status = "FINALIZED";
    batch.updatedAtMs = nowMs;
    batch.finalizedAtMs = nowMs;
    this.update(contract, batch.pointType, (b) => {
      b.pendingSent -= batch.total;
      b.finalizedSentCumulative += batch.total;
    });
    for (const transfer of batch.transfers) {
      this.update(transfer.toAddress, batch.pointType, (b) => (b.receivedCumulative += transfer.amount));
    }
  }

  /** The model's own invariants 1-3 over the given addresses (which must include every recipient). */
  selfCheck(addresses: AddressKey[]): string[] {
    const problems: string[] = [];
    for (const pointType of this.pointTypesInUse()) {
      let received = 0n;
      let finalizedSent = 0n;
      for (const address of addresses) {
        const balance = this.balance(address, pointType);
        if (availableIn(balance) < 0n) problems.push(`model: available < 0 for ${address} ${pointType}`);
        const own = this.allBatches().filter((b) => b.contract === address && b.pointType === pointType);
        const sum = (statuses: BatchStatus[]) => own.filter((b) => statuses.includes(b.status)).reduce((total, b) => total + b.total, 0n);
        if (balance.pendingSent !== sum(["PENDING", "FINALIZING"])) problems.push(`model: pendingSent of ${address} ${pointType}`);
        if (balance.finalizedSentCumulative !== sum(["FINALIZED"])) problems.push(`model: finalizedSent of ${address} ${pointType}`);
        received += balance.receivedCumulative;
        finalizedSent += balance.finalizedSentCumulative;
      }
      if (received !== finalizedSent) problems.push(`model: conservation broken for ${pointType}`);
    }
    return problems;
  }
}

export function byPointTypeThenAsset(a: AssetEarnings, b: AssetEarnings): number {
  return a.pointType.localeCompare(b.pointType) || a.asset.localeCompare(b.asset);
}

function sameRequest(stored: ModelBatch, request: NewBatch): boolean {
  return (
    stored.pointType === request.pointType &&
    stored.secondsToFinalize === request.secondsToFinalize &&
    stored.transfers.length === request.transfers.length &&
    stored.transfers.every((t, i) => t.toAddress === request.transfers[i]!.toAddress && t.amount === request.transfers[i]!.amount)
  );
}
