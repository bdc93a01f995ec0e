/**
 * Races over a real socket: many requests in flight at once against one balance, one batchId,
 * and cancels against the finalizer. Outcomes are counted, never timed; afterwards the balances
 * add up and store.verify() finds no broken invariant.
 */
import { randomUUID } from "node:crypto";
import { getAddress } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import type { AddressKey } from "../src/domain/address.js";
import { formatPoints, parsePoints } from "../src/domain/points.js";
import { availableOf } from "../src/store/store.js";
import {
  batchBody,
  expectError,
  listen,
  readBalances,
  recipientAddresses,
  setupContract,
  socketSender,
  type BatchJson,
  type Send,
  type TestLedger,
  type TestResponse,
} from "./helpers/http.js";

let ledger: TestLedger | undefined;

afterEach(async () => {
  await ledger?.close();
  ledger = undefined;
});

async function startOnSocket(options: Parameters<typeof setupContract>[0]): Promise<{ ledger: TestLedger; send: Send }> {
  ledger = await setupContract(options);
  return { ledger, send: socketSender(await listen(ledger.app)) };
}

/** Exact units of a decimal points string (never a float). */
function units(points: string): bigint {
  const value = parsePoints(points);
  if (value === null) throw new Error(`not a points string: ${points}`);
  return value;
}

function countStatuses(responses: TestResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const response of responses) counts[response.status] = (counts[response.status] ?? 0) + 1;
  return counts;
}

async function listAll(send: Send, l: TestLedger): Promise<BatchJson[]> {
  const response = await send({ method: "GET", url: `/v1/contracts/${l.contract}/batches?limit=1000&sort=ASC`, token: l.token });
  expect(response.status).toBe(200);
  return (response.json as { batches: BatchJson[] }).batches;
}

describe("concurrent submits against one balance", () => {
  it("accepts exactly 10 of 40 concurrent 1-point batches against a balance of 10; 30 get 422", async () => {
    const { ledger: l, send } = await startOnSocket({ credits: { PHASE2_POINTS: "10" } });
    const recipients = recipientAddresses(40);
    const responses = await Promise.all(
      recipients.map((toAddress, i) =>
        // Half by PUT with our own batchId, half by POST: both paths reserve in one transaction.
        send(
          i % 2 === 0
            ? {
                method: "PUT",
                url: `/v1/contracts/${l.contract}/batches/race-${i}`,
                token: l.token,
                body: batchBody([{ toAddress, points: "1" }]),
              }
            : { method: "POST", url: `/v1/contracts/${l.contract}/batches`, token: l.token, body: batchBody([{ toAddress, points: "1" }]) },
        ),
      ),
    );
    expect(countStatuses(responses)).toEqual({ 200: 10, 422: 30 });
    for (const response of responses.filter((r) => r.status === 422)) {
      expect(expectError(response, 422, "INSUFFICIENT_BALANCE").details).toEqual({ available: "0", requested: "1" });
    }
    const accepted = responses.filter((r) => r.status === 200).map((r) => (r.json as { batchId: string }).batchId);
    const listed = await listAll(send, l);
    expect(listed.map((b) => b.id).sort()).toEqual([...accepted].sort());
    expect(listed.every((b) => b.status === "PENDING" && b.points === "1")).toBe(true);
    expect((await readBalances(send, l.contract, l.token)).PHASE2_POINTS).toMatchObject({
      available: "0",
      pendingSent: "10",
      earnedCumulative: "10",
      receivedCumulative: "0",
      finalizedSentCumulative: "0",
    });
    expect(await l.store.verify()).toEqual([]);
  });

  it("never overdraws with concurrent batches of mixed sizes", async () => {
    const { ledger: l, send } = await startOnSocket({ credits: { PHASE2_POINTS: "100", PHASE2_GOLD: "1" } });
    const sizes = Array.from({ length: 60 }, (_, i) => ["0.5", "3", "7.25", "12", "0.01"][i % 5]!);
    const recipients = recipientAddresses(60);
    const responses = await Promise.all(
      sizes.map((points, i) =>
        send({
          method: "PUT",
          url: `/v1/contracts/${l.contract}/batches/mixed-${i}`,
          token: l.token,
          body: batchBody([{ toAddress: recipients[i]!, points }]),
        }),
      ),
    );
    expect(responses.every((r) => r.status === 200 || r.status === 422)).toBe(true);
    const acceptedUnits = responses.reduce((sum, r, i) => (r.status === 200 ? sum + units(sizes[i]!) : sum), 0n);
    expect(acceptedUnits > 90n * 10n ** 12n).toBe(true);
    const balance = (await readBalances(send, l.contract, l.token)).PHASE2_POINTS;
    expect(balance.pendingSent).toBe(formatPoints(acceptedUnits));
    // Every rejection saw less available than it asked for.
    for (const [i, response] of responses.entries()) {
      if (response.status !== 422) continue;
      const details = expectError(response, 422, "INSUFFICIENT_BALANCE").details as { available: string; requested: string };
      expect(units(details.requested)).toBe(units(sizes[i]!));
      expect(units(details.available) < units(details.requested)).toBe(true);
    }
    const stored = await l.store.getBalances(l.contract.toLowerCase() as AddressKey);
    expect(availableOf(stored.PHASE2_POINTS) >= 0n).toBe(true);
    expect(await l.store.verify()).toEqual([]);
  });
});

