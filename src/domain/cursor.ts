import { validationFailed, type ApiError } from "./errors.js";
import { CURSOR_MAX_LENGTH } from "./limits.js";
import { cursorMessage } from "./messages.js";

/**
 * The one codec of listing cursors (issue 20). A cursor is a position in a listing, opaque to
 * clients: a versioned envelope, base64url of `v2.<kind>.<part>.<part>…`, whose parts a small
 * schema per kind (CursorKind) names and bounds. Whatever is wrong with a cursor — not base64url,
 * too long, another version, another listing's kind, a part missing, extra, malformed or out of
 * its range — it is refused with the same error (invalidCursor): 400 VALIDATION_FAILED naming the
 * parameter, with the one cursor message of messages.ts. A part out of range is refused here, not
 * by the database: a value no column can hold was never given out, and binding it would fail.
 *
 * Wire compatibility: clients store cursors (a sync job keeps the batches or transfers cursor it
 * stopped at), so the forms each listing issued before the envelope (version 1, unversioned: see
 * each kind's `legacy`) are still read, through the same part schema, and every answer carries a
 * cursor of the new form. A stored cursor keeps working across the upgrade, and a later change of
 * a kind's parts is a new version rather than a silent reinterpretation.
 *
 * The events cursor (src/http/event-cursor.ts) is sealed: its own binary envelope, encrypted and
 * bound to its stream. Its position parts are bounded by the same part schemas (U64_PART).
 */

/** One part of a cursor: an unsigned decimal integer within [min, max] (kept as text: 64-bit values stay exact), or a text of a pattern. */
export type CursorPart = { readonly integer: { readonly min: bigint; readonly max: bigint } } | { readonly text: RegExp };

/** A listing's cursor: its tag in the envelope, its parts, and the form it had before the envelope. */
export interface CursorKind<T> {
  readonly tag: string;
  readonly parts: readonly CursorPart[];
  readonly toParts: (value: T) => readonly (string | number | bigint)[];
  readonly fromParts: (parts: readonly string[]) => T;
  /** The dot-separated parts of a cursor of the form issued before the envelope, or null when it is not of that form. */
  readonly legacy: (cursor: string) => string | null;
  /** Longest cursor of this kind accepted; absent, CURSOR_MAX_LENGTH. */
  readonly maxLength?: number;
}

/** The envelope's version: the unversioned forms before it count as version 1. */
export const CURSOR_VERSION = "v2";

/** The databases' sequence numbers are 64-bit signed integers: a larger one was never given out. */
export const MAX_CURSOR_SEQ = 2n ** 63n - 1n;

export const SEQ_PART: CursorPart = { integer: { min: 0n, max: MAX_CURSOR_SEQ } };
/** A webhook delivery's seq (from 1). */
export const DELIVERY_SEQ_PART: CursorPart = { integer: { min: 1n, max: MAX_CURSOR_SEQ } };
/** An events position part (PostgreSQL's xid8 is unsigned 64-bit). */
export const U64_PART: CursorPart = { integer: { min: 0n, max: 2n ** 64n - 1n } };
/** Epoch milliseconds: up to 15 digits, as the first cursors were read (year 33658; safe in a Number). */
export const TIME_MS_PART: CursorPart = { integer: { min: 0n, max: 10n ** 15n - 1n } };

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const DIGITS = /^[0-9]+$/;

/** The one error of a cursor the service cannot have given out, naming the parameter (`cursor`, `after`, `Last-Event-ID`). */
export function invalidCursor(path: string, value: unknown): ApiError {
  return validationFailed([{ path, message: cursorMessage(value) }]);
}

export function encodeCursor<T>(kind: CursorKind<T>, value: T): string {
  return Buffer.from([CURSOR_VERSION, kind.tag, ...kind.toParts(value)].join(".")).toString("base64url");
}

/** The position in `cursor` (new or previous form), or invalidCursor(path) when the service never issued it for this kind. */
export function decodeCursor<T>(kind: CursorKind<T>, cursor: string, path = "cursor"): T {
  const parts = cursorParts(kind, cursor);
  if (parts === null) throw invalidCursor(path, cursor);
  return kind.fromParts(parts);
}

function cursorParts<T>(kind: CursorKind<T>, cursor: string): string[] | null {
  if (cursor.length > (kind.maxLength ?? CURSOR_MAX_LENGTH) || !BASE64URL.test(cursor)) return null;
  const text = base64urlText(cursor);
  const envelope = `${CURSOR_VERSION}.${kind.tag}.`;
  if (text.startsWith(envelope)) return checkedParts(text.slice(envelope.length), kind.parts);
  if (/^v[0-9]/.test(text)) return null; // another version (or another kind's envelope)
  const legacy = kind.legacy(cursor);
  return legacy === null ? null : checkedParts(legacy, kind.parts);
}

/** The dot-separated parts of `text` when they are exactly `schema`'s, each of its form and within its range; else null. */
export function checkedParts(text: string, schema: readonly CursorPart[]): string[] | null {
  const parts = text.split(".");
  if (parts.length !== schema.length) return null;
  return parts.every((part, i) => partFits(part, schema[i]!)) ? parts : null;
}

function partFits(part: string, spec: CursorPart): boolean {
  if ("text" in spec) return spec.text.test(part);
  const { min, max } = spec.integer;
  // Digit count first: BigInt of a huge string is work an attacker chooses.
  if (!DIGITS.test(part) || part.length > max.toString().length) return false;
  const value = BigInt(part);
  return value >= min && value <= max;
}

/** The text inside a base64url cursor (a pre-envelope form of the listing's). */
export function base64urlText(cursor: string): string {
  return Buffer.from(cursor, "base64url").toString();
}
