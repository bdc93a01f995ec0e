import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { PointsAdminClient } from "../client/admin.js";
import { PointsClient, PublicClient } from "../client/client.js";
import { LogVerificationError, verifyCheckpoint, type Checkpoint } from "../client/log.js";
import type { LedgerEvent } from "../client/types.js";
import { parseAddress } from "../domain/address.js";
import { formatSignerKey, generateSignerKey, parseSignerKey, verifierKey } from "../domain/signed-note.js";
import { UsageError } from "./commands.js";

/**
 * `points-ledger log …`: the transparency log from outside (docs/transparency.md). `verify` is a
 * witness: it pins the log's key the first time, and each run proves the new checkpoint extends
 * the one it saved last, then saves the new one; a rewritten or forked history fails it (exit 1).
 * `prove` checks one event's inclusion; `keygen` makes a LOG_SIGNING_KEY.
 */

export const LOG_USAGE = `  log verify [--url …] [--state <file>]    witness the transparency log: check the checkpoint's signature with the
                                          key pinned in <file> (default ./points-ledger-witness.json; the first
                                          run pins the served key), prove it extends the checkpoint saved there,
                                          save it; exit 1 on a rewritten or forked history
  log prove <eventId> [--contract <addr>] [--state <file>] [--url …]
                                          prove one event is in the log, its leaf recomputed from the Event JSON
                                          (contract: POINTS_LEDGER_TOKEN or POINTS_LEDGER_API_KEY; else ADMIN_TOKEN)
  log keygen [--origin <name>]            print a new LOG_SIGNING_KEY and its verifier key`;

const DEFAULT_URL = "http://127.0.0.1:8080";
const DEFAULT_STATE_FILE = "points-ledger-witness.json";
/** Pages of events `prove` reads to find the event by its id (1000 a page). */
const PROVE_MAX_PAGES = 1000;

/** What a witness keeps between runs. */
interface WitnessState {
  url: string;
  verifierKey: string;
  /** The last checkpoint it checked, as served (a signed note). */
  checkpoint: string | null;
  checkedAt: string | null;
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { url: { type: "string" }, state: { type: "string" }, contract: { type: "string" }, origin: { type: "string" } },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function readState(path: string): WitnessState | null {
  if (!existsSync(path)) return null;
  const state = JSON.parse(readFileSync(path, "utf8")) as Partial<WitnessState>;
  if (typeof state.verifierKey !== "string") throw new UsageError(`${path} is not a witness state file (no verifierKey)`);
  return { url: state.url ?? "", verifierKey: state.verifierKey, checkpoint: state.checkpoint ?? null, checkedAt: state.checkedAt ?? null };
}

/** Written whole to a temporary file, then renamed: a crash never leaves half a state. */
function saveState(path: string, state: WitnessState): void {
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 });
  renameSync(`${path}.tmp`, path);
}

function fail(message: string): number {
  console.error(`points-ledger log: ${message}`);
  return 1;
}

async function verify(url: string, statePath: string): Promise<number> {
  const client = new PublicClient({ baseUrl: url });
  const saved = readState(statePath);
  const key = saved?.verifierKey ?? (await client.log.key());
  if (saved === null) console.log(`pinned the log's key ${key} (in ${statePath}); later runs check against it, not the served one`);
  let newer: Checkpoint;
  try {
    newer = await client.log.checkpoint(key);
    if (saved?.checkpoint) {
      const older = verifyCheckpoint(saved.checkpoint, key);
      await client.log.verifyConsistency(older, newer);
      console.log(`ok: ${newer.origin} has ${newer.size} events and extends the saved checkpoint of ${older.size} events`);
    } else {
      console.log(`ok: ${newer.origin} has ${newer.size} events (first checkpoint saved)`);
    }
  } catch (error) {
    if (!(error instanceof LogVerificationError)) throw error;
    if (saved?.checkpoint) return followEpochs(client, url, statePath, saved, error);
    return fail(`VERIFICATION FAILED: ${error.message}. The saved checkpoint in ${statePath} is kept.`);
  }
  saveState(statePath, { url, verifierKey: key, checkpoint: newer.note, checkedAt: new Date().toISOString() });
  console.log(`${newer.size} ${newer.rootHash}`);
  return 0;
}

/**
 * The served log does not extend the saved checkpoint: it may have begun an epoch announced by the
 * pinned key (a restore, a key rotation; docs/transparency.md). If so, say what changed, pin the
 * new key and save the new checkpoint; if not, the history was rewritten and the witness fails.
 */
