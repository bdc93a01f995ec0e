import { ADDRESS_PATTERN } from "./address.js";
import { ID_MAX_LENGTH } from "./batch.js";
import { QUOTED_VALUE_MAX_LENGTH, WEBHOOK_URL_MAX_LENGTH } from "./limits.js";
import { POINTS_PATTERN, POINTS_STRING_MAX_LENGTH } from "./points.js";

/**
 * The texts that say why an input value is refused, declared once. The server's VALIDATION_FAILED
 * details (src/http/validation.ts for the schema, src/domain/validate.ts for the ledger rules),
 * the client's checks before it sends (src/client/plan.ts) and the console (through the client)
 * all take them from here, so the same bad value reads the same wherever it is caught. Each text
 * starts with the value as given, quoted, and says what is expected; the field's name goes beside
 * it (`details.path` in an answer, a prefix in the client's and the CLI's lines).
 */

/** What a field holds, for the messages that depend on it (a schema annotation, see INPUT_KIND_KEYWORD). */
export const INPUT_KINDS = ["points", "address", "id", "webhookUrl", "transfers", "time", "cursor", "day", "zonedTime"] as const;
export type InputKind = (typeof INPUT_KINDS)[number];

export function isInputKind(value: unknown): value is InputKind {
  return typeof value === "string" && (INPUT_KINDS as readonly string[]).includes(value);
}

/**
 * The value as the message shows it: JSON, so a string is quoted and control characters are
 * escaped, cut to QUOTED_VALUE_MAX_LENGTH characters so the answer stays small whatever was sent.
 */
export function quoted(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  const clipped = text.length > QUOTED_VALUE_MAX_LENGTH ? `${text.slice(0, QUOTED_VALUE_MAX_LENGTH - 3)}...` : text;
  return typeof value === "string" ? JSON.stringify(clipped) : clipped;
}

const POINTS_REGEX = new RegExp(POINTS_PATTERN);

/** A `points` value that is not an amount the service takes (parsePoints returned null). */
export function pointsMessage(value: unknown): string {
  if (typeof value === "string" && value.length <= POINTS_STRING_MAX_LENGTH && POINTS_REGEX.test(value)) {
    // Of the right form, so only its size is wrong.
    return `${quoted(value)} is more than the largest amount, 10^18 points`;
  }
  return `${quoted(value)} is not a decimal points string (e.g. "12.5", up to 12 decimals)`;
}

/** A points value of 0 where a transfer or a credit must move something. */
export const POINTS_ZERO_MESSAGE = "must be greater than 0";

/** A recipient the ledger refuses, whatever its spelling. */
export const ZERO_ADDRESS_MESSAGE = "must not be the zero address";
export const CONTRACT_ITSELF_MESSAGE = "must not be the contract itself";

const ADDRESS_REGEX = new RegExp(ADDRESS_PATTERN);

/** An address that parseAddress refused: not 0x + 40 hex, or mixed case that is not its EIP-55 checksum. */
export function addressMessage(value: unknown): string {
  if (typeof value === "string" && ADDRESS_REGEX.test(value)) {
    return `${quoted(value)} is not a valid address: its mixed case is not the EIP-55 checksum (write it all lowercase, or checksummed)`;
  }
  return `${quoted(value)} is not a valid address (0x + 40 hex, EIP-55 checksum if mixed case)`;
}

/** batchId, creditId, snapshotId (ID_PATTERN). */
export function idMessage(value: unknown): string {
  return `${quoted(value)} is not a valid id (1 to ${ID_MAX_LENGTH} of A-Z a-z 0-9 . _ : -, and not "." or "..")`;
}

/** A webhook endpoint's url, refused by its form (the target checks come later, in the route). */
export function webhookUrlMessage(value: unknown): string {
  return `${quoted(value)} is not an http:// or https:// URL (printable ASCII without spaces, up to ${WEBHOOK_URL_MAX_LENGTH} characters)`;
}

/** A time in a query or body (createdBefore, createdAfter, since). */
export function timeMessage(value: unknown): string {
  return `${quoted(value)} is not an ISO 8601 UTC time (e.g. "2026-01-31T12:00:00Z", optionally with .123 milliseconds)`;
}

