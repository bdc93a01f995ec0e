import { ZERO_ADDRESS_KEY, parseAddress, type AddressKey } from "./address.js";
import type { NewBatch, PointType, Transfer } from "./batch.js";
import { validationFailed, type FieldError } from "./errors.js";
import { CONTRACT_ITSELF_MESSAGE, POINTS_ZERO_MESSAGE, ZERO_ADDRESS_MESSAGE, addressMessage, pointsMessage } from "./messages.js";
import { formatPoints, parsePoints } from "./points.js";

/** The shape the request schema has already guaranteed. */
export interface BatchBody {
  pointType: PointType;
  transfers: { toAddress: string; points: string }[];
  secondsToFinalize?: number | null;
}

export interface BatchRules {
  minimumTransferUnits: Record<PointType, bigint>;
  defaultFinalizeSeconds: number;
  maxTransfersPerBatch: number;
}

/**
 * Checks what a JSON schema cannot: checksums, exact points, minimum sizes, recipients that are
 * not the contract, not the zero address and not repeated. Collects every offending field, then
 * throws one VALIDATION_FAILED, or returns the batch ready for the store.
 *
 * `schemaErrors` are the request schema's findings when the route let an invalid body through
 * (attachValidation): the body may then be any JSON, so only its well-typed parts are checked,
 * and the answer names schema and ledger-rule offences together, one entry per field.
 */
export function toNewBatch(
  contract: AddressKey,
  batchId: string,
  body: BatchBody,
  rules: BatchRules,
  nowMs: number,
  schemaErrors: readonly FieldError[] = [],
): NewBatch {
  const errors: FieldError[] = [...schemaErrors];
  const pointType: unknown = body?.pointType;
  const minimum =
    typeof pointType === "string" && Object.hasOwn(rules.minimumTransferUnits, pointType)
      ? rules.minimumTransferUnits[pointType as PointType]
      : undefined;
  // Past MAX_TRANSFERS_PER_BATCH the schema has refused the list: its items are not walked, so a
  // rejected body costs the same however long it is.
  const items: unknown[] = Array.isArray(body?.transfers) && body.transfers.length <= rules.maxTransfersPerBatch ? body.transfers : [];
  const seen = new Set<string>();
  const transfers: Transfer[] = new Array(items.length);
  let total = 0n;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as { toAddress?: unknown; points?: unknown } | null;
    // Not an object: the schema has named it already.
    if (typeof item !== "object" || item === null) continue;
    const toAddress = parseAddress(item.toAddress);
    if (toAddress === null) {
      errors.push({ path: `transfers[${i}].toAddress`, message: addressMessage(item.toAddress) });
    } else if (toAddress === contract) {
      errors.push({ path: `transfers[${i}].toAddress`, message: CONTRACT_ITSELF_MESSAGE });
    } else if (toAddress === ZERO_ADDRESS_KEY) {
      errors.push({ path: `transfers[${i}].toAddress`, message: ZERO_ADDRESS_MESSAGE });
    } else if (seen.has(toAddress)) {
      errors.push({ path: `transfers[${i}].toAddress`, message: "appears more than once in the batch" });
    } else {
      seen.add(toAddress);
    }
    const amount = typeof item.points === "string" ? parsePoints(item.points) : null;
    if (amount === null) {
      errors.push({ path: `transfers[${i}].points`, message: pointsMessage(item.points) });
    } else if (minimum !== undefined && amount < minimum) {
      errors.push({ path: `transfers[${i}].points`, message: `is below the minimum transfer size ${formatPoints(minimum)}` });
    } else {
      total += amount;
    }
    transfers[i] = { toAddress: toAddress ?? ZERO_ADDRESS_KEY, amount: amount ?? 0n };
  }
  if (errors.length > 0) throw validationFailed(onePerPath(errors));
  return {
    contract,
    batchId,
    pointType: body.pointType,
    transfers,
    total,
    secondsToFinalize: body.secondsToFinalize ?? rules.defaultFinalizeSeconds,
    createdAtMs: nowMs,
  };
}

/** Keeps the first error of each path (a schema finding wins over the rule check of the same field). */
function onePerPath(errors: FieldError[]): FieldError[] {
  const byPath = new Map<string, FieldError>();
  for (const error of errors) if (!byPath.has(error.path)) byPath.set(error.path, error);
  return [...byPath.values()];
}

/** Parses an address field, or throws VALIDATION_FAILED naming it. */
export function requireAddress(value: string, path: string): AddressKey {
  const address = parseAddress(value);
  if (address === null) throw validationFailed([{ path, message: addressMessage(value) }]);
  return address;
}

export function requirePoints(value: string, path: string): bigint {
  const amount = parsePoints(value);
  if (amount === null) throw validationFailed([{ path, message: pointsMessage(value) }]);
  if (amount === 0n) throw validationFailed([{ path, message: POINTS_ZERO_MESSAGE }]);
  return amount;
}
