import canonicalize from "canonicalize";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  LogVerificationError,
  PointsAdminClient,
  PointsClient,
  verifyCheckpoint,
  type Checkpoint,
  type LedgerEvent,
} from "../src/client/index.js";
import { checkpointText, formatSignerKey, parseSignerKey, signNote, toBase64, verifierKey } from "../src/domain/signed-note.js";
import { createTestApp, creditPoints, listen, randomAddress, registerOperator, type TestApp } from "./helpers/http.js";
import { refLeaf, refRoot } from "./helpers/rfc9162.js";
import { logEverything, TEST_LOG_ORIGIN, TEST_LOG_SIGNING_KEY } from "./helpers/tlog.js";

/**
 * The client's `log` (src/client/log.ts) against the real app on a socket: it verifies what the
 * service publishes locally — the checkpoint's signature with the pinned key, consistency between
 * two checkpoints, an event's inclusion from the Event JSON the caller holds — and throws
 * LogVerificationError when a check fails: a wrong key, a tampered event, a forged or rewritten
 * checkpoint, and proofs altered on the way (a fetch that flips one byte of the answer).
 */

let testApp: TestApp;
let baseUrl: string;
const operatorKey = generatePrivateKey();
const contract = randomAddress();
const other = randomAddress();
let client: PointsClient;
let admin: PointsAdminClient;
const PINNED = verifierKey(parseSignerKey(TEST_LOG_SIGNING_KEY));
const signer = parseSignerKey(TEST_LOG_SIGNING_KEY);

/** A checkpoint signed with the log's own key (a leaked key, or a dishonest operator) over any size and root. */
function forged(size: number, root: Uint8Array): string {
  return signNote(checkpointText({ origin: TEST_LOG_ORIGIN, size, root }), signer);
}

/** Every event of the log in its order, as the admin events API returns them. */
async function allEvents(): Promise<LedgerEvent[]> {
  const events: LedgerEvent[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await admin.listEvents({ after, limit: 1000 });
    events.push(...page.events);
    after = page.cursor;
    if (!page.hasMore) return events;
  }
}

const leafOf = (event: object) => {
  const { logIndex: _ignored, ...logged } = event as Record<string, unknown>;
  return refLeaf(Buffer.from(canonicalize(logged)!, "utf8"));
};

/** A fetch that flips one byte of the first hash of every proof it passes on. */
const flippingFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  if (!String(input instanceof Request ? input.url : input).includes("/proof")) return response;
  const body = (await response.json()) as { proof: string[] };
  if (body.proof.length > 0) {
    const hash = Buffer.from(body.proof[0]!, "base64");
    hash[0] = hash[0]! ^ 1;
    body.proof[0] = hash.toString("base64");
  }
  return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
};

beforeAll(async () => {
  testApp = await createTestApp({ env: { LOG_SIGNING_KEY: TEST_LOG_SIGNING_KEY, LOG_ORIGIN: TEST_LOG_ORIGIN } });
  baseUrl = await listen(testApp.app);
  await registerOperator(testApp.send, testApp.adminToken, contract, privateKeyToAccount(operatorKey).address);
  await creditPoints(testApp.send, testApp.adminToken, contract, "PHASE2_POINTS", "100");
  await creditPoints(testApp.send, testApp.adminToken, other, "PHASE2_POINTS", "5");
  client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey });
  admin = new PointsAdminClient({ baseUrl, adminToken: testApp.adminToken });
  await client.submitBatch("b1", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: randomAddress(), points: "1.5" }] });
  await logEverything(testApp.store);
});

afterAll(async () => {
  await testApp?.close();
});

