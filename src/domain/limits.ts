/**
 * Limits of the service that are not settings: each named once, here (put a limit on
 * everything). Settings with their own bounds live in src/config.ts.
 */

/** Entries of `details` in a VALIDATION_FAILED answer; past it, one `(more)` entry says how many more were found. */
export const MAX_VALIDATION_DETAILS = 100;

/** Characters of a refused value quoted back in its message (src/domain/messages.ts); longer ones are cut. */
export const QUOTED_VALUE_MAX_LENGTH = 60;

/** Characters of a webhook endpoint's url. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

/**
 * Expired used-challenge nonces one purge deletes at most (one short statement). Issuing a
 * challenge stores nothing; a nonce row is written only by a solve attempt (AUTH_RATE_LIMIT_PER_MINUTE
 * per client) and lives until its challenge expires, so the purge job's run each minute keeps up.
 */
export const PURGE_USED_NONCES_LIMIT = 10_000;

/** Failed authentications (unknown token, wrong admin token) one client address may make per minute before 429. */
export const MAX_FAILED_AUTHENTICATIONS_PER_MINUTE = 30;

/** Path parameters longer than this are still routed (and then rejected as 400, not 404). */
export const MAX_PARAM_LENGTH = 512;

/** Characters of a request URL written to the log. */
export const LOGGED_URL_MAX_LENGTH = 200;

/** Webhook endpoints one contract may have (docs/api.md Webhooks); the next creation is 400. */
export const MAX_WEBHOOK_ENDPOINTS = 10;

/** FAILED deliveries one recover call queues again; a larger backlog takes another call (it answers how many). */
export const MAX_RECOVERED_DELIVERIES = 100_000;

/** `limit` of the cursor-paged listings (batches, events, transfers): 1 to this, 100 when absent. */
export const PAGE_LIMIT_MAX = 1000;
export const PAGE_LIMIT_DEFAULT = 100;

/**
 * Transfers a page of GET …/transfers (or a read of transfers.csv) examines at most when it has a
 * filter (toAddress, pointType, status); a page that reaches it returns the matches found so far,
 * possibly none, and a cursor where it stopped. There is no index on to_address (it would slow
 * every insert), so without this bound a rare recipient walks the whole contract: 240-380 ms for
 * 2,000,000 transfers on SQLite, which is synchronous, so every request of the process waits.
 * Measured (a script timing store.listTransfers, 2,000,000 transfers, a recipient in none,
 * this 2-core machine while other tests ran): SQLite, batches of 2,000: a page ≈ 10 ms at 20,000
 * (12 at 25,000, 30 at 50,000, 53 at 100,000); batches of one transfer, the costliest layout (a
 * batch row and a key lookup per transfer): 19 ms at 10,000, 40 at 20,000. PostgreSQL, off the
 * event loop: 40-90 ms and 110-180 ms at 20,000. A page that fills before the bound stops there
 * (≈ 1 ms). Walking 2,000,000 transfers thus takes 100 pages. pointType and status filter on the
 * batch but walk the same way (a rare status over 2,000,000 one-transfer batches: 1.1-1.4 s), so
 * the bound covers every filter.
 */
export const MAX_TRANSFERS_SCANNED_PER_PAGE = 20_000;

/** Characters of a listing cursor the service accepts (its own are far shorter). */
export const CURSOR_MAX_LENGTH = 128;

/**
 * Characters of a leaderboard cursor: it carries the board it pages (point type, window) and an
 * amount of up to 41 digits beside the address and rank, so its longest form (≈ 215) passes 128.
 */
export const BOARD_CURSOR_MAX_LENGTH = 256;

/** Transfers a batch may hold at most, whatever MAX_TRANSFERS_PER_BATCH says (the setting's bound). */
export const MAX_TRANSFERS_PER_BATCH_LIMIT = 10_000;

/** Longest finalize delay a setting may configure: one year. */
export const MAX_FINALIZE_SECONDS_LIMIT = 365 * 24 * 3600;

