import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_EVENT_STREAMS } from "../src/outbox/event-stream.js";
import {
  batchBody,
  expectError,
  listen,
  newAccount,
  putBatch,
  randomAddress,
  registerOperator,
  setupContract,
  socketSender,
  type TestLedger,
} from "./helpers/http.js";
import { isEvent, openSse, type SseConnection, type SseFrame } from "./helpers/sse.js";
import { logEverything } from "./helpers/tlog.js";

/**
 * GET /v1/contracts/{c}/events/stream over a real socket: events arrive live, a stream resumes
 * after Last-Event-ID, sends keep-alive comments, is bounded per process outside the in-flight
 * request bound, stops polling when the client leaves and ends when the app closes.
 */

let ledger: TestLedger;
let baseUrl: string;
const connections: SseConnection[] = [];

async function start(env: Record<string, string> = {}): Promise<void> {
  ledger = await setupContract({ env, credits: { PHASE2_POINTS: "100" } });
  baseUrl = await listen(ledger.app);
}

afterEach(async () => {
  for (const connection of connections.splice(0)) connection.close();
  await ledger.close();
});

async function stream(headers: Record<string, string> = {}, query = ""): Promise<SseConnection> {
  const connection = await openSse(baseUrl, `/v1/contracts/${ledger.contract}/events/stream${query}`, {
    authorization: `Bearer ${ledger.token}`,
    ...headers,
  });
  connections.push(connection);
  return connection;
}

function eventOf(frame: SseFrame): { id: string; type: string; data: { batch?: { id: string; status: string } } } {
  return JSON.parse(frame.data!) as { id: string; type: string; data: { batch?: { id: string; status: string } } };
}

const cancel = (batchId: string) =>
  ledger.send({ method: "DELETE", url: `/v1/contracts/${ledger.contract}/batches/${batchId}`, token: ledger.token });

