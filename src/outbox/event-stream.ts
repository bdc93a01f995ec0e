import { PassThrough, type Readable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { ApiError, unavailable } from "../domain/errors.js";
import { eventJson } from "../domain/events.js";
import { MAX_EVENT_STREAMS } from "../domain/limits.js";
import type { EventPage, EventQuery, LedgerStore, StoredEvent } from "../store/store.js";

export { MAX_EVENT_STREAMS };

/**
 * Server-sent events of one stream (docs/api.md, GET …/events/stream). Each open stream polls the
 * store from its own position: there is no shared in-memory feed to fall behind or lose events
 * across processes, and the store's paging rules (every event once, in order, late commits not
 * skipped) hold for the stream as they do for the pull API. A stream writes only while its client
 * takes what it sent: a stalled client holds at most one page in this process, and the stream
 * goes on from its position once the socket drains, however many events were committed meanwhile.
 */

/** How often an open stream asks the store for new events: well inside docs/api.md's "within a second". */
export const EVENT_STREAM_POLL_MS = 250;
/** Events read per poll; a stream far behind catches up page by page at the client's pace. */
const EVENT_STREAM_PAGE_SIZE = 100;
/** The reconnection delay an EventSource is told to use after the stream ends. */
const RECONNECT_DELAY_MS = 1000;
/** setTimeout's longest delay; a token that lives longer is checked again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Past a token's expiry before checking it: timers may fire a millisecond early. */
const EXPIRY_MARGIN_MS = 20;

export interface StreamOptions {
  store: LedgerStore;
  keepAliveMs: number;
  maxPerContract: number;
  maxPerToken: number;
  /** The clock tokens expire by (the app's). */
  nowMs: () => number;
  log: FastifyBaseLogger;
}

/** What a stream reads: the store query without its position and page size. */
export type StreamQuery = Omit<EventQuery, "after" | "limit" | "verifyAfter">;

/** Who holds a stream, and how long their token lasts. */
export interface StreamHolder {
  contract: string;
  /** The bearer token's hash (hex): an operator token or an API key. */
  token: string;
  /** When the token expires (the app clock's ms). */
  expiresAtMs: number;
  /** Checks the token again: its expiry, or null once it expired or was revoked (an operator change). */
  authorized: () => Promise<number | null>;
}

export interface StreamStart {
  query: StreamQuery;
  /** The store position to read after, and whether it came from an unauthenticated cursor (EventQuery.verifyAfter). */
  after: { position: string; verify: boolean } | null;
  holder: StreamHolder;
  /** The `id:` of an event's frame: the cursor a reconnecting client sends back. */
  idOf: (stored: StoredEvent) => string;
}

/** Open streams (and streams reading their first page) by contract or token. */
class SlotCounts {
  private readonly counts = new Map<string, number>();
  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  take(key: string): void {
    this.counts.set(key, this.of(key) + 1);
  }
  release(key: string): void {
    const left = this.of(key) - 1;
    if (left > 0) this.counts.set(key, left);
    else this.counts.delete(key);
  }
}

/** The open streams of one app: bounded per process, per contract and per token, woken early on local writes, all ended at shutdown. */
export class EventStreams {
  private readonly open = new Set<EventStream>();
  /** Slots taken by streams still reading their first page. */
  private opening = 0;
  private readonly byContract = new SlotCounts();
  private readonly byToken = new SlotCounts();
  private closed = false;

  constructor(private readonly options: StreamOptions) {}

  get size(): number {
    return this.open.size;
  }

  /**
   * Reads the first page before any byte is sent, so a malformed position is still a 400 and an
   * expired one a 410; then returns the body, which stays open until the client leaves, its token
   * expires or the app closes.
   */
  async start(start: StreamStart): Promise<Readable> {
    const { contract, token } = start.holder;
    this.admit(contract, token);
    this.opening += 1;
    this.byContract.take(contract);
    this.byToken.take(token);
    const release = () => {
      this.byContract.release(contract);
      this.byToken.release(token);
    };
    let first: EventPage;
    try {
      first = await this.readPage(start.query, start.after?.position ?? null, start.after?.verify ?? false);
    } catch (error) {
      release();
      throw error;
    } finally {
      this.opening -= 1;
    }
    if (first.kind === "expired") {
      release();
      throw new ApiError("CURSOR_EXPIRED");
    }
    const stream = new EventStream(this, start, first, this.options);
    this.open.add(stream);
    void stream.run().finally(() => {
      this.open.delete(stream);
      release();
    });
    return stream.body;
  }

  /** Refuses a stream past the process's bound (503) or past its contract's or token's share (429). */
  private admit(contract: string, token: string): void {
    if (this.closed) throw unavailable("the service is shutting down", 1);
    if (this.open.size + this.opening >= MAX_EVENT_STREAMS)
      throw unavailable(`${MAX_EVENT_STREAMS} event streams are open, retry shortly`, 1);
    if (this.byContract.of(contract) >= this.options.maxPerContract)
      throw new ApiError(
        "RATE_LIMITED",
        `this contract has ${this.options.maxPerContract} event streams open (MAX_EVENT_STREAMS_PER_CONTRACT); close one first`,
        undefined,
        5,
      );
    if (this.byToken.of(token) >= this.options.maxPerToken)
      throw new ApiError(
        "RATE_LIMITED",
        `this token has ${this.options.maxPerToken} event streams open (MAX_EVENT_STREAMS_PER_TOKEN); close one first`,
        undefined,
        5,
      );
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

  readPage(query: StreamQuery, after: string | null, verifyAfter = false): Promise<EventPage> {
    return this.options.store.listEvents({ ...query, after, verifyAfter, limit: EVENT_STREAM_PAGE_SIZE });
  }
}

/** One `id:`/`event:`/`data:` frame. */
function frameOf(id: string, stored: StoredEvent): string {
  return `id: ${id}\nevent: ${stored.event.type}\ndata: ${JSON.stringify(eventJson(stored.event))}\n\n`;
}

class EventStream {
  readonly body = new PassThrough();
  private stopped = false;
  /** Ends a wait for new events early (a local commit, or the stream's end); never a wait for drain. */
  private wakeUp: (() => void) | null = null;
  /** Ends a wait for drain: only the socket draining, or the stream's end. */
  private drainWait: (() => void) | null = null;
  private readonly keepAlive: NodeJS.Timeout;
  private expiry: NodeJS.Timeout | null = null;
  private authorizedAtMs = Date.now();

  constructor(
    private readonly streams: EventStreams,
    private readonly start: StreamStart,
    /** Handed to run() and dropped here, so a stalled stream holds no page (a parameter might stay reachable). */
    private firstPage: EventPage | null,
    private readonly options: StreamOptions,
  ) {
    // Fastify destroys the body when the client goes away; that ends the polling too.
    this.body.once("close", () => this.stop());
    this.keepAlive = setInterval(() => this.sendKeepAlive(), options.keepAliveMs);
    this.keepAlive.unref();
    this.endAtExpiry(start.holder.expiresAtMs);
  }

  async run(): Promise<void> {
    try {
      this.send(`retry: ${RECONNECT_DELAY_MS}\n\n`);
      // null while waiting for drain: a stalled stream holds no page.
      let page: EventPage | null = this.firstPage;
      this.firstPage = null;
      while (page !== null && page.kind === "page" && !this.stopped) {
        const stoppedAt = this.sendPage(page);
        let position = page.position;
        if (stoppedAt !== null) {
          // The client is not taking what was sent: drop the rest of the page until the socket
          // drains, then read on from the last event sent.
          position = stoppedAt;
          page = null;
          await this.drained();
        } else if (!page.hasMore) await this.sleep(EVENT_STREAM_POLL_MS);
        if (this.stopped || !(await this.stillAuthorized())) return;
        page = await this.streams.readPage(this.start.query, position);
      }
      // The position expired while the client was connected (a purge passed it): ending the
      // stream makes it reconnect, and the reconnection answers 410.
    } catch (error) {
      this.options.log.warn({ err: error }, "event stream ended by a failed read; the client resumes with Last-Event-ID");
    } finally {
      this.stop();
    }
  }

  /** Writes the page's events until the body asks to wait; returns the position of the last one written then, null when all were. */
  private sendPage(page: Extract<EventPage, { kind: "page" }>): string | null {
    for (const [index, stored] of page.events.entries()) {
      if (this.stopped) return null;
      if (!this.send(frameOf(this.start.idOf(stored), stored)) && index < page.events.length - 1) return stored.position;
    }
    if (this.body.writableNeedDrain && page.events.length > 0) return page.events.at(-1)!.position;
    return null;
  }

  /**
   * Once per keep-alive interval the stream checks its bearer token again: one revoked by an
   * operator change ends the stream within that interval (the client signs in again and resumes
   * with Last-Event-ID). Expiry needs no check: a timer ends the stream then (endAtExpiry).
   */
  private async stillAuthorized(): Promise<boolean> {
    if (Date.now() - this.authorizedAtMs < this.options.keepAliveMs) return true;
    this.authorizedAtMs = Date.now();
    return (await this.start.holder.authorized()) !== null;
  }

  /** Ends the stream when its token expires; a token renewed meanwhile (an API key's) sets the next check. */
  private endAtExpiry(expiresAtMs: number): void {
    const delayMs = Math.min(MAX_TIMER_MS, Math.max(0, expiresAtMs - this.options.nowMs()) + EXPIRY_MARGIN_MS);
    this.expiry = setTimeout(() => {
      this.start.holder.authorized().then(
        (next) => (next === null ? this.stop() : this.endAtExpiry(next)),
        () => this.stop(),
      );
    }, delayMs);
    this.expiry.unref();
  }

  wake(): void {
    this.wakeUp?.();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.keepAlive);
    if (this.expiry) clearTimeout(this.expiry);
    this.wake();
    this.drainWait?.();
    this.body.end();
  }

  /** Writes unless the stream is over; false when the client is slow (wait for drain). */
  private send(text: string): boolean {
    if (this.stopped || this.body.destroyed) return true;
    return this.body.write(text);
  }

  /** A keep-alive only into an idle connection: one whose client is not reading gains nothing from more bytes. */
  private sendKeepAlive(): void {
    if (this.body.writableLength === 0 && this.body.readableLength === 0) this.send(": keep-alive\n\n");
  }

  /** Backpressure: a slow client holds at most one page in memory, not the log; commits do not end this wait. */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.body.off("drain", done);
        this.body.off("close", done);
        this.drainWait = null;
        resolve();
      };
      this.drainWait = done;
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