/**
 * Large streamed reads (tree dumps, transfers.csv, balances.csv) served at once by a process; the
 * next gets 503 + Retry-After. Each stream is cheap per chunk but endless: 16 tree dumps at once
 * (866 MB) took another tenant's submit p50 from 4 to 297 ms (issue 19). They are rare, so a few
 * at a time is enough for the operators and claim pages that need them.
 */
export const MAX_CONCURRENT_STREAMED_READS = 4;

/** Retry-After of a streamed read refused by MAX_CONCURRENT_STREAMED_READS: a dump takes seconds. */
export const STREAMED_READ_RETRY_AFTER_SECONDS = 5;

/**
 * An events cursor with nothing new after it is given back unchanged, so an idle stream's cursor
 * says nothing about other tenants' writes; once it is this old, the answer moves it to the head
 * of the log instead (a new cursor, its issue time sealed in it), so a quiet stream's cursor
 * never falls behind the retained events (EVENT_RETENTION_DAYS, at least a day).
 */
export const EVENT_CURSOR_REFRESH_MS = 3_600_000;

/** Event streams one process keeps open at once; past it, 503 (each costs a connection and a poll). */
export const MAX_EVENT_STREAMS = 100;
/**
 * Defaults of MAX_EVENT_STREAMS_PER_CONTRACT and MAX_EVENT_STREAMS_PER_TOKEN (src/config.ts): the
 * streams one contract, and one bearer token or API key, may hold open in a process. Below
 * MAX_EVENT_STREAMS, so one tenant cannot take every slot (its next is 429 with Retry-After).
 * A console tab holds one; a backend a few.
 */
export const DEFAULT_EVENT_STREAMS_PER_CONTRACT = 10;
export const DEFAULT_EVENT_STREAMS_PER_TOKEN = 5;

/**
 * WEBHOOK_CLAIM_LEASE_MS's default (src/config.ts), the one definition: how long a claimed delivery
 * is its sender's alone without a renewal. Short, because a live sender renews it every quarter of
 * it (src/outbox/delivery-job.ts): a killed sender's deliveries are sent again within about 4 s (issue 19:
 * 29 s with the former 30 s lease), while a renewal late by up to three of its intervals still keeps it.
 */
export const DEFAULT_WEBHOOK_CLAIM_LEASE_MS = 4000;

// --- Requests (src/http/app.ts) -----------------------------------------------------------------

/** How often Node checks the headers and request timeouts; bounds how late a slow client is cut off. */
export const TIMEOUT_CHECK_INTERVAL_MS = 500;
/**
 * Window over which the mean event-loop delay is taken for load shedding (MAX_EVENT_LOOP_DELAY_MS):
 * long enough that one stall (a GC, compiling schemas at start-up) does not shed, short enough to
 * react within a second.
 */
export const PRESSURE_SAMPLE_INTERVAL_MS = 1000;
/** Sample windows after ready() whose event-loop delay is the start-up's, not load's: not counted. */
export const STARTUP_SAMPLES_IGNORED = 2;

/** Characters of a `types` filter of the event listings (a comma-separated list of event types). */
export const EVENT_TYPES_MAX_LENGTH = 512;
/** Characters of a webhook endpoint's description. */
export const WEBHOOK_DESCRIPTION_MAX_LENGTH = 256;
/** `limit` of the webhook deliveries listing: 1 to this, DELIVERY_LIST_LIMIT_DEFAULT when absent. */
export const DELIVERY_LIST_LIMIT_MAX = 250;
export const DELIVERY_LIST_LIMIT_DEFAULT = 50;

// --- Snapshot builds (src/snapshots/snapshots.ts) -----------------------------------------------

/**
 * Snapshots built at once per process: a 1,000,000-address build takes ≈ 0.5 GB at its peak
 * (docs/payouts.md), so a second one waits (503 + Retry-After) instead of doubling that.
 */
