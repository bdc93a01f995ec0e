import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  newAdminToken,
  randomAddress,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { auditTransparencyLog } from "./helpers/tlog-audit.js";

/**
 * The transparency log across SIGKILL (SQLite, the built server): credits are written while the
 * service is killed with SIGKILL now and then and restarted on the same database; every checkpoint
 * seen on the way is kept. At the end the independent verifier (helpers/tlog-audit.ts) finds every
 * event logged once, at its place in the events API's order, each one's inclusion in the last
 * checkpoint, and every pair of checkpoints consistent: nothing lost or doubled by a crash. The
 * same on PostgreSQL, two instances at once: tlog-crash-postgres.test.ts.
 */

const ROUNDS = 3;
const CREDITS_PER_ROUND = 10;

let server: ServerProcess | null = null;
afterEach(async () => {
  await server?.kill("SIGKILL");
  server = null;
});
beforeAll(() => assertBuilt());

describe("the transparency log across SIGKILL", () => {
  it(
    "loses and doubles nothing: every event once, in order, every checkpoint consistent with every other",
    { timeout: 240_000 },
    async () => {
      const dir = tempDir("tlog-crash");
      const adminToken = newAdminToken();
      const env = { DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn", LOG_CHECKPOINT_SECONDS: "1" };
      const notes = new Set<string>();
      const address = randomAddress();
      let key = "";
      for (let round = 0; round < ROUNDS; round++) {
        server = await startServerProcess(env);
        key ||= (await (await fetch(`${server.url}/v1/log/key`)).text()).trim();
        for (let i = 0; i < CREDITS_PER_ROUND; i++) {
          await fetch(`${server.url}/v1/admin/contracts/${address}/credits/r${round}-${i}`, {
            method: "PUT",
            headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
            body: JSON.stringify({ pointType: "PHASE2_POINTS", points: "1" }),
          }).catch(() => undefined);
          const note = await fetch(`${server.url}/v1/log/checkpoint`);
          if (note.status === 200) notes.add(await note.text());
        }
        // Killed while the log is behind (the last credits are not in a checkpoint yet).
        await server.kill("SIGKILL");
        server = null;
      }
      server = await startServerProcess(env);
      const audit = await auditTransparencyLog(server.url, adminToken, key, notes);
      expect(audit.events.length).toBe(ROUNDS * CREDITS_PER_ROUND);
      expect(audit.checkpoints).toBeGreaterThan(2);
    },
  );
});
