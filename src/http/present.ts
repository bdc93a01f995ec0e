import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { checksumAddress } from "../domain/address.js";
import type { BatchWithTransfers, Transfer } from "../domain/batch.js";
import { batchJson } from "../domain/json.js";
import { formatPoints } from "../domain/points.js";
import type { PointType } from "../domain/batch.js";
import { availableOf, type AssetEarnings, type Balance, type Balances } from "../store/store.js";

/** Domain objects → the JSON shapes of docs/api.md. */

export { batchJson, isoTime } from "../domain/json.js";

/** Transfers formatted between two yields to the event loop: ≈ 0.5-3 ms of work each. */
const TRANSFERS_PER_SLICE = 1000;

/**
 * The 200 body of GET one batch (docs/api.md: `{success, batch: Batch & {transfers}}`) as JSON text.
 * Written by hand rather than by the response schema's serializer: every toAddress and points is
 * hex or decimal digits, so nothing needs escaping, and fast-json-stringify (mostly its escape
 * scan of 20,000 strings) was ≈ 9 ms of a 10,000-transfer read. The transfers are formatted a
 * slice at a time with a yield between slices, so other requests are served while a big batch
 * is read.
 */
export async function batchWithTransfersText(batch: BatchWithTransfers): Promise<string> {
  const { transfers } = batch;
  const slices: string[] = [];
  for (let start = 0; start < transfers.length; start += TRANSFERS_PER_SLICE) {
    if (start > 0) await yieldToEventLoop();
    slices.push(transfersText(transfers, start, Math.min(start + TRANSFERS_PER_SLICE, transfers.length)));
  }
  // batchJson's text without its closing brace, so the transfers join the same object.
  const head = JSON.stringify(batchJson(batch)).slice(0, -1);
  return `{"success":true,"batch":${head},"transfers":[${slices.join(",")}]}}`;
}

function transfersText(transfers: readonly Transfer[], start: number, end: number): string {
  const items: string[] = new Array(end - start);
  for (let i = start; i < end; i++) {
    const transfer = transfers[i]!;
    items[i - start] = `{"toAddress":"${checksumAddress(transfer.toAddress)}","points":"${formatPoints(transfer.amount)}"}`;
  }
  return items.join(",");
}

function balanceJson(balance: Balance) {
  return {
    available: formatPoints(availableOf(balance)),
    pendingSent: formatPoints(balance.pendingSent),
    earnedCumulative: formatPoints(balance.earnedCumulative),
    receivedCumulative: formatPoints(balance.receivedCumulative),
    finalizedSentCumulative: formatPoints(balance.finalizedSentCumulative),
  };
}

type AssetEarningsJson = { earnedCumulative: string; earnedCumulativeBlock: number };

/**
 * balancesByPointType: one key per point type of `balances` (the configured ones), each with
 * byAsset listing every asset of `balanceAssets` (zero when no credit named it) and any other
 * asset a credit of that type named.
 */
export function balancesJson<T extends PointType>(
  balances: Balances<T>,
  assetEarnings: readonly AssetEarnings[],
  balanceAssets: readonly string[],
) {
  const result = {} as Record<T, ReturnType<typeof balanceJson> & { byAsset: Record<string, AssetEarningsJson> }>;
  for (const pointType of Object.keys(balances) as T[]) {
    const byAsset: Record<string, AssetEarningsJson> = {};
    for (const asset of balanceAssets) byAsset[asset] = { earnedCumulative: "0", earnedCumulativeBlock: 0 };
    result[pointType] = { ...balanceJson(balances[pointType]), byAsset };
  }
  for (const earnings of assetEarnings) {
    const balance = Object.hasOwn(result, earnings.pointType) ? result[earnings.pointType as T] : undefined;
    if (balance === undefined) continue;
    balance.byAsset[earnings.asset] = {
      earnedCumulative: formatPoints(earnings.earnedCumulative),
      earnedCumulativeBlock: earnings.earnedCumulativeBlock,
    };
  }
  return result;
}

/** balancesByPointType of an answer with `asOf`: the same figures, without byAsset (API.md "Leaderboards and history"). */
export function balancesAsOfJson<T extends PointType>(balances: Balances<T>) {
  const result = {} as Record<T, ReturnType<typeof balanceJson>>;
  for (const pointType of Object.keys(balances) as T[]) result[pointType] = balanceJson(balances[pointType]);
  return result;
}