export const MAX_SNAPSHOTS_BUILDING = 1;
/** Retry-After of a snapshot refused by MAX_SNAPSHOTS_BUILDING, or of one whose build was given up. */
export const SNAPSHOT_BUILDING_RETRY_AFTER_SECONDS = 10;
/** Chunk rows stored per transaction (≈ 1-2.5 MB): a build holds SQLite's write lock only that long at a time. */
export const SNAPSHOT_CHUNKS_PER_WRITE = 32;
/**
 * A build that has written nothing for this long is abandoned: the purge job (src/worker/purge.ts)
 * deletes its chunks. Every chunk write is a sign of life and they come a fraction of a second
 * apart (a 1,000,000-address build writes ≈ 3,000 chunks in under a minute), so only a build
 * whose process died, or stalled for an hour, meets it; an hour also covers clock skew between
 * instances. A build given up on can neither write nor publish again (the store refuses).
 */
export const SNAPSHOT_BUILD_ABANDONED_AFTER_MS = 3600_000;

// --- The purge job (src/worker/purge.ts) --------------------------------------------------------

/** How often the purge job runs: expired challenges and tokens, events and finished deliveries past their retention, abandoned snapshot builds. */
export const PURGE_INTERVAL_MS = 60_000;
/** Events one purge step deletes at most: a short transaction, so writers never wait long behind it. */
export const EVENT_PURGE_STEP = 1000;
/** Steps one run takes at most; what is left waits for the next run (the job never runs unbounded). */
export const EVENT_PURGE_MAX_STEPS = 100;
/** Finished webhook deliveries one purge step deletes at most (with their attempts): a short transaction. */
export const DELIVERY_PURGE_STEP = 1000;
/** Steps one run takes at most; the rest waits for the next run. */
export const DELIVERY_PURGE_MAX_STEPS = 100;
/** Snapshot chunks one purge step deletes at most (≈ 1-2.5 MB, as much as one write of a build: SNAPSHOT_CHUNKS_PER_WRITE). */
export const SNAPSHOT_PURGE_STEP = 32;
/** Steps one run takes at most: ≈ 3,200 chunks, about one 1,000,000-address build; the rest waits for the next run. */
export const SNAPSHOT_PURGE_MAX_STEPS = 100;

/** The window of every per-minute request budget (RATE_LIMIT_PER_MINUTE, AUTH_RATE_LIMIT_PER_MINUTE, PUBLIC_READ_…, MAX_FAILED_AUTHENTICATIONS_PER_MINUTE). */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Unrevoked API keys per contract; the next create is 400 (API.md, API keys). */
export const MAX_API_KEYS = 100;

/** An API key's name, in code points. */
export const API_KEY_NAME_MAX_LENGTH = 64;

/** How often a process writes the `lastUsedAt` of the keys it saw (API.md: it may lag by up to a minute). */
export const API_KEY_LAST_USED_FLUSH_MS = 60_000;

/** Sends in flight at once, all endpoints together. */
export const MAX_IN_FLIGHT_SENDS = 16;
/** Sends in flight to one endpoint at once: what one slow endpoint can take of MAX_IN_FLIGHT_SENDS. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 4;
/**
 * Sends in flight to one contract's endpoints at once (every instance's, counted by live leases):
 * a tenant whose endpoints all hang holds at most half of a job's slots, so the others' deliveries
 * still go out at once (issue 19: 10 hanging endpoints of one contract held all 16 for 15 s and more).
 */
export const MAX_IN_FLIGHT_PER_CONTRACT = 8;

/** docs/api.md Webhooks: an answer must come within 15 s. */
export const SEND_TIMEOUT_MS = 15_000;

/** The first timeout of an endpoint holds its deliveries back this long; each further one in a row doubles it. */
export const ENDPOINT_BACKOFF_BASE_MS = 1000;
/** The longest an endpoint that keeps timing out is held back between attempts. */
export const ENDPOINT_BACKOFF_MAX_MS = 60_000;

/**
 * Most batches one step of the history job adds, in one transaction. A step costs about what
 * finalizing its batches costs (SQLite, measured: 10–20 ms for a batch of 2000 transfers on a
 * board of 32k–1M addresses, holding the writer and the event loop), so steps start at one batch
 * and grow only while they stay under HISTORY_BACKFILL_STEP_TARGET_MS: many small batches go fast,
 * large ones one at a time.
 */
