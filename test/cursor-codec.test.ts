import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { ApiError } from "../src/domain/errors.js";
import { decodeCursor, encodeCursor, type CursorKind } from "../src/domain/cursor.js";
import { cursorMessage } from "../src/domain/messages.js";
import { BATCH_CURSOR, CONTRACT_CURSOR, DELIVERY_CURSOR, TRANSFER_CURSOR } from "../src/http/cursor.js";
import { parseDeliveryPosition } from "../src/domain/webhooks.js";
import { addContract, expectError, setupContract, type TestLedger } from "./helpers/http.js";

/**
 * Issue 20: one cursor codec. Every listing's cursor is the same versioned envelope with a part
 * schema per kind, and everything it did not issue is the same 400 naming the parameter.
 */

const b64 = (text: string) => Buffer.from(text).toString("base64url");
const SEQ_MAX = "9223372036854775807";
const CONTRACT = "0x00000000000000000000000000000000000000ab" as AddressKey;

/** The one error: 400 VALIDATION_FAILED with one detail, the parameter and the shared message quoting the value. */
function expectRefused<T>(kind: CursorKind<T>, cursor: string, path = "cursor"): void {
  let thrown: unknown;
  try {
    decodeCursor(kind, cursor, path);
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `${kind.tag}: ${cursor}`).toBeInstanceOf(ApiError);
  const error = thrown as ApiError;
  expect(error.status).toBe(400);
  expect(error.code).toBe("VALIDATION_FAILED");
  expect(error.details).toEqual([{ path, message: cursorMessage(cursor) }]);
}

const kinds = [
  { kind: BATCH_CURSOR, value: { createdAtMs: 1_767_225_600_123, seq: SEQ_MAX }, legacy: b64("1767225600123.42") },
  { kind: TRANSFER_CURSOR, value: { createdAtMs: 0, seq: "7", index: 2 ** 31 - 1 }, legacy: b64("1.2.3") },
  { kind: CONTRACT_CURSOR, value: CONTRACT, legacy: b64(CONTRACT) },
  { kind: DELIVERY_CURSOR, value: SEQ_MAX, legacy: "42" },
] as { kind: CursorKind<unknown>; value: unknown; legacy: string }[];

describe("the cursor codec", () => {
  it.each(kinds)("round-trips a $kind.tag cursor through the versioned envelope", ({ kind, value }) => {
    const cursor = encodeCursor(kind, value);
    expect(Buffer.from(cursor, "base64url").toString()).toMatch(new RegExp(`^v2\\.${kind.tag}\\.`));
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(kind, cursor)).toEqual(value);
  });

  it("still reads each listing's form from before the envelope", () => {
    expect(decodeCursor(BATCH_CURSOR, b64("1767225600123.42"))).toEqual({ createdAtMs: 1_767_225_600_123, seq: "42" });
    expect(decodeCursor(TRANSFER_CURSOR, b64("1.2.3"))).toEqual({ createdAtMs: 1, seq: "2", index: 3 });
    expect(decodeCursor(CONTRACT_CURSOR, b64(CONTRACT))).toBe(CONTRACT);
    expect(decodeCursor(DELIVERY_CURSOR, "42")).toBe("42");
  });

  it.each(kinds)(
    "refuses every malformed, out-of-range, foreign or other-version $kind.tag cursor with the one error",
    ({ kind, value }) => {
      const text = Buffer.from(encodeCursor(kind, value), "base64url").toString();
      const foreign = kinds.filter((other) => other.kind !== kind);
      const refused = [
        "",
        "!!!",
        "A".repeat(129),
        "%00",
        b64(text.replace(/^v2/, "v3")), // another version
        b64(text.replace(/^v2/, "v1")),
        b64(`${text}.1`), // a part too many
        b64(text.slice(0, text.lastIndexOf("."))), // a part too few
        b64(`${text}x`), // a malformed part
        b64(`v2.${kind.tag}.`),
        b64(`v2.${kind.tag}.-1`),
        ...foreign.map((other) => encodeCursor(other.kind, other.value)), // another listing's cursor
      ];
      for (const cursor of refused) expectRefused(kind, cursor);
      expectRefused(kind, "!!!", "after"); // the parameter is named as given
    },
  );

  it("refuses every part out of its range, in both forms", () => {
    const outOfRange = [
      [BATCH_CURSOR, "1.9223372036854775808"],
      [BATCH_CURSOR, "1000000000000000.1"],
      [TRANSFER_CURSOR, "1.9223372036854775808.0"],
      [TRANSFER_CURSOR, "1.1.2147483648"],
      [DELIVERY_CURSOR, "0"],
      [DELIVERY_CURSOR, "9223372036854775808"],
      [CONTRACT_CURSOR, "0x00000000000000000000000000000000000000AB"], // not the lowercase key it hands out
    ] as [CursorKind<unknown>, string][];
    for (const [kind, parts] of outOfRange) {
      expectRefused(kind, b64(`v2.${kind.tag}.${parts}`));
      expectRefused(kind, kind === DELIVERY_CURSOR ? parts : b64(parts));
    }
  });

  it("the deliveries store check takes the same part schema and answers the same error", () => {
    expect(parseDeliveryPosition(SEQ_MAX)).toBe(SEQ_MAX);
    for (const position of ["0", "01", "9223372036854775808", "x"]) {
      expect(() => parseDeliveryPosition(position)).toThrow(ApiError);
      try {
        parseDeliveryPosition(position);
      } catch (error) {
        expect((error as ApiError).details).toEqual([{ path: "cursor", message: cursorMessage(position) }]);
      }
    }
  });
});

