import { describe, it } from "vitest";
import { describeHistory } from "./history-suite.js";
import { builtSqliteStore, NO_BUILT_STORE, temporarySqliteStore } from "./helpers/app-over-store.js";

describeHistory("SQLite", async () => {
  const { store, remove } = temporarySqliteStore();
  return { store, close: remove };
});

const built = await builtSqliteStore();
if (built) {
  describeHistory("SQLite, the projection in its worker thread (the built store)", async () => {
    const { store, remove } = temporarySqliteStore(built);
    return { store, close: remove };
  });
} else {
  describe.skip(`History on SQLite, the projection in its worker thread: ${NO_BUILT_STORE}`, () => {
    it("skipped", () => undefined);
  });
}
