import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { expect } from "vitest";
import { pollUntil } from "./process.js";
import { refLeaf, refRoot, refVerifyConsistency, refVerifyInclusion, type Bytes } from "./rfc9162.js";

/**
 * The independent verifier of the transparency log for the crash tests (issue 32), shared by the
 * SQLite and PostgreSQL suites. It reads the service only over HTTP and imports nothing of src/:
 * checkpoints are opened with node:crypto's Ed25519 (the service signs with @noble/curves), the
 * canonical event is written here from RFC 8785 (the service uses the canonicalize package), and
 * the hashes and proofs are helpers/rfc9162.ts. What it checks, for every checkpoint a test saw:
 * - each one is signed by the pinned key and none is smaller than one seen before it;
 * - every event of the events API is logged once, at its place in that API's order (its logIndex),
 *   and the last checkpoint holds exactly them: nothing doubled, nothing skipped;
 * - each checkpoint's root is the root of the first `size` of those events, recomputed here;
 * - every event's inclusion proof in the last checkpoint, and the consistency proof of every pair
 *   of checkpoints, as the service serves them, verify.
 */

/** How long the log may take, once the workload has stopped, to hold every event in a checkpoint. */
const CATCH_UP_DEADLINE_MS = 60_000;
/** Proof requests in flight at once. */
const PROOF_CONCURRENCY = 8;
/** Events per page of the admin events API, and pages read at most (so at most 100,000 events). */
const EVENTS_PAGE_LIMIT = 1000;
const MAX_EVENT_PAGES = 100;

export interface AuditedEvent {
  id: string;
  type: string;
  logIndex: number | null;
  data: Record<string, unknown>;
}

export interface OpenedCheckpoint {
  size: number;
  root: Bytes;
}

export interface LogAudit {
  /** The events, in the events API's order (their logIndex is their place). */
  events: AuditedEvent[];
  /** Distinct checkpoints verified (the ones seen and the last), and the pairs proven consistent. */
  checkpoints: number;
  pairs: number;
}

/** RFC 8785 for what the events API returns (strings, integers, booleans, null, arrays, objects). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    // Default sort compares UTF-16 code units, the order RFC 8785 §3.2.3 asks for.
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(",")}}`;
  }
  if (typeof value === "number" && !Number.isSafeInteger(value)) throw new Error(`not a JSON integer: ${value}`);
  if (value === undefined || typeof value === "function" || typeof value === "bigint") throw new Error("not JSON");
  // Strings and integers: ECMAScript's JSON serialization is RFC 8785's (§3.2.2).
  return JSON.stringify(value);
}

/** An event's leaf: the Event JSON less logIndex, canonical, as a leaf (API.md, Transparency log). */
export function eventLeaf(event: object): Bytes {
  const { logIndex: _logIndex, ...logged } = event as Record<string, unknown>;
  return refLeaf(Buffer.from(canonicalJson(logged), "utf8"));
}

interface PinnedKey {
  name: string;
  keyId: Buffer;
  publicKey: KeyObject;
}

/** A C2SP signed-note verifier key `<name>+<hex key id>+<base64(0x01 ‖ Ed25519 key)>`, its id checked. */
export function pinKey(text: string): PinnedKey {
  const match = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+=*)$/.exec(text.trim());
  if (!match) throw new Error(`malformed verifier key ${JSON.stringify(text)}`);
  const raw = Buffer.from(match[3]!, "base64");
  if (raw.length !== 33 || raw[0] !== 0x01) throw new Error("not an Ed25519 verifier key");
  const keyId = createHash("sha256")
    .update(Buffer.concat([Buffer.from(`${match[1]}\n`, "utf8"), raw]))
    .digest()
    .subarray(0, 4);
  if (keyId.toString("hex") !== match[2]) throw new Error("the verifier key's id does not match its key");
  const publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.subarray(1).toString("base64url") }, format: "jwk" });
  return { name: match[1]!, keyId, publicKey };
}

