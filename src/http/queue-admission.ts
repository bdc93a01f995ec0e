import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { unavailable } from "../domain/errors.js";

/**
 * Admission by queueing time (CoDel-like), in front of Fastify.
 *
 * Under overload the queue is not in the handlers: it is in the sockets, which the event loop reads
 * in turns, each request served at once when its turn comes. 1,500 clients listing batches on
 * SQLite made turns of seconds (p99 6.2 s, zero 503): the mean event-loop delay that under-pressure
 * samples never saw it. A request's bytes have been waiting since the current turn began (a turn
 * ends at the check phase: setImmediate) or, on a connection answered during this turn, since that
 * answer: the later of the two is when it arrived at the latest, so it has waited at least `now`
 * minus that. Past the target it is answered 503 + Retry-After at once, before routing, hooks or
 * logging (a refusal must cost far less than a request, or refusing is the new overload): admitted
 * work per turn stays bounded, an admitted request waits about two turns at most, and the loop
 * gets back to the listening socket, health and readiness.
 *
 * A refusal is written when the turn ends, not at once. libuv's poll phase keeps polling while
 * every poll returns its full 1,024 events (up to 48 times), and a connection accepted meanwhile
 * is only watched for reads once the phase ends: with 1,500 clients that resend the moment they
 * are answered, a refusal answered at once makes its connection ready again within the phase, the
 * phase ran for ~10 s and a fresh connection's /readyz waited all of it (measured 8.3-10.4 s).
 * Held to the turn's end, a refused connection stays quiet for the rest of the phase, the phase
 * ends after one pass over the busy connections, and /readyz on a fresh one answers within about
 * two turns.
 *
 * The first request of a turn is always admitted (progress); operational routes (health,
 * readiness, metrics) are never refused. An idle process pays nothing: no timer runs.
 */

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** The answer to a request that queued too long; the catalogue's error, its body rendered once. */
const QUEUED_TOO_LONG = unavailable("the service is overloaded (requests are queueing), retry shortly", 1);
const QUEUED_TOO_LONG_BODY = JSON.stringify({ success: false, error: { code: QUEUED_TOO_LONG.code, message: QUEUED_TOO_LONG.message } });
const QUEUED_TOO_LONG_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "content-length": String(Buffer.byteLength(QUEUED_TOO_LONG_BODY)),
  "retry-after": String(QUEUED_TOO_LONG.retryAfterSeconds),
};

export interface QueueAdmissionOptions {
  maxQueueDelayMs: number;
  /** Whether a path (without its query) is an operational route, never refused. */
  isOperational(path: string): boolean;
  /** Called for each refusal (metrics). */
  onRefused(request: IncomingMessage): void;
}

/** Wraps the server's request listener with the admission; with a target of 0, returns it as is. */
export function admitByQueueTime(next: RequestListener, options: QueueAdmissionOptions): RequestListener {
  if (options.maxQueueDelayMs === 0) return next;
  let turnStartedMs: number | null = null;
  let refused: ServerResponse[] = [];
  const endTurn = () => {
    turnStartedMs = null;
    const answers = refused;
    refused = [];
    for (const response of answers) {
      if (!response.destroyed) response.writeHead(QUEUED_TOO_LONG.status, QUEUED_TOO_LONG_HEADERS).end(QUEUED_TOO_LONG_BODY);
    }
  };
  const answeredMs = new WeakMap<Socket, number>();
  return (request, response) => {
    const nowMs = performance.now();
    const socket = request.socket;
    response.once("finish", () => answeredMs.set(socket, performance.now()));
    if (turnStartedMs === null) {
      turnStartedMs = nowMs;
      setImmediate(endTurn);
      return next(request, response);
    }
    const arrivedMs = Math.max(turnStartedMs, answeredMs.get(socket) ?? 0);
    if (nowMs - arrivedMs <= options.maxQueueDelayMs || options.isOperational(pathOf(request.url))) return next(request, response);
    options.onRefused(request);
    refused.push(response);
  };
}

function pathOf(url: string | undefined): string {
  const text = url ?? "/";
  const query = text.indexOf("?");
  return query === -1 ? text : text.slice(0, query);
}
