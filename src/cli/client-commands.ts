import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import {
  PointsApiError,
  PointsClient,
  PointsInputError,
  PointsNetworkError,
  PublicClient,
  POINT_TYPES,
  BATCH_STATUSES,
  mergeTransfers,
  minimumUnitsOf,
  parseTransferFile,
  planBatches,
  type Batch,
  type BatchStatus,
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

/**
 * The operator's commands: they talk to a running service over HTTP through the client, like
 * any integration would. Each parses its own raw arguments.
 */
export type ClientCommand = (argv: string[]) => Promise<number>;

export const CLIENT_USAGE = `
Operator commands (talk to a running service; operator key from OPERATOR_PRIVATE_KEY):
  submit --contract <addr> --file <transfers.csv|.jsonl> [--run-id <id>] [--point-type PHASE2_POINTS]
         [--seconds-to-finalize <s>] [--url http://127.0.0.1:8080] [--dry-run]
                                          validate the whole file, then send it in batches; a rerun resumes
  batches list --contract <addr> [--status S] [--point-type T] [--sort ASC|DESC] [--limit N] [--json]
  batches show <batchId> --contract <addr>
  batches cancel <batchId> --contract <addr>
  balances --contract <addr>              the contract's balances of both point types
  (the URL also comes from POINTS_LEDGER_URL)`;

const DEFAULT_URL = "http://127.0.0.1:8080";

const commonOptions = {
  contract: { type: "string" },
  url: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

function parse<O extends NonNullable<ParseArgsConfig["options"]>>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options: { ...commonOptions, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function required(value: string | boolean | undefined, name: string): string {
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

function pointTypeOf(value: string | boolean | undefined): PointType {
  const pointType = typeof value === "string" ? value : "PHASE2_POINTS";
  if (!(POINT_TYPES as readonly string[]).includes(pointType)) throw new UsageError(`--point-type must be one of ${POINT_TYPES.join(", ")}`);
  return pointType as PointType;
}

function wholeNumber(value: string | boolean | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^[0-9]{1,9}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

function operatorKey(): `0x${string}` {
  const key = process.env.OPERATOR_PRIVATE_KEY ?? "";
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new UsageError("OPERATOR_PRIVATE_KEY must be set to the operator's 0x-prefixed 32-byte private key");
  return key as `0x${string}`;
}

function contractOf(value: string | boolean | undefined): string {
  const contract = required(value, "contract");
  if (parseAddress(contract) === null) throw new UsageError(`--contract ${contract} is not a valid address`);
  return contract;
}

function urlOf(values: { url?: string | boolean | undefined }): string {
  return typeof values.url === "string" ? values.url : process.env.POINTS_LEDGER_URL || DEFAULT_URL;
}

function clientFor(values: { contract?: string | boolean | undefined; url?: string | boolean | undefined }): PointsClient {
  return new PointsClient({ baseUrl: urlOf(values), contractAddress: contractOf(values.contract), operator: operatorKey() });
}

/** API and network failures end a command with exit code 1 and a readable line, not a stack. */
async function reportingFailures(run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PointsApiError) {
      const details = error.details === undefined ? "" : ` ${JSON.stringify(error.details)}`;
      console.error(`points-ledger: ${error.code} (HTTP ${error.status}): ${error.message}${details}`);
      return 1;
    }
    if (error instanceof PointsNetworkError || error instanceof PointsInputError) {
      console.error(`points-ledger: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

const submit: ClientCommand = async (argv) => {
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
  const pointType = pointTypeOf(values["point-type"]);
  const secondsToFinalize = wholeNumber(values["seconds-to-finalize"], "seconds-to-finalize");
  const baseUrl = urlOf(values);
  const contents = readTransfersFile(file);
  const runId = typeof values["run-id"] === "string" ? values["run-id"] : defaultRunId(contents, contract, pointType);
  return reportingFailures(async () => {
    const parsed = parseTransferFile(contents);
    const parameters = await parametersFor(new PublicClient({ baseUrl }), parsed.errors.length > 0);
    const minimumUnits = parameters === null ? 1n : minimumUnitsOf(parameters, pointType);
    const errors = [...parsed.errors, ...valueErrors(parsed, contract, minimumUnits)];
    if (errors.length > 0) return rejectFile(file, errors);
    const transfers = parsed.transfers.map(({ toAddress, points }) => ({ toAddress, points }));
    console.error(`${file}: ${transfers.length} transfers valid; run id ${runId}`);
    if (values["dry-run"]) return printPlan(transfers, contract, parameters!, runId);
    // The key is needed only now: a file can be checked (and dry-run) without it.
    const client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey() });
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
  console.log(`dry run: ${formatPoints(merged.totalUnits)} points to ${merged.recipients.length} recipients in ${plan.length} batch(es); nothing was sent`);
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
  const digest = createHash("sha256").update(`${parseAddress(contract)}\n${pointType}\n`).update(contents).digest("hex");
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

const batches: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, {
    status: { type: "string" },
    "point-type": { type: "string" },
    sort: { type: "string" },
    limit: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return usage();
  const [action, batchId] = positionals;
  const client = clientFor(values);
  if (action === "list") return reportingFailures(() => listBatches(client, values));
  if ((action === "show" || action === "cancel") && batchId !== undefined) {
    return reportingFailures(async () => {
      const batch = action === "show" ? await client.getBatch(batchId) : await client.cancelBatch(batchId);
      if (action === "cancel") console.log(`batch ${batch.id} is ${batch.status}`);
      else console.log(JSON.stringify(batch, null, 2));
      return 0;
    });
  }
  throw new UsageError("usage: batches list | show <batchId> | cancel <batchId>  --contract <addr>");
};

async function listBatches(
  client: PointsClient,
  values: { status?: string | boolean; "point-type"?: string | boolean; sort?: string | boolean; limit?: string | boolean; json?: string | boolean },
): Promise<number> {
  const status = typeof values.status === "string" ? values.status : undefined;
  if (status !== undefined && !(BATCH_STATUSES as readonly string[]).includes(status)) throw new UsageError(`--status must be one of ${BATCH_STATUSES.join(", ")}`);
  const sort = typeof values.sort === "string" ? values.sort.toUpperCase() : "DESC";
  if (sort !== "ASC" && sort !== "DESC") throw new UsageError("--sort must be ASC or DESC");
  const limit = wholeNumber(values.limit, "limit") ?? 100;
  const filter = {
    status: status as BatchStatus | undefined,
    pointType: values["point-type"] === undefined ? undefined : pointTypeOf(values["point-type"]),
    sort: sort as "ASC" | "DESC",
    pageSize: Math.max(1, Math.min(limit, 1000)),
  };
  let shown = 0;
  for await (const batch of client.batches(filter)) {
    if (shown >= limit) break;
    console.log(values.json ? JSON.stringify(batch) : batchLine(batch));
    shown++;
  }
  if (!values.json) console.error(`${shown} batch(es)${shown === limit ? ` (--limit ${limit}; there may be more)` : ""}`);
  return 0;
}

function batchLine(batch: Batch): string {
  return [batch.id, batch.status, batch.pointType, batch.points, `${batch.transferCount} transfers`, `created ${batch.createdAt}`, `finalizeAt ${batch.finalizeAt}`].join("  ");
}

const balances: ClientCommand = async (argv) => {
  const { values } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return usage();
  const client = clientFor(values);
  return reportingFailures(async () => {
    const result = await client.getBalances();
    if (values.json) {
      console.log(JSON.stringify(result, null, 2));
      return 0;
    }
    console.log(`balances of ${client.contractAddress}`);
    for (const pointType of POINT_TYPES) {
      const b = result[pointType];
      console.log(
        `  ${pointType}: available ${b.available}, pendingSent ${b.pendingSent}, earned ${b.earnedCumulative}, ` +
          `received ${b.receivedCumulative}, finalizedSent ${b.finalizedSentCumulative}`,
      );
    }
    return 0;
  });
};

function usage(): number {
  console.log(CLIENT_USAGE.trim());
  return 0;
}

export const clientCommands: Record<string, ClientCommand> = { submit, batches, balances };
