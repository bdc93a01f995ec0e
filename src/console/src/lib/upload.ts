import {
  mergeTransfers,
  minimumUnitsOf,
  parseTransferFile,
  planBatches,
  type Parameters,
  type PlannedBatch,
  type PointType,
  type TransferLine,
} from "../../../client/index.js";
import { formatPoints } from "../../../domain/points.js";
import { unitsOf } from "./amounts.js";

/**
 * In-browser validation of a distribution file, with the very functions the CLI and submitAll
 * use (parseTransferFile for the shape, mergeTransfers for the server's rules, planBatches for
 * the split), so the console accepts exactly what the service will.
 */

export interface BadLine {
  /** 1-based line of the file. */
  line: number;
  reason: string;
}

export interface DistributionPreview {
  format: "csv" | "jsonl";
  /** Every bad line, in file order. */
  badLines: BadLine[];
  /** The good lines, as read (before merging): what submitAll is given. */
  transfers: TransferLine[];
  /** Distinct recipients after merging repeated addresses. */
  recipients: number;
  /** Lines folded into an earlier line of the same recipient. */
  mergedDuplicates: number;
  /** Exact total of the good lines. */
  totalPoints: string;
  availablePoints: string;
  /** The total is more than the contract has available of this point type. */
  overAvailable: boolean;
  /** Full batches of MAX_TRANSFERS_PER_BATCH, with the ids they will be sent under. */
  batches: PlannedBatch[];
}

export interface PreviewInput {
  text: string;
  parameters: Parameters;
  pointType: PointType;
  contractAddress: string;
  availablePoints: string;
  runId: string;
}

export function previewDistribution(input: PreviewInput): DistributionPreview {
  const file = parseTransferFile(input.text);
  const merged = mergeTransfers(file.transfers, {
    contractAddress: input.contractAddress,
    minimumUnits: minimumUnitsOf(input.parameters, input.pointType),
  });
  // mergeTransfers numbers items by their index among the parsed lines; map back to file lines.
  const ruleErrors = merged.errors.map((error) => ({ line: file.transfers[error.index]!.line, reason: error.message }));
  const badLines = [...file.errors.map((error) => ({ line: error.line, reason: error.message })), ...ruleErrors].sort(
    (a, b) => a.line - b.line,
  );
  // A recipient's first line is a good line; an error on any other line rejected that line.
  const firstLines = new Set(merged.recipients.map((recipient) => recipient.firstIndex));
  const rejectedLines = merged.errors.filter((error) => !firstLines.has(error.index)).length;
  return {
    format: file.format,
    badLines,
    transfers: file.transfers,
    recipients: merged.recipients.length,
    mergedDuplicates: merged.inputTransfers - rejectedLines - merged.recipients.length,
    totalPoints: formatPoints(merged.totalUnits),
    availablePoints: input.availablePoints,
    overAvailable: merged.totalUnits > unitsOf(input.availablePoints),
    batches: badLines.length === 0 ? planBatches(merged.recipients, input.parameters.MAX_TRANSFERS_PER_BATCH, input.runId) : [],
  };
}

/** A run id for a new upload: readable, unique, and a valid batchId prefix. */
export function newRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `console-${stamp}-${random}`;
}
