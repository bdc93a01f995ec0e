import { request as httpRequest, type IncomingMessage } from "node:http";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { MAX_EVENT_STREAMS } from "../src/domain/limits.js";
import { addContract, listen, randomAddress, setupContract, signIn, type TestLedger } from "./helpers/http.js";
import { isEvent, openSse, type SseConnection } from "./helpers/sse.js";

/**
 * Issue 19, items 3, 4 and 12 over real sockets: a stream whose client stops reading holds a
 * bounded number of bytes however many events commit; one contract (or token) cannot take every
 * stream slot of the process; a stream ends within a second of its token's expiry. The stream is
 * the same code over either store (it reads through the store port), so this runs on SQLite.
 */

let ledger: TestLedger;
let baseUrl: string;
const connections: SseConnection[] = [];
const stalled: IncomingMessage[] = [];

async function start(env: Record<string, string> = {}): Promise<void> {
  ledger = await setupContract({ env, credits: { PHASE2_POINTS: "1000000" } });
  baseUrl = await listen(ledger.app);
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const connection of connections.splice(0)) connection.close();
  for (const incoming of stalled.splice(0)) incoming.destroy();
  await ledger.close();
});

async function stream(contract: string, token: string): Promise<SseConnection> {
  const connection = await openSse(baseUrl, `/v1/contracts/${contract}/events/stream`, { authorization: `Bearer ${token}` });
  connections.push(connection);
  return connection;
}

/** A stream whose client reads the headers and then nothing more: the socket stops draining. */
function stalledStream(contract: string, token: string): Promise<IncomingMessage> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({
      host: base.hostname,
      port: base.port,
      path: `/v1/contracts/${contract}/events/stream`,
      headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
    outgoing.on("error", reject);
    outgoing.on("response", (incoming) => {
      incoming.pause();
      incoming.on("error", () => undefined);
      stalled.push(incoming);
      resolve(incoming);
    });
    outgoing.end();
  });
}

describe("a stream whose client stops reading", () => {
  it("holds a bounded number of bytes while thousands of events commit", async () => {
    await start();
    // Every stream body is a PassThrough the server writes its frames into: record the most any
    // of them held unsent (the bytes a stalled client costs this process).
    let mostBufferedBytes = 0;
    const write = PassThrough.prototype.write;
    vi.spyOn(PassThrough.prototype, "write").mockImplementation(function (this: PassThrough, ...args: Parameters<PassThrough["write"]>) {
      const result = write.apply(this, args);
      mostBufferedBytes = Math.max(mostBufferedBytes, this.writableLength + this.readableLength);
      return result;
    });
    await stalledStream(ledger.contract, ledger.token);
    const live = await stream(ledger.contract, ledger.token);
    // Commits straight to the store (each wakes the streams as a request's would), with ids that
    // make every frame ≈ 700 bytes: 9,000 of them (6 MB) are more than the kernel's socket buffers
    // hold for a client that stopped reading (≈ 4 MB on loopback here), so the rest waits in this
    // process or, as it should, in the log.
    const batches = 9000;
    const contract = ledger.contract.toLowerCase() as AddressKey;
    for (let i = 0; i < batches; i++) {
      const submitted = await ledger.store.submitBatch({
        contract,
        batchId: `${String(i).padStart(6, "0")}-${"x".repeat(57)}`,
        pointType: "PHASE2_POINTS",
        transfers: [{ toAddress: randomAddress().toLowerCase() as AddressKey, amount: 1n }],
        total: 1n,
        secondsToFinalize: 60,
        createdAtMs: Date.now(),
      });
      expect(submitted.kind).toBe("accepted");
    }
    // A reading client still gets every event, live.
    let last = "";
    while (!last.startsWith(String(batches - 1).padStart(6, "0"))) {
      const frame = await live.next(isEvent, 10_000);
      last = (JSON.parse(frame.data!) as { data: { batch?: { id: string } } }).data.batch?.id ?? "";
    }
    // The stream's own buffer (16 KB) and a frame, not one frame per commit (5.5 MB before the fix).
    expect(mostBufferedBytes).toBeLessThan(64 * 1024);
  }, 120_000);
});

describe("stream slots", () => {
  it("caps streams per contract and per token below the process bound, so another contract still gets one", async () => {
    await start();
    const secondToken = await signIn(ledger.send, ledger.contract, ledger.operatorAccount);
    // One contract asks for every slot of the process, from two tokens.
    const answers: number[] = [];
    for (let i = 0; i < MAX_EVENT_STREAMS; i++)
      answers.push((await stream(ledger.contract, i % 2 === 0 ? ledger.token : secondToken)).status);
    expect(answers.filter((status) => status === 200).length).toBe(ledger.config.maxEventStreamsPerContract);
    const refused = connections.find((connection) => connection.status !== 200)!;
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(JSON.parse(await refused.body())).toMatchObject({ error: { code: "RATE_LIMITED" } });
    // Another contract (the console's live feed, say) still gets its stream.
    const other = await addContract(ledger, {});
    const theirs = await stream(other.contract, other.token);
    expect(theirs.status).toBe(200);
    expect((await theirs.next(isEvent)).event).toBe("operator.changed");
    // One token alone holds at most its own share.
    for (const connection of connections.splice(0)) connection.close();
    const thirdToken = await signIn(ledger.send, ledger.contract, ledger.operatorAccount);
    const perToken: number[] = [];
    for (let i = 0; i <= ledger.config.maxEventStreamsPerToken; i++) {
      // A slot frees once the server has seen the close: retry a refused one briefly.
      let status = 0;
      for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
        status = (await stream(ledger.contract, thirdToken)).status;
        if (status !== 200 && i < ledger.config.maxEventStreamsPerToken) await new Promise((resolve) => setTimeout(resolve, 20));
        else break;
      }
      perToken.push(status);
    }
    expect(perToken.slice(0, -1).every((status) => status === 200)).toBe(true);
    expect(perToken.at(-1)).toBe(429);
    expect(ledger.config.maxEventStreamsPerToken).toBeLessThan(ledger.config.maxEventStreamsPerContract);
    expect(ledger.config.maxEventStreamsPerContract).toBeLessThan(MAX_EVENT_STREAMS);
  });
});

describe("a stream's token", () => {
  it("ends the stream within a second of the token's expiry, not at the next keep-alive", async () => {
    await start({ BEARER_TOKEN_TTL_SECONDS: "2", EVENT_STREAM_KEEPALIVE_MS: "15000" });
    const token = await signIn(ledger.send, ledger.contract, ledger.operatorAccount);
    const signedInAtMs = Date.now();
    const sse = await stream(ledger.contract, token);
    expect(sse.status).toBe(200);
    await sse.next(isEvent);
    const endedAtMs = await Promise.race([
      sse.ended.then(() => Date.now()),
      new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 5000).unref()),
    ]);
    // The token expires at most 2 s after sign-in; the stream ends within 1 s after that.
    expect(endedAtMs - signedInAtMs).toBeLessThanOrEqual(3000);
    expect(endedAtMs - signedInAtMs).toBeGreaterThanOrEqual(1000);
    // Reconnecting with the expired token is 401.
    expect((await stream(ledger.contract, token)).status).toBe(401);
  });
});
