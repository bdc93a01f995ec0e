import canonicalize from "canonicalize";
import { utf8ToBytes } from "@noble/hashes/utils";
import { leafHash, type Hash } from "./tlog.js";

/**
 * An event's place in the transparency log (API.md, Transparency log): its leaf is the Event
 * object as the events API returns it, less `logIndex`, serialized by RFC 8785 (the JSON
 * Canonicalization Scheme), so anyone holding the Event JSON (from the API, a webhook, the stream)
 * recomputes the leaf without the service.
 */

/** The RFC 8785 form of an Event object, `logIndex` left out. */
export function canonicalEvent(event: object): string {
  const { logIndex: _logIndex, ...logged } = event as Record<string, unknown>;
  const text = canonicalize(logged);
  if (text === undefined) throw new TypeError("an event is a JSON object");
  return text;
}

/** `SHA-256(0x00 ‖ canonical event)`: the event's leaf hash. */
export function eventLeafHash(event: object): Hash {
  return leafHash(utf8ToBytes(canonicalEvent(event)));
}
