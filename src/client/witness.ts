import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { PublicClient } from "./client.js";
import { LogVerificationError, verifyCheckpoint, type Checkpoint } from "./log.js";

/**
 * The transparency log's witness (docs/transparency.md), for Node.js: it pins the log's key the
 * first time, and each run proves the new checkpoint extends the one it saved last, then saves the
 * new one; a rewritten or forked history fails it (exit 1), and an epoch announced by the pinned
 * key (a restore, a key rotation) is followed with a clear message. `points-ledger log verify` and
 * the client package's own `points-ledger-witness` command both run this, so an independent party
 * needs none of the server's dependencies to witness.
 */

export const DEFAULT_WITNESS_STATE_FILE = "points-ledger-witness.json";

/** What a witness keeps between runs. */
export interface WitnessState {
  url: string;
  verifierKey: string;
  /** The last checkpoint it checked, as served (a signed note). */
  checkpoint: string | null;
  checkedAt: string | null;
}

/** Where the witness's messages go, and what names it in them (`points-ledger log`, `points-ledger-witness`). */
export interface WitnessOutput {
  name: string;
  log: (line: string) => void;
  error: (line: string) => void;
}

const consoleOutput = (name: string): WitnessOutput => ({ name, log: (line) => console.log(line), error: (line) => console.error(line) });

export function readWitnessState(path: string): WitnessState | null {
  if (!existsSync(path)) return null;
  const state = JSON.parse(readFileSync(path, "utf8")) as Partial<WitnessState>;
  if (typeof state.verifierKey !== "string") throw new Error(`${path} is not a witness state file (no verifierKey)`);
  return { url: state.url ?? "", verifierKey: state.verifierKey, checkpoint: state.checkpoint ?? null, checkedAt: state.checkedAt ?? null };
}

/** Written whole to a temporary file, then renamed: a crash never leaves half a state. */
function saveState(path: string, state: WitnessState): void {
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 });
  renameSync(`${path}.tmp`, path);
}

function fail(out: WitnessOutput, message: string): number {
  out.error(`${out.name}: ${message}`);
  return 1;
}

/** One witness run against the service at `url`, with its state in `statePath`; the exit code (0 ok, 1 verification failed). */
export async function witnessLog(
  url: string,
  statePath: string,
  out: WitnessOutput = consoleOutput("points-ledger-witness"),
): Promise<number> {
  const client = new PublicClient({ baseUrl: url });
  const saved = readWitnessState(statePath);
  const key = saved?.verifierKey ?? (await client.log.key());
  if (saved === null) out.log(`pinned the log's key ${key} (in ${statePath}); later runs check against it, not the served one`);
  let newer: Checkpoint;
  try {
    newer = await client.log.checkpoint(key);
    if (saved?.checkpoint) {
      const older = verifyCheckpoint(saved.checkpoint, key);
      await client.log.verifyConsistency(older, newer);
      out.log(`ok: ${newer.origin} has ${newer.size} events and extends the saved checkpoint of ${older.size} events`);
    } else {
      out.log(`ok: ${newer.origin} has ${newer.size} events (first checkpoint saved)`);
    }
  } catch (error) {
    if (!(error instanceof LogVerificationError)) throw error;
    if (saved?.checkpoint) return followEpochs(client, url, statePath, saved, error, out);
    return fail(out, `VERIFICATION FAILED: ${error.message}. The saved checkpoint in ${statePath} is kept.`);
  }
  saveState(statePath, { url, verifierKey: key, checkpoint: newer.note, checkedAt: new Date().toISOString() });
  out.log(`${newer.size} ${newer.rootHash}`);
  return 0;
}

/**
 * The served log does not extend the saved checkpoint: it may have begun an epoch announced by the
 * pinned key (a restore, a key rotation; docs/transparency.md). If so, say what changed, pin the
 * new key and save the new checkpoint; if not, the history was rewritten and the witness fails.
 */
async function followEpochs(
  client: PublicClient,
  url: string,
  statePath: string,
  saved: WitnessState,
  failure: Error,
  out: WitnessOutput,
): Promise<number> {
  const older = verifyCheckpoint(saved.checkpoint!, saved.verifierKey);
  let followed;
  try {
    followed = await client.log.followEpochs(older, saved.verifierKey);
  } catch (error) {
    if (!(error instanceof LogVerificationError)) throw error;
    return fail(out, `VERIFICATION FAILED: ${failure.message} (and ${error.message}). The saved checkpoint in ${statePath} is kept.`);
  }
  let key = saved.verifierKey;
  for (const epoch of followed.epochs) {
    const rotated = epoch.verifierKey !== key;
    key = epoch.verifierKey;
    out.log(
      `NEW EPOCH: ${epoch.origin} follows ${epoch.follows} from its first ${epoch.forkSize} events (announced with the key you pinned${
        rotated ? `; it is signed by ${epoch.verifierKey} from now on` : ""
      })`,
    );
  }
  if (followed.eventsNotFollowed > 0) {
    out.log(
      `the checkpoint you saved had ${older.size} events: the last ${followed.eventsNotFollowed} are not in the new epoch (the database was restored from a copy older than them)`,
    );
  }
  const newer = followed.checkpoint;
  out.log(`ok: ${newer.origin} has ${newer.size} events and extends the announced fork`);
  saveState(statePath, { url, verifierKey: followed.verifierKey, checkpoint: newer.note, checkedAt: new Date().toISOString() });
  out.log(`${newer.size} ${newer.rootHash}`);
  return 0;
}