/** A leaderboard's `from` or `to`: a whole UTC day that exists. */
export function dayMessage(value: unknown): string {
  return `${quoted(value)} is not a day of the form YYYY-MM-DD (a whole UTC day that exists, e.g. "2026-01-31")`;
}

/** An `asOf`: an ISO 8601 time with its zone (API.md Conventions). */
export function zonedTimeMessage(value: unknown): string {
  return `${quoted(value)} is not an ISO 8601 time with a zone (e.g. "2026-01-31T12:00:00Z" or "2026-01-31T14:00:00.000+02:00")`;
}

/** A listing cursor the service cannot have given out. */
export function cursorMessage(value: unknown): string {
  return `${quoted(value)} is not a cursor returned by this service (pass back the previous page's \`cursor\` as it is)`;
}

/** A batch's `transfers` with fewer than one or more than `maxTransfers` items. */
export function transferCountMessage(count: number | null, maxTransfers: number): string {
  if (count !== null && count > maxTransfers) return `holds ${count} transfers, more than ${maxTransfers} (MAX_TRANSFERS_PER_BATCH)`;
  if (count === 0) return "must hold at least 1 transfer";
  return `must be a list of 1 to ${maxTransfers} transfers`;
}

/** The 413 of a body over BODY_LIMIT_BYTES. */
export function bodyTooLargeMessage(limitBytes: number): string {
  return `request body exceeds the size limit of ${limitBytes} bytes (BODY_LIMIT_BYTES)`;
}

/** A value outside a fixed set (a schema's enum, a setting, a CLI option). */
export function oneOfMessage(choices: readonly unknown[]): string {
  return `must be one of ${choices.join(", ")}`;
}

/** The id of a batch, credit or snapshot already taken (BATCH_ID_EXISTS, CREDIT_ID_EXISTS, SNAPSHOT_ID_EXISTS, and the CLI's lines). */
export function alreadyExistsMessage(kind: "batch" | "credit" | "snapshot", id: string): string {
  return `${kind} ${id} already exists`;
}

/** A snapshot id that names no snapshot. */
export function noSnapshotMessage(snapshotId: string): string {
  return `no snapshot ${snapshotId}`;
}

/** A time of the right form that names no real moment (e.g. February 30th). */
export const INVALID_TIME_MESSAGE = "is not a valid ISO 8601 time";

/** A snapshot asked of a point type that no address holds any of (a Merkle tree needs a leaf). */
export function emptySnapshotMessage(measure: string, pointType: string): string {
  return `no address holds a positive ${measure} of ${pointType}: a Merkle tree needs at least one leaf`;
}

/** The texts of requests refused before any route reads them, said by more than one layer. */
export const EMPTY_BODY_MESSAGE = "the JSON body is empty";
export const MALFORMED_REQUEST_MESSAGE = "malformed request";
export const NO_SUCH_ROUTE_MESSAGE = "no such route";
export const SHUTTING_DOWN_MESSAGE = "the service is shutting down";

/** The message for a value of `kind` that its schema refused (`value` as sent; `maxItems` the schema's, for `transfers`). */
export function inputMessage(kind: InputKind, value: unknown, maxItems = 0): string {
  switch (kind) {
    case "points":
      return pointsMessage(value);
    case "address":
      return addressMessage(value);
    case "id":
      return idMessage(value);
    case "webhookUrl":
      return webhookUrlMessage(value);
    case "transfers":
      return transferCountMessage(Array.isArray(value) ? value.length : null, maxItems);
    case "time":
      return timeMessage(value);
    case "cursor":
      return cursorMessage(value);
    case "day":
      return dayMessage(value);
    case "zonedTime":
      return zonedTimeMessage(value);
  }
}

/** 503 on leaderboards and `asOf` reads while the history job adds the batches finalized before history was kept. */
export function projectionBehindMessage(throughMs: number, queued: number): string {
  return `the leaderboards and balance history have applied the batches finalized through ${new Date(throughMs).toISOString()} (${queued} finalized batches still to apply): a snapshot as of a later time must wait for them; retry shortly`;
}
