/** The library surface: build the app or run the server from your own code. */
export { loadConfig, ConfigError, type Config } from "./config.js";
export { buildApp, type AppOptions } from "./http/app.js";
export { startServer, type RunningServer } from "./server.js";
export { openStore } from "./ledger/open.js";
export type { LedgerStore } from "./store/store.js";
export { parsePoints, formatPoints } from "./domain/points.js";
