import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { logSigningOf } from "../auth/log-signing-key.js";
import type { Config } from "../config.js";
import { formatSignerKey, parseSignerKey, verifierKey } from "../domain/signed-note.js";
import { UsageError, withStore } from "./commands.js";

/**
 * `points-ledger log new-epoch` and `log rotate-key`: the two deliberate changes of the
 * transparency log's history (docs/transparency.md, "Restores and key changes"), run on the
 * database (DATABASE_URL) like `verify`. Each begins an epoch announced by a note the log's key
 * signs, so a witness follows it; nothing else may change the log's key or rewrite its history.
 */

export const LOG_EPOCH_USAGE = `  log new-epoch                           after restoring a PostgreSQL dump (pg_restore) or any copy not made by
                                          \`backup\`: the next start begins a new epoch of the transparency log,
                                          announced with its key, so witnesses follow the restore
  log rotate-key --from-key-file <file>   begin an epoch signed by LOG_SIGNING_KEY (and LOG_ORIGIN), announced by
                                          the log's current key, read from <file> (its LOG_SIGNING_KEY line or
                                          the key alone); without --from-key-file, the key kept in the database`;

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options: { "from-key-file": { type: "string" } } });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** The signer key in `path`: a `LOG_SIGNING_KEY=…` line of an environment file, or the key alone. */
function keyFromFile(path: string) {
  const text = readFileSync(path, "utf8");
  const line = text.split("\n").find((candidate) => candidate.includes("PRIVATE+KEY+"));
  if (line === undefined) throw new UsageError(`${path} holds no signer key (PRIVATE+KEY+…)`);
  try {
    return parseSignerKey(line.slice(line.indexOf("PRIVATE+KEY+")).trim().replace(/["']$/, ""));
  } catch {
    throw new UsageError(`${path} holds no valid signer key (the key is not repeated here)`);
  }
}

async function newEpoch(config: Config): Promise<number> {
  return withStore(config, async (store) => {
    await store.markNewLogEpoch();
    console.log("the transparency log begins a new epoch at the service's next start (witnesses follow its announcement)");
    return 0;
  });
}

async function rotateKey(config: Config, fromKeyFile: string | undefined): Promise<number> {
  if (config.logSigningKey === null) throw new UsageError("set LOG_SIGNING_KEY to the new key (points-ledger log keygen makes one)");
  return withStore(config, async (store) => {
    const signing = await logSigningOf(store, config).signing();
    const previous =
      fromKeyFile === undefined
        ? await logSigningOf(store, { ...config, logSigningKey: null }).signing()
        : { signer: keyFromFile(fromKeyFile) };
    // The announcement is signed under the name the log had: the key file's own name.
    const announcer = parseSignerKey(formatSignerKey(previous.signer.name, previous.signer.seed));
    const answer = await store.rotateLogKey(announcer, signing, Date.now());
    if (answer.kind === "mismatch") {
      console.error(
        `points-ledger log: the log is signed by ${answer.verifierKey}, not by ${verifierKey(announcer)}: give its key with --from-key-file`,
      );
      return 1;
    }
    console.log(
      `the transparency log's epoch ${answer.epoch} is signed by ${verifierKey(signing.signer)}, announced by ${verifierKey(announcer)}`,
    );
    return 0;
  });
}

export async function logEpochCommand(argv: string[], config: () => Config): Promise<number> {
  const { positionals, values } = parse(argv);
  const [sub, ...rest] = positionals;
  if (sub === "new-epoch" && rest.length === 0) return newEpoch(config());
  if (sub === "rotate-key" && rest.length === 0) return rotateKey(config(), values["from-key-file"]);
  throw new UsageError(`usage:\n${LOG_EPOCH_USAGE}`);
}
