/**
 * An events cursor is the store's position of the last event a reader has seen, opaque to
 * clients: base64url of `ev1:<position>`. The version prefix lets a later format be told apart
 * from this one; the store checks the position itself (each adapter has its own form: "42" on
 * SQLite, "<xid8>.<seq>" on PostgreSQL) and refuses one it never gave out.
 */
const CURSOR_PREFIX = "ev1:";
/** Positions are digits and dots; anything longer than this was never given out. */
const POSITION_TEXT = /^[0-9][0-9.]{0,63}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export function encodeEventCursor(position: string): string {
  return Buffer.from(`${CURSOR_PREFIX}${position}`).toString("base64url");
}

/** The position inside `cursor`, or null when it is not a cursor of this form. */
export function decodeEventCursor(cursor: string): string | null {
  const text = BASE64URL.test(cursor) ? Buffer.from(cursor, "base64url").toString() : "";
  const position = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  return POSITION_TEXT.test(position) ? position : null;
}