export const HISTORY_BACKFILL_MAX_STEP = 50;
/** The time one step should take; a step that took longer halves the next one. */
export const HISTORY_BACKFILL_STEP_TARGET_MS = 50;
/** Steps one run takes at most before it sleeps (runs resume where the last one stopped: the list shrinks). */
export const HISTORY_BACKFILL_MAX_STEPS = 100;
/**
 * The projection (domain/projection.ts, src/worker/projection.ts): batches one pass applies at
 * most (a pass writes each distinct recipient once, so larger passes write less per transfer,
 * but hold SQLite's writer and the event loop longer: steps are sized to
 * HISTORY_BACKFILL_STEP_TARGET_MS as the other bounded jobs'); how often the job looks at the
 * queue when it was empty; how long an idle ledger's `through` may stand still; and the share
 * of the time it takes beside a finalizer that is draining a backlog.
 */
export const PROJECTION_MAX_STEP = 128;
/** A job's first step, before it has measured one: steps grow from here while they stay quick. */
export const PROJECTION_FIRST_STEP = 4;
/**
 * The time one projection step should take (halved after a slower one, doubled after one under
 * three quarters of it): longer than the other jobs' (HISTORY_BACKFILL_STEP_TARGET_MS) because a
 * pass writes each recipient once whatever its batches, so its cost per transfer falls with its
 * size (store level, the bench's 32,000 recipients: 91,000 transfers/s in steps of 8 batches,
 * 239,000 in steps of 32, 357,000 in steps of 64). `npm run bench -- --short`, one run each:
 * 150 ms caught up at 110,637 transfers/s with a mixed-phase lag p99 of 2,047 ms; 300 ms at
 * 171,059/s and 940 ms. On SQLite the pass runs in the projection's thread and holds no event
 * loop; inline SQLite (tests, :memory:) holds the process that long (docs/performance.md).
 */
export const PROJECTION_STEP_TARGET_MS = 300;
/**
 * The same on PostgreSQL, where a pass holds no event loop (the process awaits it) but only the
 * applier's lock, which a read asking for a new window board waits for. A pass applies whole ties
 * of finalization times, a finalizer pass's batches each: at 300 ms one tie already overran it and
 * steps fell to one tie each, 25 batches with two processes, so the catch-up applied 99,410–101,759
 * transfers/s (1.1–1.3 × the drain); at 1,000 ms steps join ties: 170,171/s, 0.65 × the drain
 * (bench --short, 2 processes).
 */
export const PROJECTION_STEP_TARGET_MS_POSTGRES = 1_000;
/**
 * Between runs that found the queue empty (or, on PostgreSQL, another instance applying): a batch
 * waits at most this long, and a run gathers this long's batches into one pass. Measured (bench
 * --short, PostgreSQL, 2 processes): 250 ms gave a mixed-phase projection lag p99 of 1,145 ms,
 * 100 ms 873 ms; an idle service pays one small read per run.
 */
export const PROJECTION_INTERVAL_MS = 100;
export const PROJECTION_IDLE_ADVANCE_MS = 1_000;
/**
 * Beside a finalizer draining a backlog, the projection first steps aside for
 * PROJECTION_BACKLOG_GRACE_MS: a burst of batches due at once (a program's daily drop) drains at
 * the finalizer's full speed and the boards catch up right after it, since the projection applies
 * faster than the finalizer finalizes. Measured (bench --short, PostgreSQL, one process, quiet
 * machine): with a share from the drain's start the drain ran at 85,397–94,132 transfers/s (0.15)
 * and 100,050–102,751 (0.05) against 114,693–118,092 with the projection aside, whose catch-up
 * then took 5.6–5.8 s for drains of 7.8–8.5 s (0.68–0.74 ×). A longer backlog would otherwise
 * leave `through` standing still for all of it: past the grace the steps take at most
 * PROJECTION_BACKLOG_SHARE of the time (after a step of d ms the job waits d × (1 − share) /
 * share; on SQLite with the passes inline, catch-up 2.0 × the drain with no share, 1.4 × at 0.15).
 * Where the passes run on another thread (SQLite's, LeaderboardsStore.projectionAside) the job
 * neither waits nor shares: it runs beside the drain at full speed (catch-up 0.1–0.4 × the drain).
 */
