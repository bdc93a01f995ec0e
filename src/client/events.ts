import { PointsCursorError } from "./errors.js";
import type { EventPage, EventPageQuery, LedgerEvent } from "./types.js";

export interface EventFeedOptions extends EventPageQuery {
  /** When caught up (hasMore false), wait `pollIntervalMs` and ask again instead of ending. */
  follow?: boolean;
  /** The wait between asks once caught up, when following; default 1 s, kept within 100 ms–60 s. */
  pollIntervalMs?: number;
  /** Aborting ends the iteration, also during a wait. */
  signal?: AbortSignal;
}

const DEFAULT_POLL_INTERVAL_MS = 1000;
const MIN_POLL_INTERVAL_MS = 100;
const MAX_POLL_INTERVAL_MS = 60_000;
/** A listing that has not caught up after this many pages is a bug somewhere, not a big log. */
const MAX_PAGES_WITHOUT_CATCHING_UP = 1_000_000;

/**
 * The events of a stream, page by page over the pull API, as an async iterator that keeps its
 * cursor. `cursor` is where to resume without missing an event: it moves past a page only once
 * every event of that page has been handed out and the next one asked for, so persisting it after
 * handling each event gives at-least-once delivery (a page left half-handled comes again).
 */
export class EventFeed implements AsyncIterable<LedgerEvent> {
  private position: string | undefined;
  private readonly pollIntervalMs: number;

  constructor(
    private readonly fetchPage: (query: EventPageQuery) => Promise<EventPage>,
    private readonly options: EventFeedOptions = {},
  ) {
    this.position = options.after;
    const interval = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.pollIntervalMs = Math.min(MAX_POLL_INTERVAL_MS, Math.max(MIN_POLL_INTERVAL_MS, interval));
  }

  /** The cursor to resume from (pass it as `after`); undefined until the first page when none was given. */
  get cursor(): string | undefined {
    return this.position;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<LedgerEvent, void, undefined> {
    const { types, limit, follow = false, signal } = this.options;
    for (let pagesBehind = 0; pagesBehind < MAX_PAGES_WITHOUT_CATCHING_UP; pagesBehind++) {
      if (signal?.aborted) return;
      const page = await this.fetchPage({ after: this.position, types, limit });
      for (const event of page.events) {
        yield event;
        if (signal?.aborted) return;
      }
      // A page that says more is there but does not move the cursor would be asked for forever.
      if (page.hasMore && page.events.length === 0 && page.cursor === this.position) throw new PointsCursorError(page.cursor);
      this.position = page.cursor;
      if (page.hasMore) continue;
      if (!follow) return;
      pagesBehind = 0;
      await wait(this.pollIntervalMs, signal);
    }
    throw new Error(`the event listing did not catch up after ${MAX_PAGES_WITHOUT_CATCHING_UP} pages`);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
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

/** The query string of GET …/events. */
export function eventQueryOf(query: EventPageQuery): Record<string, string | undefined> {
  return {
    after: query.after,
    types: query.types === undefined || query.types.length === 0 ? undefined : query.types.join(","),
    limit: query.limit === undefined ? undefined : String(query.limit),
  };
}
