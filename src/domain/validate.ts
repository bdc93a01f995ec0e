import { ZERO_ADDRESS_KEY, parseAddress, type AddressKey } from "./address.js";
import type { NewBatch, PointType, Transfer } from "./batch.js";
import { validationFailed, type FieldError } from "./errors.js";
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
}

/**
 * Checks what a JSON schema cannot: checksums, exact points, minimum sizes, recipients that are
 * not the contract, not the zero address and not repeated. Collects every offending field, then
 * throws one VALIDATION_FAILED, or returns the batch ready for the store.
 */
export function toNewBatch(
  contract: AddressKey,
  batchId: string,
  body: BatchBody,
  rules: BatchRules,
  nowMs: number,
): NewBatch {
  const errors: FieldError[] = [];
  const minimum = rules.minimumTransferUnits[body.pointType];
  const seen = new Set<string>();
  const transfers: Transfer[] = new Array(body.transfers.length);
  let total = 0n;
  for (let i = 0; i < body.transfers.length; i++) {
    const item = body.transfers[i]!;
    const toAddress = parseAddress(item.toAddress);
    if (toAddress === null) {
      errors.push({ path: `transfers[${i}].toAddress`, message: "is not a valid address (bad EIP-55 checksum)" });
    } else if (toAddress === contract) {
      errors.push({ path: `transfers[${i}].toAddress`, message: "must not be the contract itself" });
    } else if (toAddress === ZERO_ADDRESS_KEY) {
      errors.push({ path: `transfers[${i}].toAddress`, message: "must not be the zero address" });
    } else if (seen.has(toAddress)) {
      errors.push({ path: `transfers[${i}].toAddress`, message: "appears more than once in the batch" });
    } else {
      seen.add(toAddress);
    }
    const amount = parsePoints(item.points);
    if (amount === null) {
      errors.push({ path: `transfers[${i}].points`, message: "is not a valid points amount" });
    } else if (amount < minimum) {
      errors.push({ path: `transfers[${i}].points`, message: `is below the minimum transfer size ${formatPoints(minimum)}` });
    } else {
      total += amount;
    }
    transfers[i] = { toAddress: toAddress ?? ZERO_ADDRESS_KEY, amount: amount ?? 0n };
  }
  if (errors.length > 0) throw validationFailed(errors);
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

/** Parses an address field, or throws VALIDATION_FAILED naming it. */
export function requireAddress(value: string, path: string): AddressKey {
  const address = parseAddress(value);
  if (address === null) throw validationFailed([{ path, message: "is not a valid address (bad EIP-55 checksum)" }]);
  return address;
}

export function requirePoints(value: string, path: string): bigint {
  const amount = parsePoints(value);
  if (amount === null || amount === 0n) throw validationFailed([{ path, message: "is not a valid positive points amount" }]);
  return amount;
}