export const PROJECTION_BACKLOG_GRACE_MS = 30_000;
export const PROJECTION_BACKLOG_SHARE = 0.15;
/** A batch due this long and still PENDING means the finalizers have a backlog (the projection defers to them). */
export const PROJECTION_BACKLOG_DUE_MS = 1_000;

/**
 * Window boards (src/store/ports/leaderboards.ts): how many a board keeps (a read of another
 * window drops the oldest asked), how often the window job looks for batches to add once none
 * was left (a window still open gains one with each finalization inside it), and how many
 * entries of a dropped one a step deletes per batch of its step size.
 */
export const WINDOW_BOARDS_PER_BOARD = 8;
export const WINDOW_BOARDS_INTERVAL_MS = 250;
export const WINDOW_DROP_ENTRIES_PER_BATCH = 2_000;

/**
 * How far in the past `asOf` must be: every write stamped at or before it has committed by then
 * (a request in flight carries the time it started), so a snapshot as of a time is the same
 * whenever it is taken.
 */
export const SNAPSHOT_AS_OF_MIN_AGE_MS = 60_000;

/** How long a client waits before asking again for a snapshot as of a time the projection has not reached (503). */
export const PROJECTION_BEHIND_RETRY_AFTER_SECONDS = 5;

/**
 * /metrics: a PENDING batch this long past its finalizeAt is overdue (points_batches_overdue);
 * the finalizer's target is 50 ms and a failed attempt is retried within seconds, so a minute
 * means no finalizer runs, or it cannot keep up. The count stops at the second bound (one bounded
 * range of the batches_due index per scrape, whatever the backlog).
 */
export const OVERDUE_BATCH_SECONDS = 60;
export const OVERDUE_BATCHES_COUNTED_MAX = 100_000;

/**
 * Admission per client address (src/http/queue-admission.ts). An address's first requests of an
 * event-loop turn are never refused for its share (CLIENT_TURN_BUDGET_MS), so a backend's few
 * concurrent requests are not refused for a slow disk (small PUTs whose SQLite commits each wait
 * for an fsync). Measured in test/overload-keepalive.test.ts: with 16, the crowd's 16 free
 * listings took 400 ms of each turn and another tenant's reads were refused 7 times in 10; with
 * none, 8 concurrent PUTs from one address met 429 now and then.
 */
export const CLIENT_TURN_FREE_REQUESTS = 4;

/**
 * How long a refusal for being past the client's share is held before it is written. A client
 * that ignores Retry-After and resends at once on a kept connection is back in the next turn: its
 * crowd is read, parsed and refused again every turn, and those refusals make the turns long for
 * everybody. Held, each of its connections sends at most one request per hold.
 */
export const CLIENT_REFUSAL_HOLD_MS = 500;

/**
 * A client address is held to its share of a turn only while the process serves somebody else
 * too: another address's request read within this long. Alone, a client may take every turn
 * (a points program's backend is often one address): `npm run bench`'s balance reads from one
 * address met 429 with the share applied unconditionally, on an otherwise idle process.
 */
export const CLIENT_CONTENTION_WINDOW_MS = 10_000;

/**
 * The budget of new leaderboard windows (src/http/window-budget.ts): the tokens a caller's and a
 * contract's buckets hold at most (their refill rates are settings: NEW_WINDOWS_PER_MINUTE_PER_*),
 * the boards (contract and point type) whose last asked windows it remembers, and the buckets it
 * keeps, per process.
 */
// As many as a board keeps: a person clicking through the console's windows is not refused.
export const NEW_WINDOWS_CALLER_BURST = WINDOW_BOARDS_PER_BOARD;
export const NEW_WINDOWS_CONTRACT_BURST = 20;
export const MAX_TRACKED_WINDOW_BOARDS = 10_000;
export const MAX_WINDOW_BUDGET_KEYS = 100_000;

/**
 * The transparency log's job (src/worker/tlog.ts): how often it looks for new events when idle,
 * and the most events one step (one transaction) logs. Steps are sized like the other bounded
 * jobs' (HISTORY_BACKFILL_STEP_TARGET_MS) up to LOG_MAX_STEP.
 */
