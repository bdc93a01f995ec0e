import { call } from "./client.js";
import { pollUntil, quantile, sleep } from "./stats.js";

/**
 * The transparency log's lag (API.md: every event in a signed checkpoint within
 * LOG_CHECKPOINT_SECONDS + 0.5 s of its commit, p99; logLagBoundMs): while a phase runs, the bench reads GET /v1/log/checkpoint every
 * CHECKPOINT_POLL_MS; afterwards it pages the contract's events of the phase (their logIndex and
 * occurredAt, stamped in the event's own transaction, a few milliseconds before its commit) and
 * takes, for each, the time from its occurredAt to the first read whose checkpoint holds it (its
 * size > logIndex). So a lag is at most one poll and one read late.
 */

const CHECKPOINT_POLL_MS = 25;
/** API.md (Transparency log): an event is in a signed checkpoint within LOG_CHECKPOINT_SECONDS + this, p99. */
const LOG_LAG_MARGIN_MS = 500;

/** The bound API.md states for the log's lag p99, at the server's LOG_CHECKPOINT_SECONDS. */
export function logLagBoundMs(logCheckpointSeconds: number): number {
  return logCheckpointSeconds * 1000 + LOG_LAG_MARGIN_MS;
}
/** Bounds the wait for the phase's events to be logged and signed, well past the 1 s target. */
const LOGGED_WAIT_MS = 30_000;
const EVENTS_PAGE = 1000;
const MAX_EVENT_PAGES = 1000;

export interface LogLag {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  events: number;
  checkpointReads: number;
}

interface PhaseEvent {
  occurredAt: string;
  logIndex: number | null;
}

async function checkpointSize(baseUrl: string): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/log/checkpoint`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /v1/log/checkpoint → ${response.status}: ${text.slice(0, 200)}`);
  return Number(text.split("\n")[1]);
}

/** Every event of the contract's stream that occurred at or after `fromMs`, in the stream's order (bounded paging). */
async function eventsSince(baseUrl: string, token: string, contract: string, fromMs: number): Promise<PhaseEvent[]> {
  const all: PhaseEvent[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_EVENT_PAGES; page++) {
    const query = new URLSearchParams({ limit: String(EVENTS_PAGE) });
    if (after !== null) query.set("after", after);
    const answer: { events: PhaseEvent[]; cursor: string; hasMore: boolean } = await call(
      baseUrl,
      "GET",
      `/v1/contracts/${contract}/events?${query}`,
      token,
    );
    all.push(...answer.events.filter((event) => Date.parse(event.occurredAt) >= fromMs));
    after = answer.cursor;
    if (!answer.hasMore) return all;
  }
  throw new Error(`more than ${MAX_EVENT_PAGES * EVENTS_PAGE} events to read for the log's lag`);
}

/** Reads the checkpoint's size until measure() is called, then measures the lag of the events of the phase. */
export function watchLog(baseUrl: string, token: string, contract: string): { measure(): Promise<LogLag> } {
  const fromMs = Date.now();
  const seen: [number, number][] = [];
  let stopped = false;
  // Ends with the watcher's first failed read (the phase failed, or the server stopped): measure() rethrows it.
  const loop = (async () => {
    while (!stopped) {
      const size = await checkpointSize(baseUrl);
      seen.push([Date.now(), size]);
      await sleep(CHECKPOINT_POLL_MS);
    }
  })().then(
    () => null,
    (error: unknown) => error,
  );
  return {
    async measure() {
      // Every event of the phase logged and in a checkpoint the watcher read (bounded).
      const events = await pollUntil(
        "the phase's events in a signed checkpoint",
        async () => {
          const read = await eventsSince(baseUrl, token, contract, fromMs);
          const last = Math.max(...read.map((event) => event.logIndex ?? Number.POSITIVE_INFINITY));
          return Number.isFinite(last) && seen.length > 0 && seen.at(-1)![1] > last ? read : undefined;
        },
        CHECKPOINT_POLL_MS * 4,
        Date.now() + LOGGED_WAIT_MS,
      );
      stopped = true;
      const failed = await loop;
      if (failed !== null) throw failed;
      const lagsMs = events.map((event) => {
        const first = seen.find(([, size]) => size > event.logIndex!)!;
        return Math.max(0, first[0] - Date.parse(event.occurredAt));
      });
      return {
        p50Ms: quantile(lagsMs, 0.5),
        p99Ms: quantile(lagsMs, 0.99),
        maxMs: quantile(lagsMs, 1),
        events: lagsMs.length,
        checkpointReads: seen.length,
      };
    },
  };
}
