import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import type { AddressKey } from "../domain/address.js";
import { checkedParts, U64_PART } from "../domain/cursor.js";
import type { ServerKeys } from "./cursor-key.js";

/**
 * An events cursor, opaque to clients: the store's position of the last event a reader has seen
 * (each adapter has its own form: "42" on SQLite, "<xid8>.<seq>" on PostgreSQL) and when it was
 * issued, encrypted and authenticated with a server key (cursor-key.ts), bound to the stream it
 * was issued for. Positions are global to the log, so in the clear they would meter other
 * tenants' writes and could be forged past the head to hide events: sealed, a tenant reads
 * nothing in them, and a cursor the service never issued (for this stream) is refused.
 *
 * The cursor after an event is deterministic (the nonce is an HMAC of what it seals, the SIV
 * construction): paging the same events with any page size ends on the same cursor. A cursor not
 * at an event (a page with none: the head of the log, see routes/events.ts) seals a random salt
 * too, so two of them never compare equal, whether or not the log moved between them. Bytes:
 * version (2) ‖ nonce (12) ‖ AES-256-GCM ciphertext of kind (1) ‖ two u64 parts ‖ issuedAtMs
 * (u64) ‖ salt (8) ‖ tag (16), base64url; 83 characters whatever the position, so even its length
 * says nothing about the log.
 *
 * The first form, base64url of `ev1:<position>`, is still read so a client resumes from a cursor
 * stored before the upgrade; it is not authenticated, so the store refuses one past its newest
 * event (EventQuery.verifyAfter) and the answer carries a cursor of the new form.
 */

/** Whose stream a cursor is for: a contract's (or credited address's), or null for the admin listing. */
export type CursorScope = AddressKey | null;

export interface DecodedEventCursor {
  position: string;
  /** When it was issued (ms); null for a cursor of the first, unauthenticated form. */
  issuedAtMs: number | null;
}

const VERSION = 2;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SALT_BYTES = 8;
const SEALED_BYTES = 1 + 8 + 8 + 8 + SALT_BYTES;
const CURSOR_BYTES = 1 + NONCE_BYTES + SEALED_BYTES + TAG_BYTES;
/** Kinds of position: one part (SQLite's seq) or two (PostgreSQL's tx.seq). */
const ONE_PART = 1;
const TWO_PARTS = 2;

const LEGACY_PREFIX = "ev1:";
/** Positions are digits and dots; anything longer than this was never given out. */
const LEGACY_POSITION_TEXT = /^[0-9][0-9.]{0,63}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export class EventCursors {
  private constructor(
    private readonly encryptionKey: Buffer,
    private readonly nonceKey: Buffer,
  ) {}

  static async load(keys: ServerKeys): Promise<EventCursors> {
    return new EventCursors(await keys.getServerKey("events-cursor-encryption"), await keys.getServerKey("events-cursor-nonce"));
  }

  /** `salted`: for a cursor not at an event, which must not say whether the log moved (see above). */
  encode(scope: CursorScope, position: string, issuedAtMs: number, salted = false): string {
    const sealed = Buffer.alloc(SEALED_BYTES);
    const parts = position.split(".").map(BigInt);
    // The store's own positions: a part outside u64 is a bug, and writeBigUInt64BE throws on it.
    sealed.writeUInt8(parts.length === 1 ? ONE_PART : TWO_PARTS, 0);
    sealed.writeBigUInt64BE(parts.length === 1 ? 0n : parts[0]!, 1);
    sealed.writeBigUInt64BE(parts.at(-1)!, 9);
    sealed.writeBigUInt64BE(BigInt(issuedAtMs), 17);
    if (salted) randomBytes(SALT_BYTES).copy(sealed, 25);
    const header = Buffer.from([VERSION]);
    const aad = associatedData(header, scope);
    const nonce = createHmac("sha256", this.nonceKey).update(aad).update(sealed).digest().subarray(0, NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.encryptionKey, nonce).setAAD(aad);
    const ciphertext = Buffer.concat([cipher.update(sealed), cipher.final()]);
    return Buffer.concat([header, nonce, ciphertext, cipher.getAuthTag()]).toString("base64url");
  }

  /** The position inside `cursor`, or null when the service never issued it for `scope`. */
  decode(scope: CursorScope, cursor: string): DecodedEventCursor | null {
    if (!BASE64URL.test(cursor)) return null;
    const bytes = Buffer.from(cursor, "base64url");
    if (bytes.subarray(0, LEGACY_PREFIX.length).toString() === LEGACY_PREFIX) return decodeLegacy(bytes);
    if (bytes.length !== CURSOR_BYTES || bytes[0] !== VERSION) return null;
    const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
    const tag = bytes.subarray(CURSOR_BYTES - TAG_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", this.encryptionKey, nonce).setAAD(associatedData(bytes.subarray(0, 1), scope));
    decipher.setAuthTag(tag);
    let sealed: Buffer;
    try {
      sealed = Buffer.concat([decipher.update(bytes.subarray(1 + NONCE_BYTES, CURSOR_BYTES - TAG_BYTES)), decipher.final()]);
    } catch {
      return null; // forged, altered, or issued for another stream
    }
    const kind = sealed.readUInt8(0);
    const first = sealed.readBigUInt64BE(1);
    const last = sealed.readBigUInt64BE(9);
    const position = kind === ONE_PART ? last.toString() : `${first}.${last}`;
    return { position, issuedAtMs: Number(sealed.readBigUInt64BE(17)) };
  }
}

function associatedData(header: Buffer, scope: CursorScope): Buffer {
  return Buffer.concat([header, Buffer.from(scope === null ? "admin" : `stream:${scope}`)]);
}

/** An `ev1:` cursor: its position when every part fits the store's integers (else it was never given out). */
function decodeLegacy(bytes: Buffer): DecodedEventCursor | null {
  const position = bytes.subarray(LEGACY_PREFIX.length).toString();
  if (!LEGACY_POSITION_TEXT.test(position)) return null;
  // The codec's part schema: one u64 part (SQLite's seq) or two (PostgreSQL's xid8.seq).
  if (checkedParts(position, position.includes(".") ? [U64_PART, U64_PART] : [U64_PART]) === null) return null;
  return { position, issuedAtMs: null };
}
