import { parseArgs } from "node:util";
import { DEFAULT_WITNESS_STATE_FILE, witnessLog } from "./witness.js";

/**
 * `points-ledger-witness`, the command of the client package (packages/client): witnesses a
 * points-ledger transparency log as `points-ledger log verify` does, with none of the server's
 * dependencies, so an independent party installs it from the tarball alone (docs/transparency.md).
 */

const USAGE = `usage: points-ledger-witness --url <service> [--state <file>]
  checks the service's signed checkpoint with the key pinned in <file> (default ./${DEFAULT_WITNESS_STATE_FILE};
  the first run pins the served key), proves it extends the checkpoint saved there, and saves it;
  exit 1 on a rewritten or forked history (an epoch announced with the pinned key is followed)`;

async function main(argv: string[]): Promise<number> {
  let values: { url?: string; state?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: { url: { type: "string" }, state: { type: "string" }, help: { type: "boolean" } },
    }));
  } catch (error) {
    console.error(`points-ledger-witness: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const url = values.url ?? process.env.POINTS_LEDGER_URL;
  if (values.help || url === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  try {
    return await witnessLog(url, values.state ?? DEFAULT_WITNESS_STATE_FILE);
  } catch (error) {
    // The service unreachable, a state file that is not one: a line, not a trace (exit 2: not a verdict on the log).
    console.error(`points-ledger-witness: ${(error as Error).message}`);
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
