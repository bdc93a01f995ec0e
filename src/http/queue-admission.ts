import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { rateLimited, unavailable, type ApiError } from "../domain/errors.js";
import { CLIENT_CONTENTION_WINDOW_MS, CLIENT_REFUSAL_HOLD_MS, CLIENT_TURN_FREE_REQUESTS } from "../domain/limits.js";

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
 *
 * Each client address also gets a share, so one crowd cannot take the turn from everybody else
 * (issue 30): 1,500 keep-alive clients from one address, each resending the moment it is answered
 * and ignoring Retry-After, are all back in the next turn; the queueing rule let their first
 * requests take each turn's whole 300 ms, and another tenant's request, read later in the turn,
 * was refused every time (0 of 6 served, a refusal after 2.5 s). Now, within a turn, while another
 * address has been read within CLIENT_CONTENTION_WINDOW_MS (a client alone may take every turn), an
 * address whose admitted requests have taken `clientTurnBudgetMs` of it gets 429 + Retry-After for its
 * further requests of that turn (its first CLIENT_TURN_FREE_REQUESTS of a turn are admitted; its
 * requests in flight across turns, waiting on PostgreSQL or the intake threads, are bounded by
 * MAX_IN_FLIGHT_PER_CLIENT in src/http/app.ts). A request's work is what runs between its
 * admission and the next request read in the turn, when it was answered meanwhile: with a
 * synchronous store, its handler, answer included (see Turn.charge).
 */

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** An answer given before Fastify sees the request: the catalogue's error, its body rendered once. */
interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function refusal(error: ApiError): Refusal {
  const body = JSON.stringify({ success: false, error: { code: error.code, message: error.message } });
  return {
    status: error.status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(body)),
      "retry-after": String(error.retryAfterSeconds ?? 1),
    },
    body,
  };
}

/** The answer to a request that queued too long. */
const QUEUED_TOO_LONG = refusal(unavailable("the service is overloaded (requests are queueing), retry shortly", 1));
/** The answer to a request from an address past its share of the turn. */
const OVER_CLIENT_SHARE = refusal(rateLimited(1, "too many requests from this client address, retry shortly"));

export interface QueueAdmissionOptions {
  /** MAX_QUEUE_DELAY_MS: 0 turns the queueing rule off. */
  maxQueueDelayMs: number;
  /** CLIENT_TURN_BUDGET_MS: admitted work one client address may take of a turn; 0 turns it off. */
  clientTurnBudgetMs: number;
  /** The client's address (as Fastify's request.ip: behind TRUST_PROXY, the forwarded one). */
  clientAddress(request: IncomingMessage): string;
  /** Whether a path (without its query) is an operational route, never refused. */
  isOperational(path: string): boolean;
  /** Called for each refusal (metrics). */
  onRefused(request: IncomingMessage, status: number): void;
}

/** Wraps the server's request listener with the admission. */
export function admitByQueueTime(next: RequestListener, options: QueueAdmissionOptions): RequestListener {
  if (options.maxQueueDelayMs === 0 && options.clientTurnBudgetMs === 0) return next;
  const turn = new Turn(options.clientTurnBudgetMs);
  const answeredMs = new WeakMap<Socket, number>();
  const admit = (request: IncomingMessage, response: ServerResponse, client: string): void => {
    turn.admitted(client, response);
    next(request, response);
  };
  return (request, response) => {
    const socket = request.socket;
    response.once("finish", () => answeredMs.set(socket, performance.now()));
    if (options.isOperational(pathOf(request.url))) return next(request, response);
    const nowMs = turn.read();
    const client = options.clientAddress(request);
    if (turn.overBudget(client, nowMs)) {
      options.onRefused(request, OVER_CLIENT_SHARE.status);
      return turn.refuse(response, OVER_CLIENT_SHARE);
    }
    const arrivedMs = Math.max(turn.startedMs, answeredMs.get(socket) ?? 0);
    if (options.maxQueueDelayMs === 0 || turn.isFirst || nowMs - arrivedMs <= options.maxQueueDelayMs)
      return admit(request, response, client);
    options.onRefused(request, QUEUED_TOO_LONG.status);
    turn.refuse(response, QUEUED_TOO_LONG);
  };
}

