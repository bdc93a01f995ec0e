import { parentPort, workerData } from "node:worker_threads";
import { openProjectionConnection } from "../store/sqlite/projection-file.js";
import { toWireError, type SqliteOptions } from "../store/sqlite/db.js";
import { sqliteLeaderboardReads } from "../store/sqlite/leaderboards.js";
import { sqliteLedger } from "../store/sqlite/ledger.js";
import type { ProjectionCall } from "./sqlite-projection.js";
import { requestWindowBoardIn } from "./leaderboards.js";
import { buildWindowBoards, passProjection } from "./projection.js";

/**
 * The projection's writer thread (./sqlite-projection.ts): its own connection to the ledger with
 * the projection file attached, the only one that writes that file. Calls run one at a time, in
 * the order they came, each to completion (better-sqlite3 is synchronous).
 */
const { options } = workerData as { options: SqliteOptions };
const db = openProjectionConnection(options);
const database = sqliteLedger(() => db, "deferred");
const reads = sqliteLeaderboardReads(() => db);

async function answer(call: ProjectionCall): Promise<unknown> {
  switch (call.kind) {
    case "pass":
      return passProjection(database, call.cut);
    case "windows":
      return buildWindowBoards(database, call.limit);
    case "request":
      return requestWindowBoardIn(reads, call.request);
  }
}

parentPort!.on("message", async ({ id, call }: { id: number; call: ProjectionCall }) => {
  try {
    parentPort!.postMessage({ id, result: await answer(call) });
  } catch (error) {
    parentPort!.postMessage({ id, error: toWireError(error) });
  }
});