describe("GET /v1/contracts/{c}/events/stream", () => {
  it("sends the retained events, then accepted and cancelled live, each with a cursor id", async () => {
    await start();
    const sse = await stream();
    expect(sse.status).toBe(200);
    expect(sse.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect((await sse.next(isEvent)).event).toBe("operator.changed");
    const credit = await sse.next(isEvent);
    expect(credit.event).toBe("credit.created");

    await putBatch(ledger.send, ledger, "live", batchBody([{ toAddress: randomAddress(), points: "1" }]));
    const accepted = await sse.next(isEvent);
    expect(accepted.event).toBe("batch.accepted");
    expect(eventOf(accepted).data.batch).toMatchObject({ id: "live", status: "PENDING" });
    expect((await cancel("live")).status).toBe(200);
    const cancelled = await sse.next(isEvent);
    expect(cancelled.event).toBe("batch.cancelled");
    expect(eventOf(cancelled).data.batch).toMatchObject({ id: "live", status: "CANCELLED" });

    // An event's id is a cursor of the pull API: after the accepted one comes exactly the cancel.
    const pulled = await ledger.send({
      method: "GET",
      url: `/v1/contracts/${ledger.contract}/events?after=${accepted.id}`,
      token: ledger.token,
    });
    expect((pulled.json as { events: { id: string }[] }).events.map((e) => e.id)).toEqual([eventOf(cancelled).id]);
  });

  it("resumes after Last-Event-ID (over ?after=) with only the later events", async () => {
    await start();
    const first = await stream();
    await putBatch(ledger.send, ledger, "one", batchBody([{ toAddress: randomAddress(), points: "1" }]));
    const accepted = await first.next((f) => f.event === "batch.accepted");
    first.close();
    await putBatch(ledger.send, ledger, "two", batchBody([{ toAddress: randomAddress(), points: "1" }]));
    expect((await cancel("one")).status).toBe(200);

    const resumed = await stream({ "last-event-id": accepted.id! }, "?after=ignored-when-the-header-is-there");
    const later = [await resumed.next(isEvent), await resumed.next(isEvent)].map((f) => [f.event, eventOf(f).data.batch!.id]);
    expect(later).toEqual([
      ["batch.accepted", "two"],
      ["batch.cancelled", "one"],
    ]);
    const viaQuery = await stream({}, `?after=${accepted.id}&types=batch.cancelled`);
    expect((await viaQuery.next(isEvent)).event).toBe("batch.cancelled");
  });

  it("sends a keep-alive comment every EVENT_STREAM_KEEPALIVE_MS", async () => {
    await start({ EVENT_STREAM_KEEPALIVE_MS: "200" });
    const sse = await stream();
    const comment = await sse.next((f) => f.comment !== undefined, 3000);
    expect(comment.comment).toBe("keep-alive");
    await sse.next((f) => f.comment !== undefined, 3000);
  });

  it("ends when its token is revoked (operator change), within a keep-alive interval", async () => {
    await start({ EVENT_STREAM_KEEPALIVE_MS: "200" });
    const sse = await stream();
    await sse.next(isEvent);
    await registerOperator(ledger.send, ledger.adminToken, ledger.contract, newAccount().address);
    await sse.ended;
    const again = await stream();
    expect(again.status).toBe(401);
  });

  it("refuses a bad Last-Event-ID (400), an expired one (410) and a missing token (401) before streaming", async () => {
    await start();
    const bad = await stream({ "last-event-id": "not-a-cursor" });
    expectError(
      { status: bad.status, headers: bad.headers, text: await bad.body(), json: JSON.parse(await bad.body()) },
      400,
      "VALIDATION_FAILED",
    );
    const unknownType = await stream({}, "?types=batch.exploded");
    expect(unknownType.status).toBe(400);
    const first = await stream();
    const oldest = await first.next(isEvent);
    await logEverything(ledger.store);
    await ledger.store.purgeEvents(Date.now() + 1, 1000);
    const expired = await stream({ "last-event-id": oldest.id! });
    expect(expired.status).toBe(410);
    expect(JSON.parse(await expired.body())).toMatchObject({ success: false, error: { code: "CURSOR_EXPIRED" } });
    const anonymous = await openSse(baseUrl, `/v1/contracts/${ledger.contract}/events/stream`, {});
    connections.push(anonymous);
    expect(anonymous.status).toBe(401);
  });

  it("refuses an old-form cursor past the newest event, quoting the cursor the client sent, in the query or the header", async () => {
    await start();
    // Read once for compatibility (from before sealing), but a position past the head was never given out.
    const future = Buffer.from("ev1:1000000").toString("base64url");
    const message = `"${future}" is not a cursor returned by this service (pass back the previous page's \`cursor\` as it is)`;
    for (const [headers, query, path] of [
      [{}, `?after=${future}`, "after"],
      [{ "last-event-id": future }, "", "Last-Event-ID"],
    ] as const) {
      const refused = await stream(headers, query);
      expect(refused.status, path).toBe(400);
      expect(JSON.parse(await refused.body()), path).toMatchObject({
        success: false,
        error: { code: "VALIDATION_FAILED", details: [{ path, message }] },
      });
    }
  });

  it("bounds open streams per process, and they never take the in-flight request slots", async () => {
    // The per-contract and per-token shares at the process bound, to reach it with one token (stream-hardening.test.ts tests the shares).
    await start({
      MAX_IN_FLIGHT_REQUESTS: "4",
      MAX_EVENT_STREAMS_PER_CONTRACT: String(MAX_EVENT_STREAMS),
      MAX_EVENT_STREAMS_PER_TOKEN: String(MAX_EVENT_STREAMS),
    });
    const open = [];
    for (let i = 0; i < MAX_EVENT_STREAMS; i++) open.push(await stream());
    for (const sse of open) expect(sse.status).toBe(200);
    const refused = await stream();
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(JSON.parse(await refused.body())).toMatchObject({ error: { code: "UNAVAILABLE" } });
    // A hundred open streams, and ordinary requests are still served.
    const send = socketSender(baseUrl);
    const balances = await send({ method: "GET", url: `/v1/contracts/${ledger.contract}/point-balances`, token: ledger.token });
    expect(balances.status, balances.text).toBe(200);
    // A slot frees when a client leaves.
    open.pop()!.close();
    let again: SseConnection | null = null;
    for (let attempt = 0; attempt < 50 && again?.status !== 200; attempt++) {
      again?.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
      again = await stream();
    }
    expect(again?.status).toBe(200);
  });

  it("stops polling the store when the client disconnects", async () => {
    await start();
    const listEvents = vi.spyOn(ledger.store, "listEvents");
    const sse = await stream();
    await sse.next(isEvent);
    await vi.waitFor(() => expect(listEvents.mock.calls.length).toBeGreaterThan(2), { timeout: 3000 });
    sse.close();
    // Give the server a moment to see the close, then the count must stay put across several poll intervals.
    await vi.waitFor(
      async () => {
        const before = listEvents.mock.calls.length;
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect(listEvents.mock.calls.length).toBe(before);
      },
      { timeout: 5000 },
    );
  });

  it("ends open streams when the app closes, so close() is not held up", async () => {
    await start();
    const sse = await stream();
    await sse.next(isEvent);
    const closing = ledger.app.close();
    // Bounded well inside the test's timeout: a stream left open holds close() up for good.
    const outcome = await Promise.race([
      Promise.all([sse.ended, closing]).then(() => "closed" as const),
      new Promise<"still open">((resolve) => setTimeout(() => resolve("still open"), 3000)),
    ]);
    expect(outcome).toBe("closed");
    // Ended by the server at a frame boundary, after the reconnect hint: the client resumes with its last id.
    const text = await sse.body();
    expect(text).toMatch(/^retry: \d+\n\n/);
    expect(text.endsWith("\n\n")).toBe(true);
  });
});
