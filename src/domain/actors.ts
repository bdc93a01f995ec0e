/**
 * Actors as API.md shows them (`actor` under "Events"; a Batch's `submittedBy` / `cancelledBy`)
 * and as both databases store them. The type itself is in ./api-keys.ts.
 */
import { checksumAddress, type AddressKey } from "./address.js";
import type { Actor } from "./api-keys.js";
import { InvariantViolation } from "./errors.js";

export const ADMIN_ACTOR: Actor = Object.freeze({ type: "admin" });

export function operatorActor(address: AddressKey): Actor {
  return { type: "operator", address };
}

/** The Actor JSON of API.md: an operator's address in EIP-55 form, like every address a response gives. */
export type ActorJson =
  | { type: "operator"; address: string }
  | { type: "api_key"; id: string; name: string }
  | { type: "admin" }
  | { type: "system" }
  | { type: "chain"; chainId: number; blockNumber: number; transactionHash: string | null };

export function actorJson(actor: Actor): ActorJson {
  switch (actor.type) {
    case "operator":
      return { type: "operator", address: checksumAddress(actor.address) };
    case "api_key":
      return { type: "api_key", id: actor.id, name: actor.name };
    case "chain":
      return { type: "chain", chainId: actor.chainId, blockNumber: actor.blockNumber, transactionHash: actor.transactionHash };
    default:
      return { type: actor.type };
  }
}

/**
 * An actor as the databases store it (JSON; addresses as keys, lowercase), read back: a stored
 * value of another shape is a broken invariant, not something to show. Fields are listed by
 * hand so a stored object never carries extra ones into a response.
 */
export function storedActor(value: unknown): Actor {
  const stored = (typeof value === "string" ? JSON.parse(value) : value) as Partial<Record<string, unknown>> | null;
  const type = stored?.type;
  if (type === "operator" && typeof stored?.address === "string") return { type, address: stored.address as AddressKey };
  if (type === "api_key" && typeof stored?.id === "string" && typeof stored.name === "string")
    return { type, id: stored.id, name: stored.name };
  if (type === "admin" || type === "system") return { type };
  if (type === "chain" && isSafeCount(stored?.chainId) && isSafeCount(stored.blockNumber)) {
    const transactionHash = stored.transactionHash;
    if (transactionHash === null || typeof transactionHash === "string") {
      return { type, chainId: stored.chainId, blockNumber: stored.blockNumber, transactionHash };
    }
  }
  throw new InvariantViolation(`a stored actor has an unknown shape: ${JSON.stringify(value)}`);
}

/** What the databases store for `actor` (the column's JSON text). */
export function storedActorText(actor: Actor): string {
  return JSON.stringify(actor);
}

function isSafeCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
