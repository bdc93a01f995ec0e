import type { Config } from "../config.js";
import { formatSignerKey, parseSignerKey } from "../domain/signed-note.js";
import type { AuthStore, LogSigning } from "../store/store.js";
import { storedKeyOf } from "./challenge-key.js";

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
