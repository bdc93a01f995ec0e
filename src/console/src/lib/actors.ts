import type { Actor } from "../../../client/index.js";

/**
 * Who caused a change, as a short phrase for the batch screen and the live feed: "0x12ab…cdef
 * (operator)", "key “nightly” (API key)", "the administrator", "the service". The full address is
 * the caller's to show on hover (actorTitle).
 */
export function actorText(actor: Actor): string {
  switch (actor.type) {
    case "operator":
      return `${actor.address.slice(0, 6)}…${actor.address.slice(-4)} (operator)`;
    case "api_key":
      return `key “${actor.name}” (API key)`;
    case "admin":
      return "the administrator";
    case "system":
      return "the service";
    case "chain":
      return `the chain (block ${actor.blockNumber})`;
  }
}

/** The whole of what actorText shortens: the operator's full address, or the key's id. */
export function actorTitle(actor: Actor): string | undefined {
  if (actor.type === "operator") return actor.address;
  if (actor.type === "api_key") return actor.id;
  return undefined;
}
