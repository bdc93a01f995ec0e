import { validationFailed } from "../domain/errors.js";
import type { BatchPosition } from "../store/store.js";

/**
 * A cursor is the listing position of the last batch returned: (createdAtMs, seq), opaque to
 * clients. Keyset paging visits every matching batch once even while new batches arrive.
 */
const CURSOR_TEXT = /^(\d{1,15})\.(\d{1,19})$/;
/** Sequence numbers are the databases' 64-bit signed integers: a larger one was never given out (and binding it fails). */
export const MAX_CURSOR_SEQ = 2n ** 63n - 1n;

export function encodeCursor(position: BatchPosition): string {
  return Buffer.from(`${position.createdAtMs}.${position.seq}`).toString("base64url");
}

export function decodeCursor(cursor: string): BatchPosition {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor) ? CURSOR_TEXT.exec(Buffer.from(cursor, "base64url").toString()) : null;
  if (!match || BigInt(match[2]!) > MAX_CURSOR_SEQ)
    throw validationFailed([{ path: "cursor", message: "is not a cursor returned by this service" }]);
  return { createdAtMs: Number(match[1]), seq: match[2]! };
}
