import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  PointsClient,
  PublicClient,
  mergeTransfers,
  minimumUnitsOf,
  parseTransferFile,
  planBatches,
  type LineError,
  type Parameters,
  type PointType,
  type SubmitAllSummary,
  type SubmitProgress,
  type Transfer,
} from "../client/index.js";
import { formatPoints } from "../domain/points.js";
import { parseAddress } from "../domain/address.js";
import { UsageError } from "./commands.js";
import {
  type ClientCommand,
  parse,
  required,
  pointTypeOf,
  wholeNumber,
  contractOf,
  urlOf,
  contractCredential,
  reportingFailures,
  usage,
} from "./client-common.js";

/** `points-ledger submit`: a transfer file validated whole, then sent in batches through the client (a rerun resumes). */

export const submit: ClientCommand = async (argv) => {
  const { values } = parse(argv, {
    file: { type: "string" },
    "run-id": { type: "string" },
    "point-type": { type: "string" },
    "seconds-to-finalize": { type: "string" },
    "dry-run": { type: "boolean" },
  });
  if (values.help) return usage();
  const file = required(values.file, "file");
  const contract = contractOf(values.contract);
  const secondsToFinalize = wholeNumber(values["seconds-to-finalize"], "seconds-to-finalize");
  const baseUrl = urlOf(values);
  const contents = readTransfersFile(file);
  return reportingFailures(async () => {
    const parsed = parseTransferFile(contents);
    const parameters = await parametersFor(new PublicClient({ baseUrl }), parsed.errors.length > 0);
    const pointType = pointTypeOf(values["point-type"], parameters);
    const runId = typeof values["run-id"] === "string" ? values["run-id"] : defaultRunId(contents, contract, pointType);
    const minimumUnits = parameters === null ? 1n : minimumUnitsOf(parameters, pointType);
    const errors = [...parsed.errors, ...valueErrors(parsed, contract, minimumUnits)];
    if (errors.length > 0) return rejectFile(file, errors);
    const transfers = parsed.transfers.map(({ toAddress, points }) => ({ toAddress, points }));
    console.error(`${file}: ${transfers.length} transfers valid; run id ${runId}`);
    if (values["dry-run"]) return printPlan(transfers, contract, parameters!, runId);
    // The key is needed only now: a file can be checked (and dry-run) without it.
    const client = new PointsClient({ baseUrl, contractAddress: contract, ...contractCredential() });
    const progress = progressReporter();
    const summary = await client.submitAll(transfers, { runId, pointType, secondsToFinalize, onProgress: progress.update });
    progress.end();
    printSummary(summary);
    return 0;
  });
};

function printSummary(summary: SubmitAllSummary): void {
  console.log(
    [
      `run ${summary.runId}: ${summary.totalPoints} ${summary.pointType} to ${summary.recipients} recipients ` +
        `(${summary.inputTransfers} lines, ${summary.inputTransfers - summary.recipients} repeated recipients merged)`,
      `batches: ${summary.batchIds.length} (${summary.batchesCreated} sent now, ${summary.batchesAlreadyStored} already stored by an earlier run)`,
      ...(summary.cancelledBatchIds.length > 0 ? [`warning: cancelled batches in this run: ${summary.cancelledBatchIds.join(", ")}`] : []),
    ].join("\n"),
  );
}

function printPlan(transfers: Transfer[], contract: string, parameters: Parameters, runId: string): number {
  const merged = mergeTransfers(transfers, { contractAddress: contract });
  const plan = planBatches(merged.recipients, parameters.MAX_TRANSFERS_PER_BATCH, runId);
  console.log(
    `dry run: ${formatPoints(merged.totalUnits)} points to ${merged.recipients.length} recipients in ${plan.length} batch(es); nothing was sent`,
  );
  for (const batch of plan) console.log(`  ${batch.batchId}  ${batch.transfers.length} transfers  ${formatPoints(batch.units)}`);
  return 0;
}

function readTransfersFile(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

/**
 * The server's minimum applies to each recipient's total. When the file is already known to be
 * bad, an unreachable server must not hide its bad lines: check everything else (null) and say so.
 */
async function parametersFor(client: PublicClient, fileHasErrors: boolean): Promise<Parameters | null> {
  try {
    return await client.getParameters();
  } catch (error) {
    if (!fileHasErrors) throw error;
    console.error("points-ledger: the service did not answer; minimum transfer sizes were not checked");
    return null;
  }
}

/** Same file, contract and point type → same run id, so rerunning after a crash resumes. */
function defaultRunId(contents: string, contract: string, pointType: PointType): string {
  const digest = createHash("sha256")
    .update(`${parseAddress(contract)}\n${pointType}\n`)
    .update(contents)
    .digest("hex");
  return `file-${digest.slice(0, 32)}`;
}

function valueErrors(parsed: ReturnType<typeof parseTransferFile>, contract: string, minimumUnits: bigint): LineError[] {
  const merged = mergeTransfers(parsed.transfers, { contractAddress: contract, minimumUnits });
  return merged.errors.map((e) => ({ line: parsed.transfers[e.index]!.line, message: e.message }));
}

function rejectFile(file: string, errors: LineError[]): number {
  errors.sort((a, b) => a.line - b.line);
  console.error(`${file}: ${errors.length} bad line(s); nothing was sent`);
  for (const error of errors) console.error(`  line ${error.line}: ${error.message}`);
  return 1;
}

/** A redrawn bar on a terminal; one plain line per batch otherwise (logs, CI, pipes). */
function progressReporter(): { update: (progress: SubmitProgress) => void; end: () => void } {
  const tty = process.stderr.isTTY === true;
  let drawn = false;
  return {
    update: (p) => {
      const counts = `${p.batchesDone}/${p.batchesTotal} batches, ${p.transfersDone}/${p.transfersTotal} transfers`;
      if (!tty) {
        console.error(`progress: ${counts} (${p.batchId} ${p.created ? "stored" : "already stored"})`);
        return;
      }
      const width = 30;
      const filled = Math.round((p.batchesDone / p.batchesTotal) * width);
      process.stderr.write(`\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${counts}`);
      drawn = true;
    },
    end: () => {
      if (drawn) process.stderr.write("\n");
    },
  };
}
