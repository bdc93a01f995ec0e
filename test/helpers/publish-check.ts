import { randomBytes, randomInt } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { expect } from "vitest";
import { firstArrivals, type Received } from "./brokers.js";
import { call, callOk, pollUntil, randomAddress } from "./process.js";

/**
 * What the publisher tests share: a random workload of every kind of ledger change over HTTP,
 * the admin event log read whole through the pull API, and the check that what a broker's
 * consumer received is that log, in its order, with the same JSON, duplicates only of the same ids.
 */

/** Names for one test's stream, subjects and exchange, so runs never see each other's messages. */
export function brokerNames(): { stream: string; prefix: string; exchange: string } {
  const tag = randomBytes(5).toString("hex");
  return { stream: `PLT_${tag}`, prefix: `plt-${tag}.events`, exchange: `plt-${tag}.events` };
}

export interface Workload {
  adminToken: string;
  contract: string;
  token: string;
  /** Requests that answered other than expected. */
  unexpected: string[];
  sent: number;
}

/** A contract with an operator signed in, credited enough for every batch the workload submits. */
export async function prepareWorkload(base: string, adminToken: string): Promise<Workload> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await callOk(base, "PUT", `/v1/admin/contracts/${contract}/operator`, adminToken, { operatorAddress: operator.address });
  await callOk(base, "PUT", `/v1/admin/contracts/${contract}/credits/grant`, adminToken, { pointType: "PHASE2_POINTS", points: "1000000" });
  const challenge = await callOk(base, "POST", "/v1/dapp-auth/challenge", null, {
    contractAddress: contract,
    operatorAddress: operator.address,
  });
  const signature = await operator.signMessage({ message: String(challenge.message) });
  const solved = await callOk(base, "POST", "/v1/dapp-auth/solve", null, { challengeData: challenge.challengeData, signature });
  return { adminToken, contract, token: String(solved.bearerToken), unexpected: [], sent: 0 };
}

/**
 * One random change: a credit to a random address (an event on that address's stream), a batch
 * finalized a second later (accepted, then finalized by the worker), a batch cancelled at once, or
 * an API key created and revoked; each makes events on the contract's or the address's stream.
 */
export async function randomChange(base: () => string, load: Workload): Promise<void> {
  const n = load.sent++;
  const kind = randomInt(4);
  const transfers = Array.from({ length: 1 + randomInt(3) }, () => ({ toAddress: randomAddress(), points: "1" }));
  try {
    if (kind === 0) {
      const answer = await call(base(), "PUT", `/v1/admin/contracts/${randomAddress()}/credits/c-${n}`, load.adminToken, {
        pointType: "PHASE2_POINTS",
        points: "2",
      });
      if (answer.status !== 200) load.unexpected.push(`credit ${answer.status}`);
    } else if (kind === 1 || kind === 2) {
      const path = `/v1/contracts/${load.contract}/batches/b-${n}`;
      const body = { pointType: "PHASE2_POINTS", transfers, secondsToFinalize: kind === 1 ? 1 : 3600 };
      const answer = await call(base(), "PUT", path, load.token, body);
      if (answer.status !== 200) load.unexpected.push(`batch ${answer.status} ${JSON.stringify(answer.body)}`);
      else if (kind === 2) {
        const cancelled = await call(base(), "DELETE", path, load.token);
        if (cancelled.status !== 200) load.unexpected.push(`cancel ${cancelled.status}`);
      }
    } else {
      // Revoked at once: a contract keeps at most 100 unrevoked keys.
      const path = `/v1/contracts/${load.contract}/api-keys`;
      const answer = await call(base(), "POST", path, load.token, { name: `k-${n}`, scopes: ["read"] });
      if (answer.status !== 200) load.unexpected.push(`api key ${answer.status} ${JSON.stringify(answer.body)}`);
      else {
        const revoked = await call(base(), "DELETE", `${path}/${String((answer.body.apiKey as { id: string }).id)}`, load.token);
        if (revoked.status !== 200) load.unexpected.push(`revoke ${revoked.status}`);
      }
    }
  } catch (error) {
    // A killed instance does not answer: the change may or may not have committed.
    load.unexpected.push(`no answer: ${String(error)}`);
  }
}

/** `count` random changes from `workers` concurrent clients. */
export async function runWorkload(base: () => string, load: Workload, count: number, workers = 4): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (left-- > 0) await randomChange(base, load);
    }),
  );
}

/** Every event of the admin event log, through the pull API, in its order. */
export async function pullAll(base: string, adminToken: string): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  let after: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const query: string = after === null ? "?limit=1000" : `?limit=1000&after=${encodeURIComponent(after)}`;
    const body = await callOk(base, "GET", `/v1/admin/events${query}`, adminToken);
    events.push(...(body.events as Record<string, unknown>[]));
    after = String(body.cursor);
    if (body.hasMore !== true) return events;
  }
  throw new Error("the event log did not end within 10,000 pages");
}

/** Waits until every publisher of `base` has published the whole log (the last event's id, no lag). */
export async function waitCaughtUp(base: string, adminToken: string, deadlineMs = 60_000): Promise<Record<string, unknown>[]> {
  return pollUntil("the publishers to catch up", deadlineMs, async () => {
    const events = await pullAll(base, adminToken);
    const { publishers } = (await callOk(base, "GET", "/v1/admin/publishers", adminToken)) as { publishers: Record<string, unknown>[] };
    const lastId = events.at(-1)?.id;
    return publishers.every((p) => p.lastEventId === lastId && p.lagSeconds === 0 && p.state === "ok") ? events : undefined;
  });
}

/** The Event JSON without logIndex, which a message carries as it stood when published. */
function withoutLogIndex(event: Record<string, unknown>): Record<string, unknown> {
  const { logIndex: _logIndex, ...rest } = event;
  return rest;
}

/**
 * What a consumer received is the log: with repeats removed (each repeat the same event), the
 * pull API's events in its order, the same JSON (logIndex null or the one it has now), each under
 * its subject or routing key. Returns how many repeats came.
 */
export function expectLog(
  received: readonly Received[],
  events: readonly Record<string, unknown>[],
  keyOf: (event: Record<string, unknown>) => string,
): number {
  const { ids, duplicates, changedRepeats } = firstArrivals(received);
  expect(changedRepeats, "a republished id carried another event").toEqual([]);
  expect(ids.length, "events received once duplicates are removed").toBe(events.length);
  expect(ids).toEqual(events.map((event) => event.id));
  const firstOf = new Map<string, Received>();
  for (const message of received) if (!firstOf.has(message.id)) firstOf.set(message.id, message);
  for (const event of events) {
    const message = firstOf.get(String(event.id))!;
    expect(withoutLogIndex(message.body)).toEqual(withoutLogIndex(event));
    expect([null, event.logIndex]).toContainEqual(message.body.logIndex);
    expect(message.key).toBe(keyOf(event));
  }
  return duplicates;
}

/** `<contract or admin>.<type>`: the routing key, and a subject's tail. */
export function routingKey(event: Record<string, unknown>): string {
  return `${(event.contractAddress as string | null) ?? "admin"}.${String(event.type)}`;
}
