import type { AddressKey } from "../domain/address.js";
import {
  base64urlText,
  decodeCursor as decodeWith,
  encodeCursor as encodeWith,
  DELIVERY_SEQ_PART,
  SEQ_PART,
  TIME_MS_PART,
  type CursorKind,
} from "../domain/cursor.js";
import type { BatchPosition, TransferPosition } from "../store/store.js";

/**
 * The cursor kinds of the listings, each a schema for the one codec (src/domain/cursor.ts).
 * Keyset paging: a cursor is the position of the last item of a page, so following the cursors
 * visits every item once even while new ones arrive. Each `legacy` is the form its listing issued
 * before the versioned envelope, still read so stored cursors keep working.
 */

/** PostgreSQL's transfers.idx is an INTEGER; a batch holds at most MAX_TRANSFERS_PER_BATCH_LIMIT anyway. */
const MAX_TRANSFER_INDEX = 2n ** 31n - 1n;
const CONTRACT_KEY = /^0x[0-9a-f]{40}$/;

/** GET …/batches: the last batch's (createdAtMs, seq); before: base64url of `createdAtMs.seq`. */
export const BATCH_CURSOR: CursorKind<BatchPosition> = {
  tag: "b",
  parts: [TIME_MS_PART, SEQ_PART],
  toParts: (position) => [position.createdAtMs, position.seq],
  fromParts: ([createdAtMs, seq]) => ({ createdAtMs: Number(createdAtMs), seq: seq! }),
  legacy: base64urlText,
};

/**
 * GET …/transfers: a transfer's (createdAtMs, seq, index), the last one returned or, on a filtered
 * page cut short by MAX_TRANSFERS_SCANNED_PER_PAGE, the last one examined; before: base64url of
 * `createdAtMs.seq.index`.
 */
export const TRANSFER_CURSOR: CursorKind<TransferPosition> = {
  tag: "t",
  parts: [TIME_MS_PART, SEQ_PART, { integer: { min: 0n, max: MAX_TRANSFER_INDEX } }],
  toParts: (position) => [position.createdAtMs, position.seq, position.index],
  fromParts: ([createdAtMs, seq, index]) => ({ createdAtMs: Number(createdAtMs), seq: seq!, index: Number(index) }),
  legacy: base64urlText,
};

/** GET /v1/admin/contracts: the last contract's lowercase key; before: base64url of the key. */
export const CONTRACT_CURSOR: CursorKind<AddressKey> = {
  tag: "c",
  parts: [{ text: CONTRACT_KEY }],
  toParts: (contract) => [contract],
  fromParts: ([contract]) => contract as AddressKey,
  legacy: base64urlText,
};

/** GET …/webhooks/{id}/deliveries: the last delivery's seq (newest first); before: the seq itself, in decimal. */
export const DELIVERY_CURSOR: CursorKind<string> = {
  tag: "d",
  parts: [DELIVERY_SEQ_PART],
  toParts: (seq) => [seq],
  fromParts: ([seq]) => BigInt(seq!).toString(),
  legacy: (cursor) => cursor,
};

/** The batches cursor (kept under these names: the batch listing was the first cursor). */
export function encodeCursor(position: BatchPosition): string {
  return encodeWith(BATCH_CURSOR, position);
}

export function decodeCursor(cursor: string): BatchPosition {
  return decodeWith(BATCH_CURSOR, cursor);
}
