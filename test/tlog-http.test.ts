import canonicalize from "canonicalize";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { openNote, parseCheckpoint, parseSignerKey, parseVerifierKey, verifierKey } from "../src/domain/signed-note.js";
import { createTestApp, creditPoints, newAccount, registerOperator, signIn, type TestApp } from "./helpers/http.js";
import { refLeaf, refVerifyConsistency, refVerifyInclusion } from "./helpers/rfc9162.js";
import { logEverything, TEST_LOG_ORIGIN, TEST_LOG_SIGNING_KEY, testLogSigning } from "./helpers/tlog.js";

/**
 * The transparency log's routes (docs/api.md, Transparency log) through the real app: checkpoint,
 * key, consistency and inclusion proofs, each checked by the independent verifier of
 * helpers/rfc9162.ts from what the API returns (the Event JSON, base64 hashes, the signed note).
 */

interface EventJson {
  id: string;
  contractAddress: string | null;
  logIndex: number | null;
}

const b64 = (text: string) => new Uint8Array(Buffer.from(text, "base64"));
const leafOf = (event: object) => {
  const { logIndex: _ignored, ...logged } = event as Record<string, unknown>;
  return refLeaf(Buffer.from(canonicalize(logged)!, "utf8"));
};

describe("transparency log routes", () => {
  let t: TestApp | null = null;
  afterEach(async () => {
    await t?.close();
    t = null;
  });

  it("serve the signed checkpoint, the key, and proofs that verify independently; refuse what they must", async () => {
    t = await createTestApp({ env: { LOG_SIGNING_KEY: TEST_LOG_SIGNING_KEY, LOG_ORIGIN: TEST_LOG_ORIGIN } });
    const { send, adminToken, store } = t;
    expect((await send({ method: "GET", url: "/v1/log/checkpoint" })).status).toBe(503);

    const operator = newAccount();
    const contract = newAccount().address;
    const other = newAccount().address;
    await registerOperator(send, adminToken, contract, operator.address);
    await creditPoints(send, adminToken, contract, "PHASE2_POINTS", "100");
    await creditPoints(send, adminToken, other, "PHASE2_POINTS", "5");
    await logEverything(store);

    const key = await send({ method: "GET", url: "/v1/log/key" });
    expect(key.status).toBe(200);
    expect(key.headers["content-type"]).toMatch(/^text\/plain/);
    expect(key.text).toBe(`${verifierKey(parseSignerKey(TEST_LOG_SIGNING_KEY))}\n`);
    const note = await send({ method: "GET", url: "/v1/log/checkpoint" });
    expect(note.status).toBe(200);
    const checkpoint = parseCheckpoint(openNote(note.text, parseVerifierKey(key.text)));
    expect(checkpoint).toMatchObject({ origin: TEST_LOG_ORIGIN, size: 3 });

    const token = await signIn(send, contract, operator);
    const page = await send({ method: "GET", url: `/v1/contracts/${contract}/events`, token });
    const events = (page.json as { events: EventJson[] }).events;
    expect(events.map((event) => event.logIndex)).toEqual([0, 1]);
    for (const event of events) {
      const proof = await send({ method: "GET", url: `/v1/contracts/${contract}/events/${event.id}/proof`, token });
      expect(proof.status, proof.text).toBe(200);
      const body = proof.json as { eventId: string; logIndex: number; treeSize: number; leafHash: string; proof: string[] };
      expect(body).toMatchObject({ eventId: event.id, logIndex: event.logIndex, treeSize: 3 });
      expect(Buffer.from(b64(body.leafHash)).equals(Buffer.from(leafOf(event)))).toBe(true);
      expect(refVerifyInclusion(body.logIndex, body.treeSize, leafOf(event), body.proof.map(b64), checkpoint.root)).toBe(true);
    }

    // The other address's credit: not this contract's (404), but the admin's proof route has it.
    const all = (await send({ method: "GET", url: "/v1/admin/events", token: adminToken })).json as { events: EventJson[] };
    const foreign = all.events.find((event) => event.contractAddress === other)!;
    expect((await send({ method: "GET", url: `/v1/contracts/${contract}/events/${foreign.id}/proof`, token })).status).toBe(404);
    const adminProof = await send({ method: "GET", url: `/v1/admin/events/${foreign.id}/proof`, token: adminToken });
    expect(adminProof.status).toBe(200);
    expect((await send({ method: "GET", url: `/v1/admin/events/${foreign.id}/proof` })).status).toBe(403);
    for (const bad of ["evt_00000000000000000000000000000000", "evt_%00", "nope"]) {
      const answer = await send({ method: "GET", url: `/v1/contracts/${contract}/events/${bad}/proof`, token });
      expect(answer.status, bad).toBe(404);
    }
    const first = events[0]!;
    expect(
      (await send({ method: "GET", url: `/v1/contracts/${contract}/events/${events[1]!.id}/proof?treeSize=1`, token })).json,
    ).toMatchObject({
      success: false,
      error: { code: "NOT_YET_LOGGED" },
    });
    const older = await send({ method: "GET", url: `/v1/contracts/${contract}/events/${first.id}/proof?treeSize=1`, token });
    expect((older.json as { proof: string[] }).proof).toEqual([]);
    expect((await send({ method: "GET", url: `/v1/contracts/${contract}/events/${first.id}/proof?treeSize=4`, token })).status).toBe(400);
    expect((await send({ method: "GET", url: `/v1/contracts/${contract}/events/${first.id}/proof?treeSize=0`, token })).status).toBe(400);
    expect((await send({ method: "GET", url: `/v1/contracts/${contract}/events/${first.id}/proof` })).status).toBe(401);

    // A new event is 409 until the log has it in a checkpoint.
    await creditPoints(send, adminToken, contract, "PHASE2_GOLD", "1");
    const latest = (await send({ method: "GET", url: `/v1/contracts/${contract}/events`, token })).json as { events: EventJson[] };
    const fresh = latest.events.at(-1)!;
    expect(fresh.logIndex).toBeNull();
    const early = await send({ method: "GET", url: `/v1/contracts/${contract}/events/${fresh.id}/proof`, token });
    expect(early.status).toBe(409);
    expect(early.json).toMatchObject({ error: { code: "NOT_YET_LOGGED" } });
    await logEverything(store, Date.now() + 2000, testLogSigning(0));
    const grown = parseCheckpoint(openNote((await send({ method: "GET", url: "/v1/log/checkpoint" })).text, parseVerifierKey(key.text)));
    expect(grown.size).toBe(4);

    const consistency = await send({ method: "GET", url: "/v1/log/proofs/consistency?from=3&to=4" });
    expect(consistency.status).toBe(200);
    const proof = (consistency.json as { from: number; to: number; proof: string[] }).proof.map(b64);
    expect(refVerifyConsistency(3, 4, checkpoint.root, grown.root, proof)).toBe(true);
    for (const query of ["from=4&to=3", "from=1&to=5", "from=1", "from=-1&to=2", "from=1&to=2&x=1", "from=a&to=2"]) {
      const refused = await send({ method: "GET", url: `/v1/log/proofs/consistency?${query}` });
      expect(refused.status, query).toBe(400);
      expect(refused.json).toMatchObject({ success: false, error: { code: "VALIDATION_FAILED" } });
    }
  });
});

describe("LOG_CHECKPOINT_SECONDS", () => {
  const env = { DATABASE_URL: "sqlite:./never-opened.db" };
  it("takes seconds with up to three decimals from 0.1 to 3600 (default 1), and refuses anything else", () => {
    expect(loadConfig(env).logCheckpointSeconds).toBe(1);
    for (const [raw, seconds] of [
      ["0.5", 0.5],
      ["0.1", 0.1],
      ["2", 2],
      ["3600", 3600],
      ["0.75", 0.75],
    ] as const) {
      expect(loadConfig({ ...env, LOG_CHECKPOINT_SECONDS: raw }).logCheckpointSeconds, raw).toBe(seconds);
    }
    for (const raw of ["0", "0.05", "1.2345", "-1", "1e3", ".5", "abc", "3601"]) {
      expect(() => loadConfig({ ...env, LOG_CHECKPOINT_SECONDS: raw }), raw).toThrow(ConfigError);
    }
  });
});