describe("the client's transparency log", () => {
  it("checks the checkpoint's signature with the pinned key, and its root is the independent root of every event", async () => {
    expect(await client.log.key()).toBe(PINNED);
    const { checkpoint, signedAt } = await client.log.signedCheckpoint(PINNED);
    const events = await allEvents();
    expect(checkpoint).toMatchObject({ origin: TEST_LOG_ORIGIN, size: 4 });
    expect(events.slice(0, 4).map((event) => event.logIndex)).toEqual([0, 1, 2, 3]);
    expect(checkpoint.rootHash).toBe(toBase64(refRoot(events.slice(0, 4).map(leafOf))));
    expect(Math.abs(Date.parse(signedAt!) - Date.now())).toBeLessThan(60_000);
    const otherKey = verifierKey(parseSignerKey(formatSignerKey(TEST_LOG_ORIGIN, new Uint8Array(32).fill(8))));
    await expect(client.log.checkpoint(otherKey)).rejects.toThrow(LogVerificationError);
  });

  it("proves an event it holds, from the API or as a webhook's body (logIndex null), and refuses it changed", async () => {
    const checkpoint = await client.log.checkpoint(PINNED);
    const events = (await client.listEvents({ limit: 100 })).events.filter((event) => event.logIndex !== null);
    expect(events.length).toBe(3);
    for (const event of events) {
      expect(await client.log.verifyEvent(event, checkpoint)).toBe(event.logIndex);
      expect(await client.log.verifyEvent({ ...event, logIndex: null }, checkpoint)).toBe(event.logIndex);
    }
    const credit = events.find((event) => event.type === "credit.created")!;
    const changed = { ...credit, data: { ...(credit.data as object), points: "1000" } } as LedgerEvent;
    await expect(client.log.verifyEvent(changed, checkpoint)).rejects.toThrow(LogVerificationError);
    // The admin client proves an event of any stream, here another address's credit.
    const foreign = (await allEvents()).find((event) => event.contractAddress === other)!;
    expect(await admin.log.verifyEvent(foreign, await admin.log.checkpoint(PINNED))).toBe(foreign.logIndex);
    // Against a forged checkpoint of the same size (another root), the true proof fails.
    const forgedCheckpoint: Checkpoint = { ...checkpoint, rootHash: toBase64(new Uint8Array(32).fill(1)) };
    await expect(client.log.verifyEvent(events[0]!, forgedCheckpoint)).rejects.toThrow(LogVerificationError);
  });

  it("proves a newer checkpoint extends an older one, and refuses a shrunk, rewritten or forked log", async () => {
    const older = await client.log.checkpoint(PINNED);
    await creditPoints(testApp.send, testApp.adminToken, contract, "PHASE2_POINTS", "7");
    await creditPoints(testApp.send, testApp.adminToken, other, "PHASE2_POINTS", "7");
    await logEverything(testApp.store, Date.now() + 2000);
    const newer = await client.log.checkpoint(PINNED);
    expect(newer.size).toBe(older.size + 2);
    await expect(client.log.verifyConsistency(older, newer)).resolves.toBeUndefined();
    await expect(client.log.verifyConsistency(older, older)).resolves.toBeUndefined();
    await expect(client.log.verifyConsistency(newer, older)).rejects.toThrow(/shrank/);

    // Signed with the log's key but not the log the service serves: the service's proof does not join them.
    const rewritten = verifyCheckpoint(forged(newer.size, new Uint8Array(32).fill(3)), PINNED);
    await expect(client.log.verifyConsistency(older, rewritten)).rejects.toThrow(/rewritten/);
    const fork = verifyCheckpoint(forged(older.size, new Uint8Array(32).fill(4)), PINNED);
    await expect(client.log.verifyConsistency(older, fork)).rejects.toThrow(/forked/);
  });

  it("refuses proofs altered on the way: one byte of an inclusion or a consistency proof flipped", async () => {
    const tampering = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey, fetch: flippingFetch });
    const checkpoint = await tampering.log.checkpoint(PINNED);
    const { events } = await client.listEvents({ limit: 100 });
    const withProof = events.find((event) => event.logIndex !== null)!;
    await expect(client.log.verifyEvent(withProof, checkpoint)).resolves.toBe(withProof.logIndex);
    await expect(tampering.log.verifyEvent(withProof, checkpoint)).rejects.toThrow(LogVerificationError);
    await creditPoints(testApp.send, testApp.adminToken, contract, "PHASE2_POINTS", "9");
    await logEverything(testApp.store, Date.now() + 4000);
    const newer = await tampering.log.checkpoint(PINNED);
    await expect(client.log.verifyConsistency(checkpoint, newer)).resolves.toBeUndefined();
    await expect(tampering.log.verifyConsistency(checkpoint, newer)).rejects.toThrow(LogVerificationError);
  });
});
