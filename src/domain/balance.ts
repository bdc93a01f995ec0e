/**
 * An account: one (address, pointType). Amounts in units of 10^-12 point, as bigint. `available`
 * is derived, never stored: earned + received − finalizedSent − pendingSent (docs/api.md, Balances).
 */
export interface Balance {
  earnedCumulative: bigint;
  receivedCumulative: bigint;
  finalizedSentCumulative: bigint;
  pendingSent: bigint;
}

export const ZERO_BALANCE: Balance = Object.freeze({
  earnedCumulative: 0n,
  receivedCumulative: 0n,
  finalizedSentCumulative: 0n,
  pendingSent: 0n,
});

export function availableOf(balance: Balance): bigint {
  return balance.earnedCumulative + balance.receivedCumulative - balance.finalizedSentCumulative - balance.pendingSent;
}
