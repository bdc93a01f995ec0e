#!/usr/bin/env node
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config.js";
import { ApiError } from "../domain/errors.js";
import { commands } from "./commands.js";
import { CLIENT_USAGE, clientCommands } from "./client-commands.js";
import { SNAPSHOT_USAGE, snapshotCommand } from "./snapshot-commands.js";

const USAGE = `points-ledger <command>

  serve                                   start the HTTP server and the background jobs (npm start)
  worker                                  run only the background jobs: finalize, deliver, purge
                                          (finalizer: the same, its former name)
  migrate                                 bring the database schema up to date
  operator set <contract> <operator>      register or change a contract's operator
  credit <address> <pointType> <points> [--id <creditId>] [--asset <ASSET>] [--block <n>]
                                          add points to an address's earnedCumulative
                                          (--asset/--block: what they were earned on, for byAsset)
  verify                                  check every ledger invariant; exit 1 on a violation
  demo                                    the whole flow on a temporary database
${SNAPSHOT_USAGE}

Configuration comes from the environment (see README: DATABASE_URL, PORT, ADMIN_TOKEN, …).
${CLIENT_USAGE}`;

async function main(argv: string[]): Promise<number> {
  // Operator commands parse their own options, so they get the raw arguments.
  const clientCommand = argv[0] === undefined ? undefined : clientCommands[argv[0]];
  if (clientCommand) return clientCommand(argv.slice(1));
  // The snapshot commands parse their own options too.
  if (argv[0] === "snapshot") return snapshotCommand(argv.slice(1), () => loadConfig(process.env));
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { id: { type: "string" }, asset: { type: "string" }, block: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const [name, ...rest] = positionals;
  const command = name === undefined ? undefined : commands[name];
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  return command(rest, values, () => loadConfig(process.env));
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError || (error instanceof Error && error.name === "UsageError")) {
      console.error(`points-ledger: ${error.message}`);
      process.exitCode = 2;
    } else if (error instanceof ApiError) {
      console.error(`points-ledger: ${error.message}: ${JSON.stringify(error.details)}`);
      process.exitCode = 2;
    } else {
      console.error("points-ledger:", error);
      process.exitCode = 1;
    }
  },
);