describe("concurrent PUTs of one batchId", () => {
  it("answers exactly one 200 and 24 × 409 BATCH_ID_EXISTS with matchesRequest true", async () => {
    const { ledger: l, send } = await startOnSocket({ credits: { PHASE2_POINTS: "1000" } });
    const body = batchBody(recipientAddresses(50).map((toAddress) => ({ toAddress, points: "0.5" })));
    const url = `/v1/contracts/${l.contract}/batches/same-id`;
    const responses = await Promise.all(Array.from({ length: 25 }, () => send({ method: "PUT", url, token: l.token, body })));
    expect(countStatuses(responses)).toEqual({ 200: 1, 409: 24 });
    for (const response of responses.filter((r) => r.status === 409)) {
      expect(expectError(response, 409, "BATCH_ID_EXISTS").details).toEqual({
        batchId: "same-id",
        status: "PENDING",
        matchesRequest: true,
      });
    }
    expect((await readBalances(send, l.contract, l.token)).PHASE2_POINTS).toMatchObject({ available: "975", pendingSent: "25" });
    expect(await listAll(send, l)).toHaveLength(1);
    expect(await l.store.verify()).toEqual([]);
  });

  it("with different bodies, stores the winner and tells each loser whether it matches the winner", async () => {
    const { ledger: l, send } = await startOnSocket({ credits: { PHASE2_POINTS: "1000" } });
    const [r1, r2] = recipientAddresses(2).map((address) => getAddress(address));
    const bodies = Array.from({ length: 25 }, (_, i) => batchBody([{ toAddress: i % 2 === 0 ? r1! : r2!, points: String(1 + (i % 3)) }]));
    const url = `/v1/contracts/${l.contract}/batches/contested`;
    const responses = await Promise.all(bodies.map((body) => send({ method: "PUT", url, token: l.token, body })));
    expect(countStatuses(responses)).toEqual({ 200: 1, 409: 24 });
    const winner = bodies[responses.findIndex((r) => r.status === 200)]!;
    for (const [i, response] of responses.entries()) {
      if (response.status !== 409) continue;
      const matches = JSON.stringify(bodies[i]) === JSON.stringify(winner);
      expect(expectError(response, 409, "BATCH_ID_EXISTS").details).toEqual({
        batchId: "contested",
        status: "PENDING",
        matchesRequest: matches,
      });
    }
    const stored = await send({ method: "GET", url, token: l.token });
    const batch = (stored.json as { batch: BatchJson & { transfers: unknown[] } }).batch;
    expect(batch.transfers).toEqual((winner as { transfers: unknown[] }).transfers);
    expect((await readBalances(send, l.contract, l.token)).PHASE2_POINTS.pendingSent).toBe(batch.points);
    expect(await l.store.verify()).toEqual([]);
  });
});

