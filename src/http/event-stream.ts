import { PassThrough, type Readable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { ApiError, unavailable } from "../domain/errors.js";
import { eventJson } from "../domain/events.js";
import type { EventPage, EventQuery, LedgerStore, StoredEvent } from "../store/store.js";
import { encodeEventCursor } from "./event-cursor.js";

/**
 * Server-sent events of one stream (docs/api.md, GET …/events/stream). Each open stream polls the
 * store from its own position: there is no shared in-memory feed to fall behind or lose events
 * across processes, and the store's paging rules (every event once, in order, late commits not
 * skipped) hold for the stream as they do for the pull API.
 */

/** Streams one process keeps open at once; past it, 503 (each costs a connection and a poll). */
export const MAX_EVENT_STREAMS = 100;
/** How often an open stream asks the store for new events: well inside docs/api.md's "within a second". */
export const EVENT_STREAM_POLL_MS = 250;
/** Events read per poll; a stream far behind catches up page by page at the client's pace. */
const EVENT_STREAM_PAGE_SIZE = 100;
/** The reconnection delay an EventSource is told to use after the stream ends. */
const RECONNECT_DELAY_MS = 1000;

export interface StreamOptions {
  store: LedgerStore;
  keepAliveMs: number;
  log: FastifyBaseLogger;
}

/** What a stream reads: the store query without its position and page size. */
export type StreamQuery = Omit<EventQuery, "after" | "limit">;

/** The open streams of one app: bounded, woken early on local writes, all ended at shutdown. */
export class EventStreams {
  private readonly open = new Set<EventStream>();
  /** Slots taken by streams still reading their first page. */
  private opening = 0;
  private closed = false;

  constructor(private readonly options: StreamOptions) {}

  get size(): number {
    return this.open.size;
  }

  /**
   * Reads the first page before any byte is sent, so a malformed position is still a 400 and an
   * expired one a 410; then returns the body, which stays open until the client leaves or the
   * app closes.
   */
  async start(query: StreamQuery, after: string | null, authorized: () => Promise<boolean>): Promise<Readable> {
    if (this.closed) throw unavailable("the service is shutting down", 1);
    if (this.open.size + this.opening >= MAX_EVENT_STREAMS)
      throw unavailable(`${MAX_EVENT_STREAMS} event streams are open, retry shortly`, 1);
    this.opening += 1;
    let first: EventPage;
    try {
      first = await this.readPage(query, after);
    } finally {
      this.opening -= 1;
    }
    if (first.kind === "expired") throw new ApiError("CURSOR_EXPIRED");
    const stream = new EventStream(this, query, authorized, this.options);
    this.open.add(stream);
    void stream.run(first).finally(() => this.open.delete(stream));
    return stream.body;
  }

  /** Wakes every waiting stream: an event may have been committed by this process just now. */
  notify(): void {
    for (const stream of this.open) stream.wake();
  }

  /** Ends every stream (app close): their clients reconnect elsewhere with Last-Event-ID. */
  closeAll(): void {
    this.closed = true;
    for (const stream of this.open) stream.stop();
  }

  readPage(query: StreamQuery, after: string | null): Promise<EventPage> {
    return this.options.store.listEvents({ ...query, after, limit: EVENT_STREAM_PAGE_SIZE });
  }
}

/** One `id:`/`event:`/`data:` frame; the id is the cursor a reconnecting client sends back. */
function frameOf(stored: StoredEvent): string {
  return `id: ${encodeEventCursor(stored.position)}\nevent: ${stored.event.type}\ndata: ${JSON.stringify(eventJson(stored.event))}\n\n`;
}

class EventStream {
  readonly body = new PassThrough();
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private readonly keepAlive: NodeJS.Timeout;
  private authorizedAtMs = Date.now();

  constructor(
    private readonly streams: EventStreams,
    private readonly query: StreamQuery,
    private readonly authorized: () => Promise<boolean>,
    private readonly options: StreamOptions,
  ) {
    // Fastify destroys the body when the client goes away; that ends the polling too.
    this.body.once("close", () => this.stop());
    this.keepAlive = setInterval(() => this.send(": keep-alive\n\n"), options.keepAliveMs);
    this.keepAlive.unref();
  }

  async run(first: EventPage): Promise<void> {
    try {
      this.send(`retry: ${RECONNECT_DELAY_MS}\n\n`);
      let page = first;
      while (page.kind === "page" && !this.stopped) {
        for (const stored of page.events) {
          if (!this.send(frameOf(stored))) await this.drained();
          if (this.stopped) return;
        }
        if (!page.hasMore) await this.sleep(EVENT_STREAM_POLL_MS);
        if (this.stopped || !(await this.stillAuthorized())) return;
        page = await this.streams.readPage(this.query, page.position);
      }
      // The position expired while the client was connected (a purge passed it): ending the
      // stream makes it reconnect, and the reconnection answers 410.
    } catch (error) {
      this.options.log.warn({ err: error }, "event stream ended by a failed read; the client resumes with Last-Event-ID");
    } finally {
      this.stop();
    }
  }

  /**
   * Once per keep-alive interval the stream checks its bearer token again: one that expired, or
   * was revoked by an operator change, ends the stream within that interval (the client signs in
   * again and resumes with Last-Event-ID).
   */
  private async stillAuthorized(): Promise<boolean> {
    if (Date.now() - this.authorizedAtMs < this.options.keepAliveMs) return true;
    this.authorizedAtMs = Date.now();
    return this.authorized();
  }

  wake(): void {
    this.wakeUp?.();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.keepAlive);
    this.wake();
    this.body.end();
  }

  /** Writes unless the stream is over; false when the client is slow (wait for drain). */
  private send(text: string): boolean {
    if (this.stopped || this.body.destroyed) return true;
    return this.body.write(text);
  }

  /** Backpressure: a slow client holds at most one page in memory, not the whole log. */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.body.off("drain", done);
        this.body.off("close", done);
        this.wakeUp = null;
        resolve();
      };
      this.wakeUp = done;
      this.body.once("drain", done);
      this.body.once("close", done);
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
      this.wakeUp = done;
    });
  }
}
