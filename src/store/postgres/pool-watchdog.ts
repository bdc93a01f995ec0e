import pg from "pg";
import type { Socket } from "node:net";

/**
 * A vanished database host (it died, or a partition drops every packet: no reset comes) leaves a
 * query waiting for an answer that never comes. TCP notices only after minutes, and the query's
 * own client-side bound (db.ts query_timeout) must outlast the longest statement the server may
 * legitimately run (statement_timeout, 10 s by default), so neither bounds it to seconds.
 *
 * What tells a slow statement from a dead host is whether the server still answers a new
 * connection. So: a pooled connection checked out for SUSPECT_AFTER_MS without coming back makes
 * the watchdog open one fresh connection and run SELECT 1. An answer of any kind from PostgreSQL
 * (a result, or an error such as "starting up") means the host is there: the long statement goes
 * on, and no other probe runs for SUSPECT_AFTER_MS. No answer within PROBE_TIMEOUT_MS (a timeout,
 * a refused or unreachable address) means the host is gone: every connection that was a suspect
 * is destroyed, its query fails as unavailable (503 + Retry-After) and pg-pool discards it.
 * A request thus waits at most SUSPECT_AFTER_MS + WATCH_INTERVAL_MS + PROBE_TIMEOUT_MS (3.5 s)
 * for a vanished host; one that needs a new connection meanwhile waits the pool's connect bound (2 s).
 */

/** A checked-out connection not back after this is a suspect: far above the service's statements (a few ms), yet short of the 5 s a request may lose. */
const SUSPECT_AFTER_MS = 1000;
/** The fresh connection's bound to connect and answer SELECT 1: an idle server does both in a few ms, a loaded one well under a second. */
const PROBE_TIMEOUT_MS = 2000;
/** The probe's deadline advances in steps of this (serverAnswers). */
const DEADLINE_TICK_MS = 100;
/** How often the checked-out connections are looked at. */
const WATCH_INTERVAL_MS = 500;

/** The errors the watchdog destroyed connections with (db.ts counts them as the "vanished" kind). */
const vanishedHostErrors = new WeakSet<Error>();

export function isVanishedHostError(error: unknown): boolean {
  return error instanceof Error && vanishedHostErrors.has(error);
}

/**
 * Whether PostgreSQL answered a fresh connection at all, even with an error, within
 * PROBE_TIMEOUT_MS of the event loop's free time: a loop blocked by this process's own work
 * delays the answer's reading, not the server, and must not make a live server look vanished.
 */
function serverAnswers(config: pg.ClientConfig): Promise<boolean> {
  const probe = new pg.Client({ ...config, connectionTimeoutMillis: 0, query_timeout: 0 });
  // A failure after the answer (the probe's own connection dropping) must not crash the process.
  probe.on("error", () => undefined);
  const answer = (async () => {
    try {
      await probe.connect();
      await probe.query("SELECT 1");
      return true;
    } catch (error) {
      // An SQLSTATE is an answer from the server (too many connections, starting up, auth): it is there.
      const code = (error as { code?: unknown }).code;
      return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code);
    }
  })();
  return new Promise<boolean>((resolve) => {
    let waitedMs = 0;
    let lastMs = performance.now();
    const tick = setInterval(() => {
      const nowMs = performance.now();
      // A tick far later than due means the loop was blocked: that stretch counts as one tick's worth.
      waitedMs += Math.min(nowMs - lastMs, 2 * DEADLINE_TICK_MS);
      lastMs = nowMs;
      if (waitedMs < PROBE_TIMEOUT_MS) return;
      clearInterval(tick);
      cut(probe, new Error("the watchdog's probe got no answer"));
      resolve(false);
    }, DEADLINE_TICK_MS);
    void answer.then((answered) => {
      clearInterval(tick);
      resolve(answered);
      void probe.end().catch(() => undefined);
    });
  });
}

/** pg keeps the socket on client.connection.stream (not in its types): destroying it fails the query in flight at once. */
function cut(client: pg.ClientBase, error: Error): void {
  (client as unknown as { connection: { stream: Socket } }).connection.stream.destroy(error);
}

/** Watches `pool`'s checked-out connections until the pool ends; `config` is how it connects. */
export function watchForVanishedHost(pool: pg.Pool, config: pg.ClientConfig): void {
  const checkedOutAtMs = new Map<pg.PoolClient, number>();
  pool.on("acquire", (client) => checkedOutAtMs.set(client, Date.now()));
  pool.on("release", (_error: Error | undefined, client: pg.PoolClient) => checkedOutAtMs.delete(client));
  pool.on("remove", (client) => checkedOutAtMs.delete(client as pg.PoolClient));
  let probing = false;
  /** When the last probe that found the server started: connections out since before it are not suspects again until SUSPECT_AFTER_MS after it. */
  let clearedAtMs = 0;
  const timer = setInterval(() => {
    if (pool.ending) {
      clearInterval(timer);
      return;
    }
    const nowMs = Date.now();
    const suspects = [...checkedOutAtMs]
      .filter(([, sinceMs]) => nowMs - Math.max(sinceMs, clearedAtMs) >= SUSPECT_AFTER_MS)
      .map(([client]) => client);
    if (probing || suspects.length === 0) return;
    probing = true;
    void serverAnswers(config)
      .then((answered) => {
        if (answered) {
          clearedAtMs = nowMs;
          return;
        }
        const error = Object.assign(
          new Error(`the database host stopped answering (a new connection got no answer within ${PROBE_TIMEOUT_MS} ms)`),
          { code: "ETIMEDOUT" },
        );
        vanishedHostErrors.add(error);
        for (const client of suspects) if (checkedOutAtMs.has(client)) cut(client, error);
      })
      .finally(() => {
        probing = false;
      });
  }, WATCH_INTERVAL_MS);
  timer.unref();
}
