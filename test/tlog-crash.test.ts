import canonicalize from "canonicalize";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openNote, parseCheckpoint, parseVerifierKey } from "../src/domain/signed-note.js";
import {
  assertBuilt,
  newAdminToken,
  pollUntil,
  randomAddress,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { refLeaf, refVerifyConsistency, refVerifyInclusion } from "./helpers/rfc9162.js";

/**
 * The transparency log across SIGKILL (SQLite, the built server): credits are written while the
 * service is killed with SIGKILL now and then and restarted on the same database; every checkpoint
 * seen on the way is kept. At the end the independent verifier (helpers/rfc9162.ts) finds every
 * event logged once, at its place in the events API's order, each one's inclusion in the last
 * checkpoint, and every pair of checkpoints consistent: nothing lost or doubled by a crash.
 */

const ROUNDS = 3;
const CREDITS_PER_ROUND = 10;

let server: ServerProcess | null = null;
afterEach(async () => {
  await server?.kill("SIGKILL");
  server = null;
});
beforeAll(() => assertBuilt());

interface EventJson {
  id: string;
  logIndex: number | null;
}

const b64 = (text: string) => new Uint8Array(Buffer.from(text, "base64"));
const leafOf = (event: object) => {
  const { logIndex: _ignored, ...logged } = event as Record<string, unknown>;
  return refLeaf(Buffer.from(canonicalize(logged)!, "utf8"));
};

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
      const url = server.url;
      const events = (
        (await (await fetch(`${url}/v1/admin/events?limit=1000`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as {
          events: EventJson[];
        }
      ).events;
      expect(events.length).toBe(ROUNDS * CREDITS_PER_ROUND);
      const final = await pollUntil("every event in a checkpoint", 30_000, async () => {
        const note = await (await fetch(`${url}/v1/log/checkpoint`)).text();
        return parseCheckpoint(openNote(note, parseVerifierKey(key))).size === events.length ? note : undefined;
      });
      notes.add(final);
      const checkpoints = [...notes].map((note) => parseCheckpoint(openNote(note, parseVerifierKey(key)))).sort((a, b) => a.size - b.size);
      const last = checkpoints.at(-1)!;
      const logged = (
        (await (await fetch(`${url}/v1/admin/events?limit=1000`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as {
          events: EventJson[];
        }
      ).events;
      expect(logged.map((event) => event.logIndex)).toEqual(logged.map((_, i) => i));
      for (const event of logged) {
        const proof = (await (
          await fetch(`${url}/v1/admin/events/${event.id}/proof`, { headers: { authorization: `Bearer ${adminToken}` } })
        ).json()) as { proof: string[] };
        expect(refVerifyInclusion(event.logIndex!, last.size, leafOf(event), proof.proof.map(b64), last.root)).toBe(true);
      }
      expect(checkpoints.length).toBeGreaterThan(2);
      for (const [i, from] of checkpoints.entries()) {
        for (const to of checkpoints.slice(i)) {
          if (from.size === to.size) {
            expect(Buffer.from(from.root).equals(Buffer.from(to.root)), `two checkpoints of ${from.size}`).toBe(true);
            continue;
          }
          const answer = (await (await fetch(`${url}/v1/log/proofs/consistency?from=${from.size}&to=${to.size}`)).json()) as {
            proof: string[];
          };
          expect(refVerifyConsistency(from.size, to.size, from.root, to.root, answer.proof.map(b64)), `${from.size} → ${to.size}`).toBe(
            true,
          );
        }
      }
    },
  );
});