export const LOG_INTERVAL_MS = 200;
/**
 * While the log grows, a run waits for the next checkpoint (LOG_CHECKPOINT_SECONDS after the last)
 * rather than the poll: events logged sooner are in no signed checkpoint sooner. At most this long,
 * so a long checkpoint interval still gives events their logIndex within a second. Measured
 * (docs/performance.md, session 18): five runs a second of steps from size 1 cost a PostgreSQL
 * drain on a slowed machine ≈ 9 % (log job off 52,067 finalized/s, on 47,653).
 */
export const LOG_BUSY_INTERVAL_MS = 1_000;
export const LOG_MAX_STEP = 4096;
/**
 * `points-ledger verify` fails when a committed event older than this has no logIndex: events are
 * logged about a second after their commit, so one a minute old means the log cannot advance (the
 * alert PointsLedgerTransparencyLogStalled watches the same age, points_log_lag_seconds).
 */
export const LOG_VERIFY_LAG_BOUND_SECONDS = 60;

/**
 * `points-ledger payout publish` (src/cli/payout-commands.ts): how long one JSON-RPC call may
 * take and how often a failed one is retried (viem's http transport), how long it waits for the
 * submitRoot transaction's receipt once sent (a few blocks on a busy chain), and the most bytes
 * of the owner's key file it reads (a 0x-prefixed key and a newline: anything far larger is not one).
 */
export const PAYOUT_RPC_TIMEOUT_MS = 10_000;
export const PAYOUT_RPC_RETRIES = 2;
export const PAYOUT_RECEIPT_TIMEOUT_MS = 180_000;
export const PAYOUT_KEY_FILE_MAX_BYTES = 256;

/**
 * Publishers (src/publishers/): the most events one step reads and publishes (one claim, one
 * batch of acknowledgements), how often an idle publisher looks for events of other instances
 * (its own process's commits wake it at once), the back-off while the broker fails (doubled
 * from the base, ±20 %), and the lease. A step's sending stops PUBLISH_STEP_TIMEOUT_MS after its
 * claim, well inside the lease (PUBLISHER_LEASE_MS, counted by the database's clock from the
 * claim): another instance takes a lease only once it ran out, so two publishers never send at
 * once; a holder that died (SIGKILL) is replaced within one lease.
 */
export const PUBLISH_MAX_STEP = 1000;
export const PUBLISH_POLL_INTERVAL_MS = 200;
export const PUBLISH_BACKOFF_BASE_MS = 500;
export const PUBLISH_BACKOFF_MAX_MS = 10_000;
export const PUBLISH_STEP_TIMEOUT_MS = 5_000;
export const PUBLISHER_LEASE_MS = 15_000;
/** How long a broker has to answer a connection (a start-up never waits longer for one). */
export const BROKER_CONNECT_TIMEOUT_MS = 3_000;
/** A broker's error text kept in the publisher's row and shown by GET /v1/admin/publishers. */
export const PUBLISHER_ERROR_MAX_CHARS = 300;

/**
 * The old-generation heap of a batch-intake worker thread (src/http/batch-intake.ts): a base for
 * the code and the compiled schema, and room for one body's parse tree, which holds at most
 * ~15 bytes of heap per byte of JSON (`[{},{},…]` and `[[],[],…]`, measured). V8 starts collecting
 * an isolate's old generation at about half its limit; left at the default (sized for the main
 * thread, gigabytes) each worker kept ~100 MB of dead parse trees, so three workers and four senders
 * of rejected 1 MB bodies took the process from 223 to 533 MB; with these, 225 → 333 MB, and
 * 408 MB at sixteen senders (issue 41, test/large-body-memory.test.ts). A tree outlives the
 * parse's scavenges whatever the young generation's size, so a small one only saves its space.
 */
export const INTAKE_WORKER_HEAP_BASE_MB = 32;
export const INTAKE_WORKER_HEAP_PER_BODY_MB = 24;
export const INTAKE_WORKER_YOUNG_GENERATION_MB = 8;
