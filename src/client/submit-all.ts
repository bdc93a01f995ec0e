import { formatPoints } from "../domain/points.js";
import type { PointsClient } from "./client.js";
import { PointsInputError } from "./errors.js";
import { mergeTransfers, minimumUnitsOf, planBatches, type PlannedBatch } from "./plan.js";
import type { Parameters, PointType, SubmitResult, Transfer } from "./types.js";

export interface SubmitAllOptions {
  /**
   * Names the distribution. Batch ids derive from it and the chunk index, so calling again with
   * the same runId and the same transfers resumes: batches already stored are not sent twice.
   */
  runId: string;
  pointType: PointType;
  /** Absent means the server's DEFAULT_FINALIZE_SECONDS. */
  secondsToFinalize?: number;
  onProgress?: (progress: SubmitProgress) => void;
  /** Batches in flight at once. Default 2. */
  concurrency?: number;
}

export interface SubmitProgress {
  batchId: string;
  /** true: stored by this call; false: the service already had it (resumed run, lost answer). */
  created: boolean;
  batchesDone: number;
  batchesTotal: number;
  transfersDone: number;
  transfersTotal: number;
}

export interface SubmitAllSummary {
  runId: string;
  pointType: PointType;
  /** Transfers given, before merging. */
  inputTransfers: number;
  /** Distinct recipients: the transfers actually sent. */
  recipients: number;
  /** Sum of all points, exact. */
  totalPoints: string;
  batchIds: string[];
  batchesCreated: number;
  /** Batches found already stored with the same content (from an earlier run or attempt). */
  batchesAlreadyStored: number;
  /** Already-stored batches that are not going to deliver (cancelled meanwhile), by id. */
  cancelledBatchIds: string[];
}

const DEFAULT_CONCURRENCY = 2;
const MAX_CONCURRENCY = 16;

export async function submitAll(
  client: PointsClient,
  transfers: Iterable<Transfer>,
  options: SubmitAllOptions,
  parameters: Parameters,
): Promise<SubmitAllSummary> {
  const merged = mergeTransfers(transfers, {
    contractAddress: client.contractAddress,
    minimumUnits: minimumUnitsOf(parameters, options.pointType),
  });
  if (merged.errors.length > 0) {
    throw new PointsInputError(merged.errors.map((e) => ({ path: `transfers[${e.index}]`, message: e.message })));
  }
  const plan = planBatches(merged.recipients, parameters.MAX_TRANSFERS_PER_BATCH, options.runId);
  const results = await sendPlan(client, plan, options, merged.recipients.length);
  const existing = results.filter((r) => !r.created);
  return {
    runId: options.runId,
    pointType: options.pointType,
    inputTransfers: merged.inputTransfers,
    recipients: merged.recipients.length,
    totalPoints: formatPoints(merged.totalUnits),
    batchIds: plan.map((b) => b.batchId),
    batchesCreated: results.length - existing.length,
    batchesAlreadyStored: existing.length,
    cancelledBatchIds: existing.filter((r) => r.status === "CANCELLED").map((r) => r.batchId),
  };
}

/**
 * Sends planned batches with a few in flight. On the first failure no new batch starts; the
 * ones in flight finish, then the error is thrown (a rerun with the same runId resumes).
 */
async function sendPlan(
  client: PointsClient,
  plan: PlannedBatch[],
  options: SubmitAllOptions,
  transfersTotal: number,
): Promise<SubmitResult[]> {
  const results: SubmitResult[] = new Array(plan.length);
  const concurrency = Math.min(MAX_CONCURRENCY, Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY));
  let next = 0;
  let batchesDone = 0;
  let transfersDone = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && next < plan.length) {
      const batch = plan[next++]!;
      try {
        const request = { pointType: options.pointType, transfers: batch.transfers, secondsToFinalize: options.secondsToFinalize };
        const result = await client.submitBatch(batch.batchId, request);
        results[batch.index] = result;
        batchesDone++;
        transfersDone += batch.transfers.length;
        options.onProgress?.({
          batchId: batch.batchId,
          created: result.created,
          batchesDone,
          batchesTotal: plan.length,
          transfersDone,
          transfersTotal,
        });
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, plan.length) }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
