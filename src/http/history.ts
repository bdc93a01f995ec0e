import { validationFailed } from "../domain/errors.js";
import { zonedTimeMessage } from "../domain/messages.js";
import { zonedTimeMs } from "../domain/times.js";

/**
 * The `asOf` of a balances read (API.md "Leaderboards and history") in epoch ms: a time with its
 * zone that names a real moment, not after `nowMs` (a balance of the future is not known yet).
 */
export function asOfMsOf(asOf: string, nowMs: number): number {
  const ms = zonedTimeMs(asOf);
  if (ms === null) throw validationFailed([{ path: "asOf", message: zonedTimeMessage(asOf) }]);
  if (ms > nowMs) throw validationFailed([{ path: "asOf", message: `${asOf} is in the future: balances are known up to now` }]);
  return ms;
}