/** A checkpoint note (C2SP tlog-checkpoint in a signed-note) once its signature by `key` verifies; throws otherwise. */
export function openCheckpoint(note: string, key: PinnedKey): OpenedCheckpoint {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new Error(`not a signed note: ${JSON.stringify(note)}`);
  const text = note.slice(0, split + 1);
  const signatures = note
    .slice(split + 2, -1)
    .split("\n")
    .map((line) => /^\u2014 (\S+) ([A-Za-z0-9+/]+=*)$/u.exec(line))
    .map((match) => (match ? { name: match[1]!, blob: Buffer.from(match[2]!, "base64") } : null))
    .filter((line) => line !== null && line.name === key.name && line.blob.subarray(0, 4).equals(key.keyId));
  expect(signatures, `signatures of the pinned key on ${JSON.stringify(note)}`).toHaveLength(1);
  const blob = signatures[0]!.blob;
  expect(blob.length === 68 && verify(null, Buffer.from(text, "utf8"), key.publicKey, blob.subarray(4)), "the signature verifies").toBe(
    true,
  );
  const [origin, size, root, ...rest] = text.split("\n");
  expect(origin, "the checkpoint's origin is the key's name").toBe(key.name);
  expect(size, "the tree size").toMatch(/^(0|[1-9][0-9]{0,15})$/);
  expect(rest.at(-1), "the text ends with its newline").toBe("");
  const rootBytes = new Uint8Array(Buffer.from(root ?? "", "base64"));
  expect(rootBytes.length, "the root hash's length").toBe(32);
  return { size: Number(size), root: rootBytes };
}

async function getText(url: string, adminToken: string): Promise<string> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${adminToken}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} → ${response.status} ${text.slice(0, 500)}`);
  return text;
}

/** Every event of every stream, oldest first, through the admin events API. */
export async function allEvents(url: string, adminToken: string): Promise<AuditedEvent[]> {
  const events: AuditedEvent[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_EVENT_PAGES; page++) {
    const query: string = `limit=${EVENTS_PAGE_LIMIT}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
    const body = JSON.parse(await getText(`${url}/v1/admin/events?${query}`, adminToken)) as {
      events: AuditedEvent[];
      cursor: string;
      hasMore: boolean;
    };
    events.push(...body.events);
    if (!body.hasMore) return events;
    after = body.cursor;
  }
  throw new Error(`more than ${MAX_EVENT_PAGES * EVENTS_PAGE_LIMIT} events: the audit is for small workloads`);
}

/**
 * Waits until the latest checkpoint holds every event, and returns that checkpoint with the events.
 * The checkpoint is read before the events: events only grow, so a checkpoint larger than the
 * events listed after it holds something that is not an event (one logged twice) and fails at once.
 */
