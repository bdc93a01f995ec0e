import { ID_MAX_LENGTH } from "../domain/batch.js";
import { keccak256, stringToHex } from "viem";
import { ZERO_ADDRESS_KEY, checksumAddress, parseAddress } from "../domain/address.js";
import { CONTRACT_ITSELF_MESSAGE, POINTS_ZERO_MESSAGE, ZERO_ADDRESS_MESSAGE, addressMessage, pointsMessage } from "../domain/messages.js";
import { MAX_POINTS_UNITS, formatPoints, parsePoints } from "../domain/points.js";
import { PointsInputError } from "./errors.js";
import type { Parameters, PointType, Transfer } from "./types.js";

/**
 * Pure planning for submitAll and the CLI: merge repeated recipients, split into batches, and
 * name each batch so a rerun of the same run sends nothing twice.
 */

/** One recipient after merging: the exact sum of all its transfers, in units of 10^-12 point. */
export interface MergedRecipient {
  toAddress: `0x${string}`;
  units: bigint;
  /** Index in the input of this recipient's first transfer. */
  firstIndex: number;
}

export interface ItemError {
  /** Index in the input list. */
  index: number;
  message: string;
}

export interface MergeRules {
  /** The sending contract: a transfer to itself is refused by the service. */
  contractAddress?: string;
  /** Minimum transfer size in units; applied to each recipient's merged total. */
  minimumUnits?: bigint;
}

export interface MergeResult {
  recipients: MergedRecipient[];
  errors: ItemError[];
  inputTransfers: number;
  totalUnits: bigint;
}

/**
 * Sums repeated recipients exactly (bigint units, never floats), keeping first-appearance order
 * so the same input always yields the same batches. Collects every bad item instead of stopping
 * at the first.
 */
export function mergeTransfers(transfers: Iterable<Transfer>, rules: MergeRules = {}): MergeResult {
  const contract = rules.contractAddress === undefined ? null : parseAddress(rules.contractAddress);
  const byAddress = new Map<string, MergedRecipient>();
  const errors: ItemError[] = [];
  let index = 0;
  for (const transfer of transfers) {
    const problem = transferProblem(transfer, contract);
    if (problem !== null) {
      errors.push({ index, message: problem });
    } else {
      const key = parseAddress(transfer.toAddress)!;
      const units = parsePoints(transfer.points)!;
      const merged = byAddress.get(key);
      if (merged) merged.units += units;
      else byAddress.set(key, { toAddress: checksumAddress(key), units, firstIndex: index });
    }
    index++;
  }
  const recipients = [...byAddress.values()];
  errors.push(...totalProblems(recipients, rules.minimumUnits ?? 1n));
  errors.sort((a, b) => a.index - b.index);
  return { recipients, errors, inputTransfers: index, totalUnits: recipients.reduce((sum, r) => sum + r.units, 0n) };
}

/** The first problem of one transfer: the field's name, then the message the service gives for that value (src/domain/messages.ts). */
function transferProblem(transfer: Transfer, contract: string | null): string | null {
  const address = parseAddress(transfer.toAddress);
  if (address === null) return `toAddress ${addressMessage(transfer.toAddress)}`;
  if (address === ZERO_ADDRESS_KEY) return `toAddress ${ZERO_ADDRESS_MESSAGE}`;
  if (address === contract) return `toAddress ${CONTRACT_ITSELF_MESSAGE}`;
  const units = typeof transfer.points === "string" ? parsePoints(transfer.points) : null;
  if (units === null) return `points ${pointsMessage(transfer.points)}`;
  if (units === 0n) return `points ${POINTS_ZERO_MESSAGE}`;
  return null;
}

function totalProblems(recipients: MergedRecipient[], minimumUnits: bigint): ItemError[] {
  const errors: ItemError[] = [];
  for (const recipient of recipients) {
    if (recipient.units < minimumUnits) {
      errors.push({
        index: recipient.firstIndex,
        message: `${recipient.toAddress} receives ${formatPoints(recipient.units)} in total, below the minimum transfer size ${formatPoints(minimumUnits)}`,
      });
    } else if (recipient.units > MAX_POINTS_UNITS) {
      errors.push({ index: recipient.firstIndex, message: `${recipient.toAddress} receives more than 10^18 points in total` });
    }
  }
  return errors;
}

/** The server's minimum transfer size of a point type, in units. */
export function minimumUnitsOf(parameters: Parameters, pointType: PointType): bigint {
  if (!parameters.POINT_TYPES.includes(pointType)) {
    const message = `must be one of the service's point types (${parameters.POINT_TYPES.join(", ")})`;
    throw new PointsInputError([{ path: "pointType", message }], `pointType ${message}`);
  }
  const text = parameters[`MINIMUM_${pointType}_TRANSFER_SIZE`];
  if (text === undefined) throw new RangeError(`the server sent no MINIMUM_${pointType}_TRANSFER_SIZE`);
  const units = parsePoints(text);
  if (units === null) throw new RangeError(`the server sent an unreadable minimum transfer size "${text}"`);
  return units;
}

export interface PlannedBatch {
  batchId: string;
  index: number;
  transfers: Transfer[];
  units: bigint;
}

/** Full batches of `maxPerBatch` (the last one may be shorter), each with its deterministic id. */
export function planBatches(recipients: MergedRecipient[], maxPerBatch: number, runId: string): PlannedBatch[] {
  if (!Number.isInteger(maxPerBatch) || maxPerBatch < 1) throw new RangeError(`maxPerBatch must be a positive integer, got ${maxPerBatch}`);
  const batches: PlannedBatch[] = [];
  for (let start = 0; start < recipients.length; start += maxPerBatch) {
    const chunk = recipients.slice(start, start + maxPerBatch);
    const index = batches.length;
    batches.push({
      batchId: batchIdFor(runId, index),
      index,
      transfers: chunk.map((r) => ({ toAddress: r.toAddress, points: formatPoints(r.units) })),
      units: chunk.reduce((sum, r) => sum + r.units, 0n),
    });
  }
  return batches;
}

const ID_CHARACTERS = /^[A-Za-z0-9._:-]+$/;
/** 64 bits of keccak: collisions between run ids are out of reach in practice. */
const HASH_HEX_LENGTH = 16;

/**
 * `${runId}-${index}` when that is a valid batchId (1–64 of `A-Z a-z 0-9 . _ : -`). Otherwise a
 * readable prefix of the run id plus a hash of the whole run id, so distinct run ids that
 * sanitize or truncate alike still get distinct batch ids.
 */
export function batchIdFor(runId: string, index: number): string {
  if (runId === "") throw new RangeError("runId must not be empty");
  const suffix = `-${index}`;
  if (ID_CHARACTERS.test(runId) && runId.length + suffix.length <= ID_MAX_LENGTH) return `${runId}${suffix}`;
  const hash = keccak256(stringToHex(runId)).slice(2, 2 + HASH_HEX_LENGTH);
  const room = Math.max(0, ID_MAX_LENGTH - suffix.length - HASH_HEX_LENGTH - 1);
  const readable = runId.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, room);
  return `${readable}.${hash}${suffix}`;
}
