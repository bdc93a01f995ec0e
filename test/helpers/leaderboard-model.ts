import type { AddressKey } from "../../src/domain/address.js";
import type { PointType, Transfer } from "../../src/domain/batch.js";

/**
 * A reference for the leaderboards (API.md "Leaderboards and history"), written from the API's
 * words with no code shared with the adapters or src/domain/leaderboard.ts: it keeps every
 * finalized transfer and ranks by brute force on each question.
 */

export interface ModelStanding {
  address: AddressKey;
  points: bigint;
  /** Competition rank: 1 + the number of addresses with strictly more points. */
  rank: number;
}

/** Bounds in epoch ms, `toMs` exclusive; null: unbounded on that side. */
export interface ModelWindow {
  fromMs: number | null;
  toMs: number | null;
}

interface FinalizedTransfer {
  contract: AddressKey;
  pointType: PointType;
  toAddress: AddressKey;
  amount: bigint;
  finalizedAtMs: number;
}

export class LeaderboardModel {
  private readonly transfers: FinalizedTransfer[] = [];

  /** The latest finalization time recorded (0 before any). */
  get lastFinalizedAtMs(): number {
    return this.transfers.reduce((latest, transfer) => Math.max(latest, transfer.finalizedAtMs), 0);
  }

  /** A batch that finalized at finalizedAtMs: every transfer of it counts. */
  finalized(contract: AddressKey, pointType: PointType, transfers: readonly Transfer[], finalizedAtMs: number): void {
    for (const transfer of transfers) {
      this.transfers.push({ contract, pointType, toAddress: transfer.toAddress, amount: transfer.amount, finalizedAtMs });
    }
  }

  /**
   * The whole board, best first: points descending, address ascending within equal points; as of
   * `throughMs` (API.md `through`): only the batches finalized at or before it count.
   */
  board(contract: AddressKey, pointType: PointType, window: ModelWindow, throughMs = Number.POSITIVE_INFINITY): ModelStanding[] {
    const sums = new Map<AddressKey, bigint>();
    for (const transfer of this.transfers) {
      if (transfer.contract !== contract || transfer.pointType !== pointType) continue;
      if (transfer.finalizedAtMs > throughMs) continue;
      if (window.fromMs !== null && transfer.finalizedAtMs < window.fromMs) continue;
      if (window.toMs !== null && transfer.finalizedAtMs >= window.toMs) continue;
      sums.set(transfer.toAddress, (sums.get(transfer.toAddress) ?? 0n) + transfer.amount);
    }
    const entries = [...sums].filter(([, points]) => points > 0n);
    return entries
      .map(([address, points]) => ({ address, points, rank: 1 + entries.filter(([, other]) => other > points).length }))
      .sort((a, b) => (a.points !== b.points ? (a.points > b.points ? -1 : 1) : a.address < b.address ? -1 : 1));
  }

  /** An address's rank and points; rank null and 0 points when it has none on that board. */
  standing(
    contract: AddressKey,
    pointType: PointType,
    window: ModelWindow,
    address: AddressKey,
    throughMs = Number.POSITIVE_INFINITY,
  ): { rank: number | null; points: bigint } {
    const entry = this.board(contract, pointType, window, throughMs).find((standing) => standing.address === address);
    return entry ? { rank: entry.rank, points: entry.points } : { rank: null, points: 0n };
  }
}
