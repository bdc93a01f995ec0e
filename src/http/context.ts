import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Metrics } from "../metrics.js";
import type { LedgerStore } from "../store/store.js";

/** What every route needs; passed in, never imported globally. */
export interface AppContext {
  config: Config;
  store: LedgerStore;
  clock: Clock;
  metrics: Metrics;
}

/** Per-token request budget of the contract routes (RATE_LIMIT_PER_MINUTE); keyed by the Authorization header. */
export function contractRateLimit(ctx: AppContext) {
  return { rateLimit: { max: ctx.config.rateLimitPerMinute, timeWindow: 60_000 } };
}
