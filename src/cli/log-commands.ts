import { parseArgs } from "node:util";
import { PointsAdminClient } from "../client/admin.js";
import { PointsClient } from "../client/client.js";
import { LogVerificationError } from "../client/log.js";
import { DEFAULT_WITNESS_STATE_FILE, readWitnessState, witnessLog } from "../client/witness.js";
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
/** Pages of events `prove` reads to find the event by its id (1000 a page). */
const PROVE_MAX_PAGES = 1000;

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

function fail(message: string): number {
  console.error(`points-ledger log: ${message}`);
  return 1;
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
  const saved = readWitnessState(statePath);
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
  const statePath = values.state ?? DEFAULT_WITNESS_STATE_FILE;
  if (sub === "verify" && rest.length === 0) {
    return witnessLog(url, statePath, {
      name: "points-ledger log",
      log: (line) => console.log(line),
      error: (line) => console.error(line),
    });
  }
  if (sub === "prove" && rest.length <= 1) return prove(url, rest[0], values.contract, statePath);
  if (sub === "keygen" && rest.length === 0) return keygen(values.origin ?? process.env.LOG_ORIGIN ?? "localhost/points-ledger");
  throw new UsageError(`usage:\n${LOG_USAGE}`);
}
