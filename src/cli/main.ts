#!/usr/bin/env node
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config.js";
import { ApiError } from "../domain/errors.js";
import { commands, UsageError } from "./commands.js";
import { CLIENT_USAGE, clientCommands } from "./client-commands.js";
import { readableDetails, usageOf } from "./report.js";
import { OPS_USAGE, opsCommands } from "./ops-commands.js";
import { SNAPSHOT_USAGE, snapshotCommand } from "./snapshot-commands.js";
import { LOG_USAGE, logCommand } from "./log-commands.js";
import { LOG_EPOCH_USAGE, logEpochCommand } from "./log-epoch-commands.js";
import { PAYOUT_USAGE, payoutCommand } from "./payout-commands.js";
import { startupProblem } from "./startup-errors.js";

const USAGE = `points-ledger <command>

  serve                                   start the HTTP server and the background jobs (npm start)
  worker                                  run only the background jobs: finalize, deliver, purge
                                          (finalizer: the same, its former name)
  operator set <contract> <operator>      register or change a contract's operator
  credit <address> <pointType> <points> [--id <creditId>] [--asset <ASSET>] [--block <n>]
                                          add points to an address's earnedCumulative
                                          (--asset/--block: what they were earned on, for byAsset)
  verify                                  check every ledger invariant, and that the transparency log
                                          has logged every event older than a minute; exit 1 on a violation
  demo                                    the whole flow on a temporary database
${OPS_USAGE}
${SNAPSHOT_USAGE}
${PAYOUT_USAGE}
${LOG_USAGE}
${LOG_EPOCH_USAGE}

Configuration comes from the environment (see README: DATABASE_URL, PORT, ADMIN_TOKEN, …).
${CLIENT_USAGE}`;

function parseTopLevel(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { id: { type: "string" }, asset: { type: "string" }, block: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** DATABASE_URL once the configuration loaded, so a failure can name the database (startup-errors.ts). */
let loadedDatabaseUrl: string | null = null;

function config() {
  const settings = loadConfig(process.env);
  loadedDatabaseUrl = settings.databaseUrl;
  return settings;
}

async function main(argv: string[]): Promise<number> {
  // Operator commands parse their own options, so they get the raw arguments.
  const clientCommand = argv[0] === undefined ? undefined : clientCommands[argv[0]];
  if (clientCommand) return clientCommand(argv.slice(1));
  // The snapshot, migrate and backup commands parse their own options too.
  if (argv[0] === "snapshot") return snapshotCommand(argv.slice(1), config);
  if (argv[0] === "log" && (argv[1] === "new-epoch" || argv[1] === "rotate-key")) return logEpochCommand(argv.slice(1), config);
  if (argv[0] === "log") return logCommand(argv.slice(1));
  if (argv[0] === "payout") return payoutCommand(argv.slice(1), config);
  const opsCommand = argv[0] === undefined ? undefined : opsCommands[argv[0]];
  if (opsCommand) return opsCommand(argv.slice(1), config);
  const { positionals, values } = parseTopLevel(argv);
  const [name, ...rest] = positionals;
  const command = name === undefined ? undefined : commands[name];
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  return command(rest, values, config);
}

/** Every failure ends with a readable line and an exit code, never a stack trace (except a real bug's). */
function report(error: unknown, command: string | undefined): number {
  if (error instanceof UsageError) {
    console.error(`points-ledger: ${error.message}\n\n${command === undefined ? USAGE : usageOf(USAGE, command)}`);
    return 2;
  }
  if (error instanceof ConfigError) {
    console.error(`points-ledger: ${error.message}`);
    return 2;
  }
  if (error instanceof ApiError) {
    // A command line argument the domain refused (e.g. a malformed address): a usage error.
    console.error(`points-ledger: ${error.message}${readableDetails(error.details)}`);
    return 2;
  }
  // A start-up mistake (port taken, database missing or unopenable, schema too new): one line.
  const problem = startupProblem(error, loadedDatabaseUrl);
  if (problem !== null) {
    console.error(`points-ledger: ${problem}`);
    return 1;
  }
  console.error("points-ledger:", error);
  return 1;
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = report(error, argv[0]);
  },
);