async function followEpochs(client: PublicClient, url: string, statePath: string, saved: WitnessState, failure: Error): Promise<number> {
  const older = verifyCheckpoint(saved.checkpoint!, saved.verifierKey);
  let followed;
  try {
    followed = await client.log.followEpochs(older, saved.verifierKey);
  } catch (error) {
    if (!(error instanceof LogVerificationError)) throw error;
    return fail(`VERIFICATION FAILED: ${failure.message} (and ${error.message}). The saved checkpoint in ${statePath} is kept.`);
  }
  let key = saved.verifierKey;
  for (const epoch of followed.epochs) {
    const rotated = epoch.verifierKey !== key;
    key = epoch.verifierKey;
    console.log(
      `NEW EPOCH: ${epoch.origin} follows ${epoch.follows} from its first ${epoch.forkSize} events (announced with the key you pinned${
        rotated ? `; it is signed by ${epoch.verifierKey} from now on` : ""
      })`,
    );
  }
  if (followed.eventsNotFollowed > 0) {
    console.log(
      `the checkpoint you saved had ${older.size} events: the last ${followed.eventsNotFollowed} are not in the new epoch (the database was restored from a copy older than them)`,
    );
  }
  const newer = followed.checkpoint;
  console.log(`ok: ${newer.origin} has ${newer.size} events and extends the announced fork`);
  saveState(statePath, { url, verifierKey: followed.verifierKey, checkpoint: newer.note, checkedAt: new Date().toISOString() });
  console.log(`${newer.size} ${newer.rootHash}`);
  return 0;
}

/** The event by its id, read from the contract's events (or the admin listing). */
async function findEvent(client: PointsClient | PointsAdminClient, eventId: string): Promise<LedgerEvent | null> {
  let after: string | undefined;
  for (let page = 0; page < PROVE_MAX_PAGES; page++) {
    const { events, cursor, hasMore } = await client.listEvents({ after, limit: 1000 });
    const found = events.find((event) => event.id === eventId);
    if (found) return found;
    if (!hasMore) return null;
    after = cursor;
  }
  return null;
}

function proverFor(url: string, contract: string | undefined): PointsClient | PointsAdminClient {
  if (contract !== undefined) {
    if (parseAddress(contract) === null) throw new UsageError(`--contract ${contract} is not a valid address`);
    const token = process.env.POINTS_LEDGER_TOKEN ?? "";
    const apiKey = process.env.POINTS_LEDGER_API_KEY ?? "";
    if (token !== "")
      return new PointsClient({
        baseUrl: url,
        contractAddress: contract,
        operator: { bearerToken: token, expiresAt: "9999-12-31T23:59:59.000Z" },
      });
    if (apiKey !== "") return new PointsClient({ baseUrl: url, contractAddress: contract, apiKey });
    throw new UsageError("set POINTS_LEDGER_TOKEN (points-ledger login) or POINTS_LEDGER_API_KEY to read the contract's events");
  }
  const adminToken = process.env.ADMIN_TOKEN ?? "";
  if (adminToken === "")
    throw new UsageError("give --contract <addr> (with POINTS_LEDGER_TOKEN or POINTS_LEDGER_API_KEY), or set ADMIN_TOKEN");
  return new PointsAdminClient({ baseUrl: url, adminToken });
}

async function prove(url: string, eventId: string | undefined, contract: string | undefined, statePath: string): Promise<number> {
  if (eventId === undefined) throw new UsageError("usage: log prove <eventId> [--contract <addr>]");
  const client = proverFor(url, contract);
  const saved = readState(statePath);
  const key = saved?.verifierKey ?? (await client.log.key());
  if (saved === null) console.log(`using the served key ${key} (no witness state in ${statePath} pins one)`);
  const event = await findEvent(client, eventId);
  if (event === null) return fail(`no event ${eventId} among the retained events`);
  try {
    const checkpoint = await client.log.checkpoint(key);
    const index = await client.log.verifyEvent(event, checkpoint);
    console.log(`ok: ${eventId} (${event.type}) is event ${index} of the ${checkpoint.size} in ${checkpoint.origin}'s signed checkpoint`);
    return 0;
  } catch (error) {
    if (error instanceof LogVerificationError) return fail(`VERIFICATION FAILED: ${error.message}`);
    throw error;
  }
}

function keygen(origin: string): number {
  const signer = parseSignerKey(generateSignerKey(origin));
  console.log(`LOG_SIGNING_KEY=${formatSignerKey(origin, signer.seed)}`);
  console.log(`# verifier key (public): ${verifierKey(signer)}`);
  return 0;
}

export async function logCommand(argv: string[]): Promise<number> {
  const { positionals, values } = parse(argv);
  const [sub, ...rest] = positionals;
  const url = values.url ?? process.env.POINTS_LEDGER_URL ?? DEFAULT_URL;
  const statePath = values.state ?? DEFAULT_STATE_FILE;
  if (sub === "verify" && rest.length === 0) return verify(url, statePath);
  if (sub === "prove" && rest.length <= 1) return prove(url, rest[0], values.contract, statePath);
  if (sub === "keygen" && rest.length === 0) return keygen(values.origin ?? process.env.LOG_ORIGIN ?? "localhost/points-ledger");
  throw new UsageError(`usage:\n${LOG_USAGE}`);
}
