import { formatSignerKey, parseSignerKey } from "../../src/domain/signed-note.js";
import type { LogSigning, LogStep, TransparencyLogStore } from "../../src/store/store.js";

/** A fixed test key (never a real one): the seed is 32 bytes of 7. */
export const TEST_LOG_ORIGIN = "ledger.test/points-ledger";
export const TEST_LOG_SIGNING_KEY = formatSignerKey(TEST_LOG_ORIGIN, new Uint8Array(32).fill(7));

export function testLogSigning(checkpointIntervalMs = 0): LogSigning {
  return { origin: TEST_LOG_ORIGIN, signer: parseSignerKey(TEST_LOG_SIGNING_KEY), checkpointIntervalMs };
}

/** Runs the logging job's steps until it has read every event, signing a checkpoint at the end; returns the last step. */
export async function logEverything(store: TransparencyLogStore, nowMs = Date.now(), signing = testLogSigning()): Promise<LogStep> {
  for (;;) {
    const step = await store.appendToLog(1000, nowMs, signing);
    if (!step.more && !step.unsigned) return step;
  }
}
