import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { ProjectionCut, ProjectionStep, WindowBoardRequest } from "../store/ports/leaderboards.js";
import { StoreUnavailableError } from "../store/errors.js";
import { fromWireError, toStoreError, type SqliteOptions, type WireError } from "../store/sqlite/db.js";
import type { ProjectionConnection, SqliteProjection } from "../store/sqlite/index.js";
import { sqliteLedger } from "../store/sqlite/ledger.js";
import { buildWindowBoards, passProjection } from "./projection.js";

/**
 * Where SQLite runs the projection's writes (docs/performance.md "The projection's own file"):
 * the projection file (src/store/sqlite/projection-file.ts) is written by a worker thread with a
 * connection of its own, so a pass takes the second core and never holds the event loop the
 * ledger's writer and the requests share. The ledger's writer only cuts (src/ledger/projection.ts
 * cutProjection: the fence raised, committed) and then hands the cut over; the thread's snapshot
 * of the ledger begins after that commit, so it sees every batch the cut covers. A window board's
 * request after a read goes to the thread as well (the read itself stays on the main thread's
 * projection connection, read-only). An in-memory database (one connection) and a run from the
 * TypeScript sources (no compiled worker file, as under the test runner) run the same flows inline
 * on the main thread's projection connection instead.
 */
const WORKER_URL = new URL("./sqlite-projection-worker.js", import.meta.url);

/** One call to the thread (./sqlite-projection-worker.ts). */
export type ProjectionCall =
  { kind: "pass"; cut: ProjectionCut } | { kind: "windows"; limit: number } | { kind: "request"; request: WindowBoardRequest };

export function sqliteProjection(options: SqliteOptions, connection: ProjectionConnection): SqliteProjection {
  if (options.path === ":memory:" || !existsSync(fileURLToPath(WORKER_URL))) return inlineProjection(connection);
  const thread = new ProjectionThread(options);
  const sent = new Set<Promise<void>>();
  return {
    connection,
    aside: true,
    runner: {
      pass: async (cut) => (await thread.call({ kind: "pass", cut })) as ProjectionStep,
      buildWindowBoards: async (limit) => (await thread.call({ kind: "windows", limit })) as number,
    },
    requests: {
      // Sent to the thread from inside the read's flow (synchronous), answered by requestsSent.
      // The thread's request caps as well.
      requestWindowBoard: (_db, request) => {
        const answered = thread.call({ kind: "request", request }).then(() => undefined);
        sent.add(answered);
        void answered.catch(() => undefined).finally(() => sent.delete(answered));
      },
      capWindowBoards: () => undefined,
    },
    requestsSent: () => requestsAnswered(sent),
    close: async () => {
      await thread.close();
      connection.close();
    },
  };
}

/**
 * A read that asked for a window board answers once the thread has taken the request, as inline
 * (where the request is the read's own second transaction): one behaviour, so the next read or
 * the window job finds it listed. As there, a request the database cannot take now (busy, full,
 * read-only) is dropped, the read's answer being exact without it; anything else fails the read.
 */
async function requestsAnswered(sent: ReadonlySet<Promise<void>>): Promise<void> {
  for (const outcome of await Promise.allSettled([...sent])) {
    if (outcome.status === "rejected" && !(toStoreError(outcome.reason) instanceof StoreUnavailableError)) throw outcome.reason;
  }
}

function inlineProjection(connection: ProjectionConnection): SqliteProjection {
  const database = sqliteLedger(connection, "deferred");
  return {
    connection,
    aside: false,
    runner: {
      pass: async (cut) => passProjection(database, cut),
      buildWindowBoards: async (limit) => buildWindowBoards(database, limit),
    },
    close: async () => connection.close(),
  };
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * The worker thread, started at its first call and again after it died (its calls then fail
 * with the reason; the projection job retries at its next run). Referenced only while a call is
 * pending, so it never keeps a process alive that has nothing else to do.
 */
class ProjectionThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;

  constructor(private readonly options: SqliteOptions) {}

  call(call: ProjectionCall): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("the projection's thread is closed"));
    const worker = this.worker ?? this.spawn();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, call });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_URL, { workerData: { options: this.options } });
    this.worker = worker;
    worker.on("message", ({ id, result, error }: { id: number; result?: unknown; error?: WireError }) => {
      const pending = this.pending.get(id);
      this.pending.delete(id);
      if (this.pending.size === 0) worker.unref();
      if (error) pending?.reject(fromWireError(error));
      else pending?.resolve(result);
    });
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the projection's thread exited with code ${code}`)));
    return worker;
  }
}
