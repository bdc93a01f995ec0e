import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it, expect } from "vitest";
import { ManualClock } from "../src/clock.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import type { LedgerStore } from "../src/store/store.js";
import { runWorkload } from "./workload.js";

const dir = mkdtempSync(join(tmpdir(), "mut-"));
let n = 0;
const base = () => createSqliteStore({ path: join(dir, `m${n++}.db`), synchronous: "NORMAL" });
const mutants: Record<string, (s: LedgerStore) => LedgerStore> = {
  none: (s) => s,
  cancelAtBoundary: (s) => ({ ...s, cancelBatch: (c, id, now) => s.cancelBatch(c, id, now - 1) }),
  finalizeReversed: (s) => ({ ...s, finalizeDue: async (now, limit) => (await s.finalizeDue(now, limit)).reverse() }),
  finalizeEarly: (s) => ({ ...s, finalizeDue: (now, limit) => s.finalizeDue(now + 1, limit) }),
  descIsAsc: (s) => ({ ...s, listBatches: (c, q) => s.listBatches(c, { ...q, sort: "ASC" }) }),
  verifyBlind: (s) => ({ ...s, verify: async () => [] }),
};
for (const [name, mutate] of Object.entries(mutants)) {
  it(`mutant ${name}`, async () => {
    const store = mutate(base());
    await store.migrate();
    let error: unknown = null;
    try {
      const r = await runWorkload({ store, seed: 1, steps: 400, clock: new ManualClock() });
      console.log(name, JSON.stringify(r));
    } catch (e) { error = e; console.log(name, String(e).slice(0, 400)); }
    expect(error === null).toBe(name === "none" || name === "verifyBlind");
  });
}
