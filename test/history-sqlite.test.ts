import { describeHistory } from "./history-suite.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";

describeHistory("SQLite", async () => {
  const { store, remove } = temporarySqliteStore();
  return { store, close: remove };
});
