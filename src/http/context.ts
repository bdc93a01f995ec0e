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
