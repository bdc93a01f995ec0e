import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";

/**
 * C2SP `signed-note` with Ed25519 keys, and the C2SP `tlog-checkpoint` it carries (API.md,
 * Transparency log). The key formats are those of the Go reference implementation
 * (golang.org/x/mod/sumdb/note), so its tools and any C2SP witness read them:
 * - key id: the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key);
 * - verifier key: `<name>+<hex key id>+<base64(0x01 ‖ public key)>`;
 * - signer key: `PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 ‖ seed)>`;
 * - a note: text ending in a newline, a blank line, and lines `— <name> <base64(key id ‖ signature)>`.
 */

const ED25519 = 0x01;
const EM_DASH_PREFIX = "\u2014 ";
/** A note longer than this is refused unread (Go's note.Open allows 1 MiB of signatures; a checkpoint is a few hundred bytes). */
export const MAX_NOTE_BYTES = 64 * 1024;
const MAX_SIGNATURES = 100;

/** Standard base64 (RFC 4648 §4), without Node's Buffer: this file is bundled into the client, which runs in browsers too. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Strict: padding required, nothing but the alphabet; a NoteError otherwise. */
export function fromBase64(text: string): Uint8Array {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) throw new NoteError("malformed base64");
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export class NoteError extends Error {
  override readonly name = "NoteError";
}

export interface NoteSigner {
  name: string;
  keyId: Uint8Array;
  publicKey: Uint8Array;
  seed: Uint8Array;
}

export interface NoteVerifier {
  name: string;
  keyId: Uint8Array;
  publicKey: Uint8Array;
}

/** A key name: non-empty, no space or plus sign, no control character (the signed-note rules). */
function checkName(name: string): void {
  // eslint-disable-next-line no-control-regex
  if (name === "" || /[\s+\u0000-\u001f\u007f]/u.test(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}`);
}

export function keyId(name: string, publicKey: Uint8Array): Uint8Array {
  return sha256(concatBytes(utf8ToBytes(name), new Uint8Array([0x0a, ED25519]), publicKey)).subarray(0, 4);
}

function signerOf(name: string, seed: Uint8Array): NoteSigner {
  checkName(name);
  if (seed.length !== 32) throw new NoteError("an Ed25519 seed is 32 bytes");
  const publicKey = ed25519.getPublicKey(seed);
  return { name, keyId: keyId(name, publicKey), publicKey, seed };
}

/** A new signer key for `name`, in the PRIVATE+KEY+… form (random seed). */
export function generateSignerKey(name: string): string {
  return formatSignerKey(name, globalThis.crypto.getRandomValues(new Uint8Array(32)));
}

export function formatSignerKey(name: string, seed: Uint8Array): string {
  const signer = signerOf(name, seed);
  return `PRIVATE+KEY+${name}+${bytesToHex(signer.keyId)}+${toBase64(concatBytes(new Uint8Array([ED25519]), seed))}`;
}

function decodeKeyParts(text: string, what: string): { name: string; id: string; key: Uint8Array } {
  const match = /^([^+]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+=*)$/.exec(text);
  if (!match) throw new NoteError(`malformed ${what} key`);
  const key = fromBase64(match[3]!);
  if (key.length !== 33 || key[0] !== ED25519) throw new NoteError(`${what} key is not an Ed25519 key`);
  return { name: match[1]!, id: match[2]!, key: key.subarray(1) };
}

/** Reads a PRIVATE+KEY+… signer key; its key id must match its name and key. */
export function parseSignerKey(text: string): NoteSigner {
  if (!text.startsWith("PRIVATE+KEY+")) throw new NoteError("a signer key starts with PRIVATE+KEY+");
  const { name, id, key } = decodeKeyParts(text.slice("PRIVATE+KEY+".length), "signer");
  const signer = signerOf(name, key);
  if (bytesToHex(signer.keyId) !== id) throw new NoteError("the signer key's id does not match its key");
  return signer;
}

/** The verifier key of a signer: `<name>+<hex key id>+<base64(0x01 ‖ public key)>`. */
export function verifierKey(signer: NoteVerifier): string {
  return `${signer.name}+${bytesToHex(signer.keyId)}+${toBase64(concatBytes(new Uint8Array([ED25519]), signer.publicKey))}`;
}

export function parseVerifierKey(text: string): NoteVerifier {
  const { name, id, key } = decodeKeyParts(text.trim(), "verifier");
  checkName(name);
  const expected = keyId(name, key);
  if (bytesToHex(expected) !== id) throw new NoteError("the verifier key's id does not match its key");
  return { name, keyId: expected, publicKey: key };
}

function checkText(text: string): void {
  // eslint-disable-next-line no-control-regex
  if (!text.endsWith("\n") || text.includes("\n\n") || /[\u0000-\u0009\u000b-\u001f]/u.test(text)) {
    throw new NoteError("a note's text is lines ending in a newline, with no blank line and no control character");
  }
}

/** The signed note of `text` (ending in a newline) by `signer`. */
export function signNote(text: string, signer: NoteSigner): string {
  checkText(text);
  const signature = ed25519.sign(utf8ToBytes(text), signer.seed);
  return `${text}\n${EM_DASH_PREFIX}${signer.name} ${toBase64(concatBytes(signer.keyId, signature))}\n`;
}

/**
 * The text of `note` once `verifier`'s signature on it checks; a NoteError otherwise (malformed,
 * not signed by that key, or a signature of that key that fails). Other keys' lines are ignored.
 */
export function openNote(note: string, verifier: NoteVerifier): string {
  if (utf8ToBytes(note).length > MAX_NOTE_BYTES) throw new NoteError("the note is too long");
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new NoteError("malformed note: no signature block");
  const text = note.slice(0, split + 1);
  checkText(text);
  const lines = note.slice(split + 2, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new NoteError("too many signatures");
  const wantedId = bytesToHex(verifier.keyId);
  for (const line of lines) {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/]+=*)$/u.exec(line);
    if (!match) throw new NoteError("malformed signature line");
    const blob = fromBase64(match[2]!);
    if (blob.length < 5) throw new NoteError("malformed signature line");
    if (match[1] !== verifier.name || bytesToHex(blob.subarray(0, 4)) !== wantedId) continue;
    if (blob.length !== 4 + 64 || !verifySignature(blob.subarray(4), utf8ToBytes(text), verifier.publicKey)) {
      throw new NoteError(`the signature of ${verifier.name} does not verify`);
    }
    return text;
  }
  throw new NoteError(`the note is not signed by ${verifier.name}+${wantedId}`);
}

function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** A C2SP tlog-checkpoint: origin, tree size, root hash (its extension lines are not used here). */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Uint8Array;
}

export function checkpointText(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${toBase64(checkpoint.root)}\n`;
}

/** Reads a checkpoint's text (the note's text, once opened); extension lines are allowed and ignored. */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split("\n");
  const [origin, size, root] = lines;
  if (lines.length < 4 || !origin || size === undefined || root === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(size)) {
    throw new NoteError("malformed checkpoint");
  }
  const rootBytes = fromBase64(root);
  if (rootBytes.length !== 32) throw new NoteError("malformed checkpoint root hash");
  return { origin, size: Number(size), root: rootBytes };
}
