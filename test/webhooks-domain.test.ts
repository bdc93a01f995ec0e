import { describe, expect, it } from "vitest";
import { ADMIN_ACTOR, operatorActor } from "../src/domain/actors.js";
import type { AddressKey } from "../src/domain/address.js";
import { operatorChanged, webhookTest } from "../src/domain/events.js";
import {
  changedEndpoint,
  chooseDue,
  deliveryAfterAttempt,
  endpointHealth,
  endpointRoom,
  fansOut,
  liveSecrets,
  refusal,
  subscribes,
  type AttemptOutcome,
  type ClaimCaps,
  type WebhookEndpoint,
} from "../src/domain/webhooks.js";

/** The webhook rules both adapters apply (src/domain/webhooks.ts), checked without a database. */

const CONTRACT = "0x00000000000000000000000000000000000000aa" as AddressKey;
const OPERATOR = "0x00000000000000000000000000000000000000bb" as AddressKey;

const endpoint: WebhookEndpoint = {
  id: "we_000000000000000000000001",
  contract: CONTRACT,
  url: "https://example.com/hook",
  types: null,
  description: "d",
  disabled: false,
  disabledReason: null,
  createdAtMs: 1,
};

const caps: ClaimCaps = { nowMs: 1000, limit: 10, perEndpointLimit: 4, perContractLimit: 8, excludeEndpointIds: [] };

function outcome(status: AttemptOutcome["status"], statusCode: number | null, timedOut = false): AttemptOutcome {
  return { attempt: { atMs: 100, statusCode, error: null, durationMs: 5 }, status, nextAttemptAtMs: 500, disableEndpoint: null, timedOut };
}

describe("the fan-out rule", () => {
  it("delivers stream events of a contract's stream, to endpoints subscribed to every type or to that one", () => {
    expect(fansOut(operatorChanged(CONTRACT, OPERATOR, null, 1, ADMIN_ACTOR))).toBe(true);
    expect(fansOut(webhookTest(CONTRACT, endpoint.id, 1, operatorActor(OPERATOR)))).toBe(false);
    expect(subscribes(null, "batch.accepted")).toBe(true);
    expect(subscribes(["batch.finalized"], "batch.accepted")).toBe(false);
    expect(subscribes(["batch.finalized", "batch.accepted"], "batch.accepted")).toBe(true);
  });
});

describe("endpoint operations", () => {
  it("refuses a missing endpoint and a disabled one", () => {
    expect(refusal(null)).toEqual({ kind: "not_found" });
    expect(refusal({ ...endpoint, disabled: true })).toEqual({ kind: "disabled" });
    expect(refusal(endpoint)).toBeNull();
  });

  it("keeps absent fields, clears the reason on enabling and fails the queue only when disabling", () => {
    const disabled = changedEndpoint(endpoint, { disabled: true, disabledReason: "paused" });
    expect(disabled).toEqual({
      fields: { url: endpoint.url, types: null, description: "d", disabled: true, disabledReason: "paused" },
      failsPending: true,
    });
    const again = changedEndpoint({ ...endpoint, disabled: true, disabledReason: "paused" }, { description: null });
    expect(again).toEqual({
      fields: { url: endpoint.url, types: null, description: null, disabled: true, disabledReason: "paused" },
      failsPending: false,
    });
    const enabled = changedEndpoint({ ...endpoint, disabled: true, disabledReason: "paused" }, { disabled: false });
    expect(enabled.fields.disabledReason).toBeNull();
    expect(enabled.failsPending).toBe(false);
  });

  it("signs with the previous secret only while its overlap lasts", () => {
    expect(liveSecrets("new", "old", 2000, 1000)).toEqual(["new", "old"]);
    expect(liveSecrets("new", "old", 1000, 1000)).toEqual(["new"]);
    expect(liveSecrets("new", null, null, 1000)).toEqual(["new"]);
  });
});

describe("what an attempt makes of a delivery and its endpoint", () => {
  it("fails a retry whose endpoint was disabled, and dates the end of a finished delivery", () => {
    expect(deliveryAfterAttempt(outcome("PENDING", 500), false)).toEqual({ status: "PENDING", nextAttemptAtMs: 500, finishedAtMs: null });
    expect(deliveryAfterAttempt(outcome("PENDING", 500), true)).toEqual({ status: "FAILED", nextAttemptAtMs: null, finishedAtMs: 105 });
    expect(deliveryAfterAttempt(outcome("SUCCEEDED", 200), true)).toEqual({
      status: "SUCCEEDED",
      nextAttemptAtMs: null,
      finishedAtMs: 105,
    });
  });

  it("ends a backoff on any answer and extends it on a timeout only", () => {
    expect(endpointHealth(outcome("PENDING", 503))).toBe("answered");
    expect(endpointHealth(outcome("PENDING", null, true))).toBe("timed_out");
    expect(endpointHealth(outcome("PENDING", null, false))).toBe("unchanged");
  });
});

describe("the claim rule", () => {
  const open = { id: "we_a", contract: "c1", timeoutsInRow: 0, backoffUntilMs: null };

  it("gives an endpoint its cap less its sends in flight, one while it times out, none while backed off or excluded", () => {
    expect(endpointRoom(open, 1, caps)).toBe(3);
    expect(endpointRoom(open, 6, caps)).toBe(0);
    expect(endpointRoom({ ...open, timeoutsInRow: 2 }, 0, caps)).toBe(1);
    expect(endpointRoom({ ...open, backoffUntilMs: 1001 }, 0, caps)).toBe(0);
    expect(endpointRoom({ ...open, backoffUntilMs: 1000 }, 0, caps)).toBe(4);
    expect(endpointRoom(open, 0, { ...caps, excludeEndpointIds: ["we_a"] })).toBe(0);
  });

  it("deals every endpoint's first turn before any second, oldest first, within each contract's cap and the limit", () => {
    const candidates = [
      { name: "a0", contract: "c1", turn: 0, dueAtMs: 30, seq: 1n },
      { name: "a1", contract: "c1", turn: 1, dueAtMs: 10, seq: 2n },
      { name: "b0", contract: "c1", turn: 0, dueAtMs: 20, seq: 3n },
      { name: "c0", contract: "c2", turn: 0, dueAtMs: 40, seq: 4n },
      { name: "c1", contract: "c2", turn: 1, dueAtMs: 50, seq: 5n },
    ];
    const names = (chosen: { name: string }[]) => chosen.map((candidate) => candidate.name);
    expect(names(chooseDue(candidates, new Map(), caps))).toEqual(["b0", "a0", "c0", "a1", "c1"]);
    expect(names(chooseDue(candidates, new Map([["c1", 7]]), caps))).toEqual(["b0", "c0", "c1"]);
    expect(names(chooseDue(candidates, new Map(), { ...caps, limit: 2 }))).toEqual(["b0", "a0"]);
  });
});