/**
 * One event-loop turn as the admission sees it: when its first request was read, each client
 * address's admitted work so far, and the refusals to write when it ends (setImmediate).
 */
class Turn {
  startedMs = 0;
  isFirst = true;
  private active = false;
  private readonly workMs = new Map<string, number>();
  private readonly reads = new Map<string, number>();
  /** The last admitted request's address, answer and when it was admitted: its work runs until the next read. */
  private running: { client: string; response: ServerResponse; sinceMs: number } | null = null;
  private refused: { response: ServerResponse; answer: Refusal }[] = [];
  /** The latest address read and the latest other one, and when: a share applies only while another address is being served too. */
  private latestClient: string | null = null;
  private otherClient: string | null = null;
  private otherAtMs = 0;
  private latestAtMs = 0;

  constructor(private readonly budgetMs: number) {}

  /** A request was read now: starts a turn if none is going on, and charges the work since the last admission. */
  read(): number {
    const nowMs = performance.now();
    this.isFirst = !this.active;
    if (!this.active) {
      this.active = true;
      this.startedMs = nowMs;
      setImmediate(() => this.end());
    }
    this.charge(nowMs);
    return nowMs;
  }

  /**
   * Counts a request of `client` read in this turn; whether the address is past its share of the
   * turn while another address was read within CLIENT_CONTENTION_WINDOW_MS (alone, it may take all).
   */
  overBudget(client: string, nowMs: number): boolean {
    const reads = (this.reads.get(client) ?? 0) + 1;
    this.reads.set(client, reads);
    const contended = this.sawOther(client, nowMs);
    return this.budgetMs > 0 && contended && reads > CLIENT_TURN_FREE_REQUESTS && (this.workMs.get(client) ?? 0) >= this.budgetMs;
  }

  /** Whether an address other than `client` was read within CLIENT_CONTENTION_WINDOW_MS; remembers `client` as read now. */
  private sawOther(client: string, nowMs: number): boolean {
    // No allocation per request: the latest address read, and the latest one before it that differed.
    if (this.latestClient !== null && this.latestClient !== client) {
      this.otherClient = this.latestClient;
      this.otherAtMs = this.latestAtMs;
    }
    this.latestClient = client;
    this.latestAtMs = nowMs;
    return this.otherClient !== null && this.otherClient !== client && nowMs - this.otherAtMs <= CLIENT_CONTENTION_WINDOW_MS;
  }

  admitted(client: string, response: ServerResponse): void {
    this.running = { client, response, sinceMs: performance.now() };
  }

  refuse(response: ServerResponse, answer: Refusal): void {
    this.refused.push({ response, answer });
  }

  /**
   * Charges the time since the last admission to its address if its answer was given meanwhile:
   * then that time was its handler's. An answer still to come (a body to read, PostgreSQL, the
   * intake threads) spans turns, and what ran meanwhile was others' work: a backend's 8 concurrent
   * PUTs were charged for the writes of their predecessors and refused.
   */
  private charge(nowMs: number): void {
    if (this.running === null) return;
    const { client, response, sinceMs } = this.running;
    if (response.writableEnded) this.workMs.set(client, (this.workMs.get(client) ?? 0) + (nowMs - sinceMs));
    this.running = null;
  }

  private end(): void {
    this.active = false;
    this.running = null;
    this.workMs.clear();
    this.reads.clear();
    const answers = this.refused;
    this.refused = [];
    const held = answers.filter(({ answer }) => answer === OVER_CLIENT_SHARE);
    writeRefusals(answers.filter(({ answer }) => answer !== OVER_CLIENT_SHARE));
    if (held.length > 0) setTimeout(() => writeRefusals(held), CLIENT_REFUSAL_HOLD_MS);
  }
}

function writeRefusals(answers: readonly { response: ServerResponse; answer: Refusal }[]): void {
  for (const { response, answer } of answers) {
    if (!response.destroyed) response.writeHead(answer.status, answer.headers).end(answer.body);
  }
}

function pathOf(url: string | undefined): string {
  const text = url ?? "/";
  const query = text.indexOf("?");
  return query === -1 ? text : text.slice(0, query);
}
