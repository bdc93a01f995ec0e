import { ConfigError, type Config } from "../config.js";
import { formatSignerKey, parseSignerKey, verifierKey } from "../domain/signed-note.js";
import type { AuthStore, LedgerStore, LogSigning } from "../store/store.js";
import { storedKeyOf } from "./challenge-key.js";
import { StoreUnavailableError } from "../store/errors.js";

/** The row in server_keys of the checkpoints' Ed25519 seed when LOG_SIGNING_KEY is not set. */
const LOG_KEY_NAME = "transparency-log";

export interface LogSigningSource {
  /** How checkpoints are signed (read once per process). */
  signing(): Promise<LogSigning>;
  /** True when the key is the one kept in the database (no LOG_SIGNING_KEY): worth a warning. */
  readonly stored: boolean;
}

/**
 * The transparency log's signing key (API.md, Transparency log): LOG_SIGNING_KEY, or a seed the
 * first instance made and stored in the database, shared by every instance. Its name is always
 * LOG_ORIGIN (the key id follows), so a checkpoint's origin and its signature's key name agree.
 */
export function logSigningOf(
  store: Pick<AuthStore, "serverKey">,
  config: Pick<Config, "logOrigin" | "logSigningKey" | "logCheckpointSeconds">,
): LogSigningSource {
  const storedSeed = storedKeyOf(store, LOG_KEY_NAME);
  let signing: Promise<LogSigning> | null = null;
  return {
    stored: config.logSigningKey === null,
    signing: () =>
      (signing ??= (async () => {
        const seed = config.logSigningKey === null ? new Uint8Array(await storedSeed()) : parseSignerKey(config.logSigningKey).seed;
        const signer = parseSignerKey(formatSignerKey(config.logOrigin, seed.subarray(0, 32)));
        return { origin: config.logOrigin, signer, checkpointIntervalMs: Math.round(config.logCheckpointSeconds * 1000) };
      })().catch((error: unknown) => {
        signing = null;
        throw error;
      })),
  };
}

/**
 * The start-up check of the log's signing (server and worker): the configured key and origin must
 * be the ones that signed the database's log, or a witness's next check fails for no reason it
 * can see. A copy marked by `backup` or `log new-epoch` begins its new epoch here. Returns the epoch
 * (null: the database cannot be written now, and nothing was checked).
 */
export async function openTransparencyLog(
  store: Pick<LedgerStore, "serverKey" | "openLog">,
  config: Pick<Config, "logOrigin" | "logSigningKey" | "logCheckpointSeconds">,
  nowMs: number,
): Promise<{ epoch: number; begun: boolean } | null> {
  let answer;
  let signing;
  try {
    signing = await logSigningOf(store, config).signing();
    answer = await store.openLog(signing, nowMs);
  } catch (error) {
    // A database that cannot be written yet (a read-only SQLite file, a standby): the service starts
    // and answers 503 to writes; the log cannot sign either, and the next start checks its key.
    if (error instanceof StoreUnavailableError) return null;
    throw error;
  }
  if (answer.kind === "ok") return answer;
  throw new ConfigError(
    config.logSigningKey === null ? "LOG_ORIGIN (or the key kept in the database)" : "LOG_SIGNING_KEY / LOG_ORIGIN",
    `give the verifier key ${verifierKey(signing.signer)}, but this database's transparency log is signed by ${answer.verifierKey}: ` +
      "start refused, a witness would see the key change; set them back, or change them on purpose with `points-ledger log rotate-key` (docs/transparency.md)",
  );
}