describe("cancel racing finalization", () => {
  /**
   * The app's clock stays before finalizeAt (so every cancel is allowed) while the finalizer is
   * driven at finalizeAt (so every batch is due): both sides are always eligible, and only the
   * ledger's status guard decides. Cancels go newest first, the finalizer takes oldest first.
   */
  it("lets exactly one of cancel and finalize win for each batch, and the ledger adds up", async () => {
    const clock = new ManualClock();
    const { ledger: l, send } = await startOnSocket({ clock, credits: { PHASE2_POINTS: "1000" } });
    const recipients = recipientAddresses(30);
    const batchIds = recipients.map(() => randomUUID());
    for (const [i, batchId] of batchIds.entries()) {
      const response = await send({
        method: "PUT",
        url: `/v1/contracts/${l.contract}/batches/${batchId}`,
        token: l.token,
        body: batchBody([{ toAddress: recipients[i]!, points: "2.5" }], "PHASE2_POINTS", 1),
      });
      expect(response.status).toBe(200);
    }
    const dueAtMs = clock.now() + 1_000;
    const cancels = [...batchIds]
      .reverse()
      .map((batchId) => send({ method: "DELETE", url: `/v1/contracts/${l.contract}/batches/${batchId}`, token: l.token }));
    const finalizedIds = new Set<string>();
    const finalizing = (async () => {
      for (let pass = 0; pass < batchIds.length * 4; pass++) {
        for (const batch of await l.store.finalizeDue(dueAtMs, 1)) finalizedIds.add(batch.batchId);
        // Let the socket's requests in between single-batch finalizations.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    const [responses] = await Promise.all([Promise.all(cancels), finalizing]);
    // Whatever the cancels left PENDING is finalized now, so every batch has an outcome.
    for (const batch of await l.store.finalizeDue(dueAtMs, 1000)) finalizedIds.add(batch.batchId);

    const byId = new Map([...batchIds].reverse().map((batchId, i) => [batchId, responses[i]!]));
    let cancelled = 0;
    for (const batchId of batchIds) {
      const response = byId.get(batchId)!;
      const stored = await send({ method: "GET", url: `/v1/contracts/${l.contract}/batches/${batchId}`, token: l.token });
      const status = (stored.json as { batch: BatchJson }).batch.status;
      if (response.status === 200) {
        cancelled += 1;
        expect((response.json as { batch: BatchJson }).batch.status).toBe("CANCELLED");
        expect(status).toBe("CANCELLED");
        expect(finalizedIds.has(batchId)).toBe(false);
      } else {
        expectError(response, 409, "BATCH_NOT_CANCELLABLE");
        expect(status).toBe("FINALIZED");
        expect(finalizedIds.has(batchId)).toBe(true);
      }
    }
    expect(cancelled + finalizedIds.size).toBe(batchIds.length);

    const finalizedUnits = BigInt(finalizedIds.size) * 25n * 10n ** 11n;
    expect((await readBalances(send, l.contract, l.token)).PHASE2_POINTS).toMatchObject({
      available: formatPoints(1000n * 10n ** 12n - finalizedUnits),
      pendingSent: "0",
      earnedCumulative: "1000",
      receivedCumulative: "0",
      finalizedSentCumulative: formatPoints(finalizedUnits),
    });
    for (const [i, recipient] of recipients.entries()) {
      const received = (await l.store.getBalances(recipient.toLowerCase() as AddressKey)).PHASE2_POINTS.receivedCumulative;
      expect(received).toBe(finalizedIds.has(batchIds[i]!) ? 25n * 10n ** 11n : 0n);
    }
    expect(await l.store.verify()).toEqual([]);
  });

  it("settles one batch raced by many cancels and the finalizer at once", async () => {
    const clock = new ManualClock();
    const { ledger: l, send } = await startOnSocket({ clock, credits: { PHASE2_POINTS: "10" } });
    for (let round = 0; round < 10; round++) {
      const batchId = `round-${round}`;
      const url = `/v1/contracts/${l.contract}/batches/${batchId}`;
      const put = await send({
        method: "PUT",
        url,
        token: l.token,
        body: batchBody([{ toAddress: recipientAddresses(1)[0]!, points: "1" }], "PHASE2_POINTS", 1),
      });
      expect(put.status).toBe(200);
      const dueAtMs = clock.now() + 1_000;
      const cancels = Array.from({ length: 5 }, () => send({ method: "DELETE", url, token: l.token }));
      // Vary who is likelier to come first; the assertions hold either way.
      if (round % 2 === 1) await new Promise<void>((resolve) => setImmediate(resolve));
      const finalized = await l.store.finalizeDue(dueAtMs, 10);
      const responses = await Promise.all(cancels);
      const statuses = new Set(responses.map((r) => r.status));
      // All cancels agree: either all 200 (the first cancelled, the rest repeat it) or all 409.
      expect(statuses.size).toBe(1);
      if (statuses.has(200)) expect(finalized).toEqual([]);
      else expect(finalized.map((b) => b.batchId)).toEqual([batchId]);
      clock.advance(2_000);
    }
    const balance = (await readBalances(send, l.contract, l.token)).PHASE2_POINTS;
    expect(balance.pendingSent).toBe("0");
    expect(units(balance.available) + units(balance.finalizedSentCumulative)).toBe(10n * 10n ** 12n);
    expect(await l.store.verify()).toEqual([]);
  });
});