async function caughtUp(url: string, adminToken: string, key: PinnedKey) {
  let seen = "nothing read yet";
  try {
    return await pollUntil("the latest checkpoint to hold every event", CATCH_UP_DEADLINE_MS, async () => {
      const note = await getText(`${url}/v1/log/checkpoint`, adminToken);
      const checkpoint = openCheckpoint(note, key);
      const events = await allEvents(url, adminToken);
      const unlogged = events.filter((event) => event.logIndex === null).length;
      seen = `a checkpoint of ${checkpoint.size}, ${events.length} events of which ${unlogged} have no logIndex`;
      expect(checkpoint.size, `a checkpoint read before the events holds at most them (${seen})`).toBeLessThanOrEqual(events.length);
      return checkpoint.size === events.length && unlogged === 0 ? { note, checkpoint, events } : undefined;
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen: ${seen}`);
  }
}

/** Runs `task` over `items`, PROOF_CONCURRENCY at a time. */
async function forEachBounded<T>(items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += PROOF_CONCURRENCY) {
    await Promise.all(items.slice(start, start + PROOF_CONCURRENCY).map(task));
  }
}

function expectInOrderSeen(checkpoints: readonly OpenedCheckpoint[]): void {
  for (let i = 1; i < checkpoints.length; i++) {
    const [before, after] = [checkpoints[i - 1]!, checkpoints[i]!];
    expect(after.size, `checkpoint ${i} seen after one of ${before.size} events`).toBeGreaterThanOrEqual(before.size);
    if (after.size === before.size)
      expect(Buffer.from(after.root).equals(Buffer.from(before.root)), `two roots of ${after.size}`).toBe(true);
  }
}

async function expectEveryInclusion(url: string, adminToken: string, events: AuditedEvent[], leaves: Bytes[], last: OpenedCheckpoint) {
  await forEachBounded(events, async (event) => {
    const i = event.logIndex!;
    const answer = JSON.parse(await getText(`${url}/v1/admin/events/${event.id}/proof?treeSize=${last.size}`, adminToken)) as {
      logIndex: number;
      treeSize: number;
      leafHash: string;
      proof: string[];
    };
    expect({ logIndex: answer.logIndex, treeSize: answer.treeSize, leafHash: answer.leafHash }, event.id).toEqual({
      logIndex: i,
      treeSize: last.size,
      leafHash: Buffer.from(leaves[i]!).toString("base64"),
    });
    const proof = answer.proof.map((hash) => new Uint8Array(Buffer.from(hash, "base64")));
    expect(refVerifyInclusion(i, last.size, leaves[i]!, proof, last.root), `inclusion of ${event.id} at ${i} of ${last.size}`).toBe(true);
  });
}

async function expectEveryPairConsistent(url: string, adminToken: string, checkpoints: readonly OpenedCheckpoint[]): Promise<number> {
  const pairs = checkpoints.flatMap((from, i) => checkpoints.slice(i + 1).map((to) => [from, to] as const));
  await forEachBounded(pairs, async ([from, to]) => {
    const answer = JSON.parse(await getText(`${url}/v1/log/proofs/consistency?from=${from.size}&to=${to.size}`, adminToken)) as {
      proof: string[];
    };
    const proof = answer.proof.map((hash) => new Uint8Array(Buffer.from(hash, "base64")));
    expect(refVerifyConsistency(from.size, to.size, from.root, to.root, proof), `consistency ${from.size} → ${to.size}`).toBe(true);
  });
  return pairs.length;
}

/**
 * Audits the log of the service at `url` once its workload has stopped: `notesSeen` are the
 * checkpoint notes the test read during the workload, in the order first seen; the key is the one
 * pinned at the start. Returns the events and what was verified.
 */
export async function auditTransparencyLog(
  url: string,
  adminToken: string,
  pinnedKey: string,
  notesSeen: Iterable<string>,
): Promise<LogAudit> {
  const key = pinKey(pinnedKey);
  const final = await caughtUp(url, adminToken, key);
  const events = final.events;
  expect(
    events.map((event) => event.logIndex),
    "every event logged once, in the events API's order",
  ).toEqual(events.map((_, i) => i));
  const leaves = events.map(eventLeaf);
  // The last one last, even when it was seen before: nothing seen may be larger.
  const seen = [...new Set(notesSeen), final.note].map((note) => openCheckpoint(note, key));
  expectInOrderSeen(seen);
  const roots = new Map<number, Bytes>();
  for (const checkpoint of seen) {
    const root = roots.get(checkpoint.size) ?? refRoot(leaves.slice(0, checkpoint.size));
    roots.set(checkpoint.size, root);
    expect(Buffer.from(checkpoint.root).equals(Buffer.from(root)), `the root of ${checkpoint.size}, recomputed from the events`).toBe(true);
  }
  // Equal sizes have equal roots now: one checkpoint of each size is enough for the pairs.
  const checkpoints = [...new Map(seen.map((checkpoint) => [checkpoint.size, checkpoint])).values()].sort((a, b) => a.size - b.size);
  await expectEveryInclusion(url, adminToken, events, leaves, final.checkpoint);
  const pairs = await expectEveryPairConsistent(url, adminToken, checkpoints);
  return { events, checkpoints: checkpoints.length, pairs };
}
