import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { parseArgs } from "node:util";
import type { Config } from "../config.js";
import { ID_PATTERN } from "../domain/batch.js";
import {
  SNAPSHOT_DECIMALS_DEFAULT,
  SNAPSHOT_DECIMALS_MAX,
  SNAPSHOT_DECIMALS_MIN,
  SNAPSHOT_MEASURES,
  asOfProblem,
  snapshotJson,
  type SnapshotMeasure,
} from "../domain/snapshot.js";
import { ADMIN_ACTOR } from "../domain/actors.js";
import { zonedTimeMs } from "../domain/times.js";
import { alreadyExistsMessage, emptySnapshotMessage, noSnapshotMessage, oneOfMessage } from "../domain/messages.js";
import { requireAddress } from "../domain/validate.js";
import { snapshotProof, takeSnapshot, treeDumpText } from "../snapshots/snapshots.js";
import { openStore } from "../ledger/open.js";
import { assertPointTypesConfigured } from "../store/point-types.js";
import type { LedgerStore } from "../store/store.js";
import { UsageError } from "./commands.js";

/**
 * `points-ledger snapshot take|show|proof|export`: the administrator's snapshot commands. They
 * work on the database directly (DATABASE_URL), like `credit`, with the same code the admin API
 * runs, so a payout can be prepared without a running server or an admin token.
 */
export const SNAPSHOT_USAGE = `  snapshot take <snapshotId> --point-type <T> [--measure available|receivedCumulative] [--decimals 12-36] [--as-of <ISO time>]
                                          freeze every balance of T (as it stood at --as-of, at least 60 s ago) into a
                                          Merkle snapshot; prints it (root, leafCount, total)
  snapshot show <snapshotId>              the stored snapshot
  snapshot proof <snapshotId> <address>   the address's amount and Merkle proof
  snapshot export <snapshotId> [--out <file>]
                                          the tree as @openzeppelin/merkle-tree's standard-v1 JSON (stdout without --out)`;

async function withStore<T>(config: Config, use: (store: LedgerStore) => Promise<T>): Promise<T> {
  const store = await openStore(config);
  try {
    await store.migrate();
    await assertPointTypesConfigured(store, config.pointTypes);
    return await use(store);
  } finally {
    await store.close();
  }
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        "point-type": { type: "string" },
        measure: { type: "string" },
        decimals: { type: "string" },
        "as-of": { type: "string" },
        out: { type: "string" },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function snapshotIdOf(value: string | undefined): string {
  if (value === undefined || !new RegExp(ID_PATTERN).test(value)) throw new UsageError(`<snapshotId> must match ${ID_PATTERN}`);
  return value;
}

function takeOptions(
  values: ReturnType<typeof parse>["values"],
  config: Config,
): { pointType: string; measure: SnapshotMeasure; decimals: number; asOfMs: number | null } {
  const pointType = values["point-type"];
  if (pointType === undefined || !config.pointTypes.includes(pointType))
    throw new UsageError(`--point-type ${oneOfMessage(config.pointTypes)} (POINT_TYPES)`);
  const measure = (values.measure ?? "available") as SnapshotMeasure;
  if (!SNAPSHOT_MEASURES.includes(measure)) throw new UsageError(`--measure ${oneOfMessage(SNAPSHOT_MEASURES)}`);
  const decimals = values.decimals === undefined ? SNAPSHOT_DECIMALS_DEFAULT : Number(values.decimals);
  if (!Number.isInteger(decimals) || decimals < SNAPSHOT_DECIMALS_MIN || decimals > SNAPSHOT_DECIMALS_MAX) {
    throw new UsageError(`--decimals must be a whole number from ${SNAPSHOT_DECIMALS_MIN} to ${SNAPSHOT_DECIMALS_MAX}`);
  }
  return { pointType, measure, decimals: decimals, asOfMs: asOfOption(values["as-of"]) };
}

/** --as-of: the same rule as the API's `asOf` (a time with its zone, at least 60 s in the past). */
function asOfOption(value: string | undefined): number | null {
  if (value === undefined) return null;
  const asOfMs = zonedTimeMs(value);
  if (asOfMs === null) throw new UsageError(`--as-of must be an ISO 8601 time with a zone, e.g. 2026-11-22T00:00:00Z`);
  const problem = asOfProblem(asOfMs, Date.now());
  if (problem !== null) throw new UsageError(`--as-of ${problem}`);
  return asOfMs;
}

export async function snapshotCommand(argv: string[], config: () => Config): Promise<number> {
  const { positionals, values } = parse(argv);
  const [action, id, address] = positionals;
  const settings = config();
  switch (action) {
    case "take": {
      const request = { id: snapshotIdOf(id), ...takeOptions(values, settings) };
      return withStore(settings, async (store) => {
        const result = await takeSnapshot(store, request, Date.now, ADMIN_ACTOR);
        if (result.kind === "empty") {
          console.error(emptySnapshotMessage(request.measure, request.pointType));
          return 1;
        }
        if (result.kind === "exists")
          console.error(`${alreadyExistsMessage("snapshot", request.id)} (matches this request: ${result.matchesRequest})`);
        console.log(JSON.stringify(snapshotJson(result.snapshot), null, 2));
        return result.kind === "created" || result.matchesRequest ? 0 : 1;
      });
    }
    case "show":
    case "proof":
    case "export":
      return withStore(settings, (store) => read(store, action, snapshotIdOf(id), address, values.out));
    default:
      throw new UsageError(`usage:\n${SNAPSHOT_USAGE}`);
  }
}

async function read(
  store: LedgerStore,
  action: "show" | "proof" | "export",
  id: string,
  address: string | undefined,
  out: string | undefined,
): Promise<number> {
  const snapshot = await store.getSnapshot(id);
  if (snapshot === null) {
    console.error(noSnapshotMessage(id));
    return 1;
  }
  if (action === "show") {
    console.log(JSON.stringify(snapshotJson(snapshot), null, 2));
    return 0;
  }
  if (action === "proof") {
    if (address === undefined) throw new UsageError("usage: snapshot proof <snapshotId> <address>");
    const proof = await snapshotProof(store, snapshot, requireAddress(address, "address"));
    if (proof === null) {
      console.error(`${address} is not in snapshot ${id}`);
      return 1;
    }
    console.log(JSON.stringify(proof, null, 2));
    return 0;
  }
  const sink = out === undefined ? process.stdout : createWriteStream(out);
  for await (const text of treeDumpText(store, id)) {
    // Backpressure: a slow pipe or disk holds the next read, so memory stays a few chunks.
    if (!sink.write(text)) await once(sink, "drain");
  }
  if (sink !== process.stdout)
    await new Promise<void>((resolve, reject) => sink.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return 0;
}