describe("every listing answers the same error to a cursor it did not issue", () => {
  let ledger: TestLedger;

  beforeAll(async () => {
    ledger = await setupContract({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" } });
  });
  afterAll(async () => {
    await ledger.close();
  });

  it("batches, transfers, admin contracts, deliveries and events: 400 VALIDATION_FAILED, the parameter, the one message", async () => {
    const other = await addContract(ledger);
    const created = await ledger.send({
      method: "POST",
      url: `/v1/contracts/${ledger.contract}/webhook-endpoints`,
      token: ledger.token,
      body: { url: "http://127.0.0.1:9/cursor" },
    });
    expect(created.status, created.text).toBe(200);
    const endpointId = (created.json as { endpoint: { id: string } }).endpoint.id;
    // Cursors another listing (or another contract's stream) issued: foreign to each listing below.
    const otherEvents = await ledger.send({ method: "GET", url: `/v1/contracts/${other.contract}/events`, token: other.token });
    const foreign = [
      encodeCursor(BATCH_CURSOR, { createdAtMs: 1, seq: "1" }),
      encodeCursor(CONTRACT_CURSOR, CONTRACT),
      (otherEvents.json as { cursor: string }).cursor,
    ];
    const listings: { url: string; token: string; path: string }[] = [
      { url: `/v1/contracts/${ledger.contract}/batches?cursor=`, token: ledger.token, path: "cursor" },
      { url: `/v1/contracts/${ledger.contract}/transfers?cursor=`, token: ledger.token, path: "cursor" },
      { url: `/v1/admin/contracts?cursor=`, token: ledger.adminToken, path: "cursor" },
      { url: `/v1/contracts/${ledger.contract}/webhook-endpoints/${endpointId}/deliveries?cursor=`, token: ledger.token, path: "cursor" },
      { url: `/v1/contracts/${ledger.contract}/events?after=`, token: ledger.token, path: "after" },
      { url: `/v1/admin/events?after=`, token: ledger.adminToken, path: "after" },
    ];
    for (const listing of listings) {
      for (const cursor of foreign) {
        if (listing.url.includes("/batches") && cursor === foreign[0]) continue; // its own kind
        if (listing.url.startsWith("/v1/admin/contracts") && cursor === foreign[1]) continue;
        const response = await ledger.send({ method: "GET", url: `${listing.url}${cursor}`, token: listing.token });
        const error = expectError(response, 400, "VALIDATION_FAILED");
        expect(error.details, `${listing.url} ${cursor}`).toEqual([{ path: listing.path, message: cursorMessage(cursor) }]);
      }
    }
  });
});
