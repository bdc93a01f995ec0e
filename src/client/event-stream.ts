import { PointsApiError, PointsNetworkError, errorFromResponse } from "./errors.js";
import { retryAfterSeconds } from "./transport.js";
import type { EventType, LedgerEvent } from "./types.js";

/**
 * The live event stream (GET …/events/stream, server-sent events) read with fetch, so the bearer
 * token goes in a header (EventSource cannot send one) and the same code runs in Node and
 * browsers. Reconnects after a dropped connection, resuming after the last event it handed out.
 */

export interface EventStreamOptions {
  /** Resume after this cursor (an `id:` of an earlier frame, or a cursor of the pull API). */
  after?: string;
  /** Only these types. */
  types?: readonly EventType[];
  /** Aborting ends the iteration and closes the connection. */
  signal?: AbortSignal;
  /** Called once each time the stream is (re)connected and the server accepted it. */
  onOpen?: () => void;
}

export interface StreamedEvent {
  /** The frame's `id:`: a cursor to resume after this event. */
  cursor: string;
  event: LedgerEvent;
}

/** Reconnects after a dropped stream, waiting this long between tries (doubling, bounded). */
const RECONNECT_BASE_MS = 500;
const RECONNECT_MAX_MS = 15_000;
/** Reconnects in a row without one event or open stream in between before giving up. */
const MAX_FAILED_RECONNECTS = 20;
/** A frame longer than this is a broken stream, not an event (events are a few KB). */
const MAX_FRAME_CHARS = 1_000_000;

export interface StreamTarget {
  url: string;
  fetch: typeof fetch;
  /** The bearer token for each (re)connection: it may have been renewed meanwhile. */
  token: () => Promise<string>;
}

export async function* streamEvents(
  target: StreamTarget,
  options: EventStreamOptions = {},
): AsyncGenerator<StreamedEvent, void, undefined> {
  let cursor = options.after;
  let failures = 0;
  while (!options.signal?.aborted) {
    try {
      const response = await connect(target, cursor, options);
      failures = 0;
      options.onOpen?.();
      for await (const frame of framesOf(response)) {
        if (frame.data === undefined || frame.id === undefined) continue;
        cursor = frame.id;
        yield { cursor, event: JSON.parse(frame.data) as LedgerEvent };
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      // An answer of the catalogue (401, 403, 410 …) will not change by asking again.
      if (error instanceof PointsApiError && error.status !== 503 && error.status !== 429) throw error;
      if (++failures > MAX_FAILED_RECONNECTS) throw error;
    }
    await pause(Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** failures), options.signal);
  }
}

async function connect(target: StreamTarget, cursor: string | undefined, options: EventStreamOptions): Promise<Response> {
  const url = new URL(target.url);
  if (cursor !== undefined) url.searchParams.set("after", cursor);
  if (options.types !== undefined && options.types.length > 0) url.searchParams.set("types", options.types.join(","));
  let response: Response;
  try {
    response = await target.fetch(url.toString(), {
      headers: { accept: "text/event-stream", authorization: `Bearer ${await target.token()}` },
      signal: options.signal,
    });
  } catch (error) {
    throw new PointsNetworkError(`GET ${url.pathname}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (!response.ok || response.body === null) {
    const text = await response.text().catch(() => "");
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      // not the catalogue's JSON: errorFromResponse names the status instead
    }
    throw errorFromResponse(response.status, body, retryAfterSeconds(response.headers.get("retry-after")));
  }
  return response;
}

interface Frame {
  id?: string;
  event?: string;
  data?: string;
}

/** Parses the text/event-stream body into frames as the chunks arrive. */
async function* framesOf(response: Response): AsyncGenerator<Frame, void, undefined> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        yield parseFrame(block);
      }
      if (buffer.length > MAX_FRAME_CHARS) throw new PointsNetworkError("the event stream sent a frame over the size limit");
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function parseFrame(block: string): Frame {
  const frame: Frame = {};
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue; // a comment (keep-alive) or an empty line
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^ /, "");
    if (name === "id" || name === "event") frame[name] = value;
    else if (name === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
  }
  return frame;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
