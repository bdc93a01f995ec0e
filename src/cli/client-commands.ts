import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  PointsApiError,
  PointsClient,
  PointsInputError,
  PointsNetworkError,
  PublicClient,
  BATCH_STATUSES,
  consoleLoginUrl,
  mergeTransfers,
  minimumUnitsOf,
  parseTransferFile,
  planBatches,
  type Batch,
  type BatchStatus,
  type EventType,
  type LineError,
  type Parameters,
  type PointType,
  type SubmitAllSummary,
  type SubmitProgress,
  type Transfer,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
  type WebhookEndpointChange,
  type WebhookEventType,
  type OperatorCredential,
  type ApiKey,
  type ApiKeyScope,
  type Balance,
  type BalanceAsOf,
  type LeaderboardEntry,
  type LeaderboardPage,
  WEBHOOK_DELIVERY_STATUSES,
  throughText,
} from "../client/index.js";
import { formatPoints } from "../domain/points.js";
import { parseAddress } from "../domain/address.js";
import { UsageError } from "./commands.js";
import { readableDetails, refusal } from "./report.js";

/**
 * The operator's commands: they talk to a running service over HTTP through the client, like
 * any integration would. Each parses its own raw arguments.
 */
export type ClientCommand = (argv: string[]) => Promise<number>;

export const CLIENT_USAGE = `
Operator commands (talk to a running service; operator key from OPERATOR_PRIVATE_KEY, else the token in POINTS_LEDGER_TOKEN,
else an API key in POINTS_LEDGER_API_KEY):
  login --contract <addr> [--key-file <file>] [--export] [--url …]
                                          sign in as the operator (key from --key-file or OPERATOR_PRIVATE_KEY) and print
                                          a bearer token; --export prints \`export POINTS_LEDGER_TOKEN=…\` to eval
  sign-message <message>                  sign a message with OPERATOR_PRIVATE_KEY (ERC-191), e.g. a challenge's
  dev-key                                 print a fresh operator key and its address as shell lines to eval
                                          (for trying things locally, not for production)
  submit --contract <addr> --file <transfers.csv|.jsonl> [--run-id <id>] [--point-type T (default: the service's first)]
         [--seconds-to-finalize <s>] [--url http://127.0.0.1:8080] [--dry-run]
                                          validate the whole file, then send it in batches; a rerun resumes
  batches list --contract <addr> [--status S] [--point-type T] [--sort ASC|DESC] [--limit N] [--json]
  batches show <batchId> --contract <addr>
  batches cancel <batchId> --contract <addr>
  balances --contract <addr> [--as-of <iso>] [--json]
                                          the contract's balances of every point type the service has
                                          (--as-of: as they stood at that time, e.g. 2026-11-30T23:59:59Z)
  leaderboard --contract <addr> --point-type T [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--limit N] [--all] [--json]
                                          the addresses the contract's finalized transfers of T reached, most points first
                                          (--from/--to: whole UTC days, --to exclusive; --limit: entries per page, default 100;
                                          --all: every page)
  rank <address> --contract <addr> --point-type T [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--json]
                                          one address's rank and points on that leaderboard
  events tail --contract <addr> [--types batch.accepted,…] [--after <cursor>] [--follow]
                                          one JSON line per event; at the end (or Ctrl-C) the cursor to resume from
  webhooks list|create|show|update|delete|rotate|test|deliveries|retry|recover --contract <addr> [--service-url …]
    webhooks create --url <https://…> [--types batch.finalized,…] [--description D]   prints the endpoint and its secret (shown once)
    webhooks show|delete|rotate|test <endpointId>
    webhooks update <endpointId> [--url …] [--types T,…|all] [--description D] [--enable|--disable]
    webhooks deliveries <endpointId> [--status PENDING|SUCCEEDED|FAILED] [--limit N] [--json]
    webhooks retry <endpointId> <deliveryId>        send one delivery again now
    webhooks recover <endpointId> --since <iso>     queue again every FAILED delivery since then
                                          (--url is the endpoint's address here; the service's is --service-url)
  api-keys create --name <name> --scopes submit,read [--expires <iso>] --contract <addr>
                                          prints the key and its secret (shown once; the operator's credential only)
  api-keys list --contract <addr> [--json]   api-keys show|revoke <keyId> --contract <addr>
  console-login --contract <addr> [--url …]
                                          print a one-time link that signs the web console in (expires with the challenge)
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

/**
 * --point-type, checked against the service's POINT_TYPES (GET /v1/parameters); absent, the
 * first of them. With no parameters (the service did not answer and the file is rejected for its
 * own errors) nothing can be checked.
 */
function pointTypeOf(value: string | boolean | undefined, parameters: Parameters | null): PointType {
  const requested = typeof value === "string" ? value : undefined;
  if (parameters === null) return requested ?? "";
  const known = parameters.POINT_TYPES;
  if (requested === undefined) return known[0] ?? "";
  if (!known.includes(requested)) throw new UsageError(`--point-type must be one of the service's point types: ${known.join(", ")}`);
  return requested;
}

function wholeNumber(value: string | boolean | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^[0-9]{1,9}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

const KEY_PATTERN = /^0x[0-9a-fA-F]{64}$/;

function operatorKey(): `0x${string}` {
  const key = process.env.OPERATOR_PRIVATE_KEY ?? "";
  if (!KEY_PATTERN.test(key)) throw new UsageError("OPERATOR_PRIVATE_KEY must be set to the operator's 0x-prefixed 32-byte private key");
  return key as `0x${string}`;
}

/**
 * A token from `points-ledger login` carries no expiry of its own here: it is used until the
 * service refuses it (401), and the client then says to sign in again.
 */
const TOKEN_EXPIRY_UNKNOWN = "9999-12-31T23:59:59.000Z";

/**
 * The credential of a contract command: the operator key when OPERATOR_PRIVATE_KEY is set (the
 * client renews its own tokens with it), else the bearer token of `points-ledger login --export`
 * in POINTS_LEDGER_TOKEN, else an API key in POINTS_LEDGER_API_KEY (a backend's: limited to its
 * scopes, and never the operator's key).
 */
function contractCredential(): { operator: OperatorCredential } | { apiKey: string } {
  const token = process.env.POINTS_LEDGER_TOKEN ?? "";
  const apiKey = process.env.POINTS_LEDGER_API_KEY ?? "";
  if (process.env.OPERATOR_PRIVATE_KEY) return { operator: operatorKey() };
  if (token !== "") return { operator: { bearerToken: token, expiresAt: TOKEN_EXPIRY_UNKNOWN } };
  if (apiKey !== "") return { apiKey };
  throw new UsageError(
    "set OPERATOR_PRIVATE_KEY to the operator's 0x-prefixed 32-byte private key, POINTS_LEDGER_TOKEN to a token from `points-ledger login`, or POINTS_LEDGER_API_KEY to an API key",
  );
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
  return new PointsClient({ baseUrl: urlOf(values), contractAddress: contractOf(values.contract), ...contractCredential() });
}

/** API and network failures end a command with exit code 1 and a readable line, not a stack. */
async function reportingFailures(run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PointsApiError) {
      console.error(`points-ledger: ${refusal(error.code, error.status, error.message, error.details)}`);
      return 1;
    }
    if (error instanceof PointsNetworkError || error instanceof PointsInputError) {
      console.error(`points-ledger: ${error.message}${error instanceof PointsInputError ? readableDetails(error.details) : ""}`);
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
  values: {
    status?: string | boolean;
    "point-type"?: string | boolean;
    sort?: string | boolean;
    limit?: string | boolean;
    json?: string | boolean;
  },
): Promise<number> {
  const status = typeof values.status === "string" ? values.status : undefined;
  if (status !== undefined && !(BATCH_STATUSES as readonly string[]).includes(status))
    throw new UsageError(`--status must be one of ${BATCH_STATUSES.join(", ")}`);
  const sort = typeof values.sort === "string" ? values.sort.toUpperCase() : "DESC";
  if (sort !== "ASC" && sort !== "DESC") throw new UsageError("--sort must be ASC or DESC");
  const limit = wholeNumber(values.limit, "limit") ?? 100;
  const filter = {
    status: status as BatchStatus | undefined,
    pointType: values["point-type"] === undefined ? undefined : pointTypeOf(values["point-type"], await client.cachedParameters()),
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
  return [
    batch.id,
    batch.status,
    batch.pointType,
    batch.points,
    `${batch.transferCount} transfers`,
    `created ${batch.createdAt}`,
    `finalizeAt ${batch.finalizeAt}`,
  ].join("  ");
}

const balances: ClientCommand = async (argv) => {
  const { values } = parse(argv, { json: { type: "boolean" }, "as-of": { type: "string" } });
  if (values.help) return usage();
  const client = clientFor(values);
  // The service checks the time (400 naming asOf: no zone, in the future), so the CLI takes it as written.
  const asOf = typeof values["as-of"] === "string" ? values["as-of"] : undefined;
  return reportingFailures(async () => {
    const result: Record<string, BalanceAsOf & Partial<Pick<Balance, "byAsset">>> = await client.getBalances({ asOf });
    if (values.json) {
      console.log(JSON.stringify(result, null, 2));
      return 0;
    }
    console.log(`balances of ${client.contractAddress}${asOf === undefined ? "" : ` as of ${asOf}`}`);
    for (const [pointType, b] of Object.entries(result)) {
      const assets = Object.entries(b.byAsset ?? {})
        .filter(([, earned]) => earned.earnedCumulative !== "0")
        .map(([asset, earned]) => `${asset} ${earned.earnedCumulative} (block ${earned.earnedCumulativeBlock})`);
      console.log(
        `  ${pointType}: available ${b.available}, pendingSent ${b.pendingSent}, earned ${b.earnedCumulative}, ` +
          `received ${b.receivedCumulative}, finalizedSent ${b.finalizedSentCumulative}` +
          (assets.length > 0 ? `; by asset: ${assets.join(", ")}` : ""),
      );
    }
    return 0;
  });
};

const events: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, { types: { type: "string" }, after: { type: "string" }, follow: { type: "boolean" } });
  if (values.help) return usage();
  if (positionals[0] !== "tail" || positionals.length > 1) {
    throw new UsageError("usage: events tail --contract <addr> [--types T,…] [--after <cursor>] [--follow]");
  }
  const client = clientFor(values);
  // The server checks the names (400 naming `types`), so the CLI never lags behind its list.
  const types = typeof values.types === "string" ? (values.types.split(",") as EventType[]) : undefined;
  const after = typeof values.after === "string" ? values.after : undefined;
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);
  const feed = client.events({ after, types, follow: values.follow === true, signal: stop.signal });
  try {
    return await reportingFailures(async () => {
      for await (const event of feed) console.log(JSON.stringify(event));
      return 0;
    });
  } finally {
    process.off("SIGINT", interrupt);
    process.off("SIGTERM", interrupt);
    // On stderr, so stdout stays one JSON event per line.
    if (feed.cursor !== undefined) console.error(`cursor: ${feed.cursor} (resume with --after ${feed.cursor})`);
  }
};

const WEBHOOKS_USAGE =
  "usage: webhooks list | create --url <u> [--types T,…] [--description D] | show <id> | update <id> [--url …] [--types T,…|all] " +
  "[--description D] [--enable|--disable] | delete <id> | rotate <id> | test <id> | deliveries <id> [--status S] [--limit N] [--json] | " +
  "retry <endpointId> <deliveryId> | recover <id> --since <iso>  --contract <addr> [--service-url …]";

const webhookOptions = {
  "service-url": { type: "string" },
  types: { type: "string" },
  description: { type: "string" },
  enable: { type: "boolean" },
  disable: { type: "boolean" },
  status: { type: "string" },
  limit: { type: "string" },
  since: { type: "string" },
  json: { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

type WebhookValues = ReturnType<typeof parse<typeof webhookOptions>>["values"];
type WebhookAction = (client: PointsClient, ids: string[], values: WebhookValues) => Promise<number>;

function printJson(value: unknown): number {
  console.log(JSON.stringify(value, null, 2));
  return 0;
}

/** The service checks each name (400 naming `types`), so the CLI never lags behind its list. */
function typesOf(value: string | boolean | undefined): WebhookEventType[] | undefined {
  return typeof value === "string" ? (value.split(",") as WebhookEventType[]) : undefined;
}

function endpointLine(endpoint: WebhookEndpoint): string {
  const state = endpoint.disabled ? `DISABLED (${endpoint.disabledReason ?? "no reason"})` : "enabled";
  return [endpoint.id, endpoint.url, state, endpoint.types.join(","), endpoint.description ?? ""].join("  ").trimEnd();
}

function deliveryLine(delivery: WebhookDelivery): string {
  const last = delivery.attempts.at(-1);
  const answer = last === undefined ? "not sent yet" : `last ${last.at} → ${last.statusCode ?? last.error ?? "no answer"}`;
  const next = delivery.nextAttemptAt === null ? "" : `next ${delivery.nextAttemptAt}`;
  return [delivery.id, delivery.status, delivery.eventType, delivery.eventId, `${delivery.attempts.length} attempt(s)`, answer, next]
    .join("  ")
    .trimEnd();
}

/** --description "" clears it (null); absent leaves it. */
function descriptionOf(value: string | boolean | undefined): string | null | undefined {
  if (typeof value !== "string") return undefined;
  return value === "" ? null : value;
}

function changeOf(values: WebhookValues, endpointUrl: string | undefined): WebhookEndpointChange {
  if (values.enable && values.disable) throw new UsageError("--enable and --disable exclude each other");
  const change: WebhookEndpointChange = {
    url: endpointUrl,
    types: values.types === "all" ? null : typesOf(values.types),
    description: descriptionOf(values.description),
    disabled: values.enable ? false : values.disable ? true : undefined,
  };
  const given = Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined)) as WebhookEndpointChange;
  if (Object.keys(given).length === 0)
    throw new UsageError("update needs at least one of --url, --types, --description, --enable, --disable");
  return given;
}

async function listDeliveries(client: PointsClient, endpointId: string, values: WebhookValues): Promise<number> {
  const status = typeof values.status === "string" ? values.status : undefined;
  if (status !== undefined && !(WEBHOOK_DELIVERY_STATUSES as readonly string[]).includes(status)) {
    throw new UsageError(`--status must be one of ${WEBHOOK_DELIVERY_STATUSES.join(", ")}`);
  }
  const limit = wholeNumber(values.limit, "limit") ?? 50;
  let shown = 0;
  for await (const delivery of client.webhookDeliveries(endpointId, {
    status: status as WebhookDeliveryStatus | undefined,
    pageSize: limit,
  })) {
    if (shown >= limit) break;
    console.log(values.json ? JSON.stringify(delivery) : deliveryLine(delivery));
    shown++;
  }
  if (!values.json) console.error(`${shown} delivery(ies), newest first${shown === limit ? ` (--limit ${limit}; there may be more)` : ""}`);
  return 0;
}

/** Each action with the number of ids it takes after its name. */
function webhookActions(endpointUrl: string | undefined): Record<string, { ids: number; run: WebhookAction }> {
  return {
    list: {
      ids: 0,
      run: async (client, _, values) => {
        const endpoints = await client.listWebhookEndpoints();
        if (values.json) return printJson(endpoints);
        for (const endpoint of endpoints) console.log(endpointLine(endpoint));
        console.error(`${endpoints.length} endpoint(s)`);
        return 0;
      },
    },
    create: {
      ids: 0,
      run: async (client, _, values) => {
        const url = required(endpointUrl, "url");
        const created = await client.createWebhookEndpoint({
          url,
          types: typesOf(values.types),
          description: descriptionOf(values.description),
        });
        console.error("keep the secret: it is shown only now (and on rotate)");
        return printJson(created);
      },
    },
    show: { ids: 1, run: async (client, [id]) => printJson(await client.getWebhookEndpoint(id!)) },
    update: {
      ids: 1,
      run: async (client, [id], values) => printJson(await client.updateWebhookEndpoint(id!, changeOf(values, endpointUrl))),
    },
    delete: {
      ids: 1,
      run: async (client, [id]) => {
        await client.deleteWebhookEndpoint(id!);
        console.log(`endpoint ${id} deleted`);
        return 0;
      },
    },
    rotate: {
      ids: 1,
      run: async (client, [id]) => {
        console.error("the old secret keeps signing beside the new one for 24 hours");
        return printJson(await client.rotateWebhookSecret(id!));
      },
    },
    test: { ids: 1, run: async (client, [id]) => printJson(await client.testWebhookEndpoint(id!)) },
    deliveries: { ids: 1, run: (client, [id], values) => listDeliveries(client, id!, values) },
    retry: { ids: 2, run: async (client, [id, deliveryId]) => printJson(await client.retryWebhookDelivery(id!, deliveryId!)) },
    recover: {
      ids: 1,
      run: async (client, [id], values) => {
        const since = required(values.since, "since");
        if (Number.isNaN(Date.parse(since))) throw new UsageError(`--since ${since} is not an ISO 8601 time`);
        console.log(`requeued ${await client.recoverWebhookDeliveries(id!, since)} FAILED delivery(ies)`);
        return 0;
      },
    },
  };
}

/**
 * `webhooks …`: the contract's webhook endpoints and their deliveries. Here --url is the
 * endpoint's address (create, update), so the service's comes from --service-url or
 * POINTS_LEDGER_URL.
 */
const webhooks: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, webhookOptions);
  if (values.help) return usage();
  const [action, ...ids] = positionals;
  const endpointUrl = typeof values.url === "string" ? values.url : undefined;
  const chosen = action === undefined ? undefined : webhookActions(endpointUrl)[action];
  if (chosen === undefined || ids.length !== chosen.ids) throw new UsageError(WEBHOOKS_USAGE);
  if (endpointUrl !== undefined && action !== "create" && action !== "update") {
    throw new UsageError("--url is the endpoint's address (create, update); the service's is --service-url or POINTS_LEDGER_URL");
  }
  const client = clientFor({ contract: values.contract, url: values["service-url"] });
  return reportingFailures(() => chosen.run(client, ids, values));
};
function usage(): number {
  console.log(CLIENT_USAGE.trim());
  return 0;
}

/**
 * Signs a fresh challenge with OPERATOR_PRIVATE_KEY and prints the console link that solves it
 * (src/client/console-login.ts): single use, valid for CHALLENGE_TTL_SECONDS, and no token
 * exists until the browser opens it.
 */
const consoleLogin: ClientCommand = async (argv) => {
  const { values } = parse(argv, {});
  const key = operatorKey();
  const contractAddress = contractOf(values.contract);
  const baseUrl = urlOf(values);
  return reportingFailures(async () => {
    const account = privateKeyToAccount(key);
    const service = new PublicClient({ baseUrl });
    const challenge = await service.requestChallenge(contractAddress, account.address);
    const signature = await account.signMessage({ message: challenge.message });
    const parameters = await service.getParameters();
    console.log(consoleLoginUrl(baseUrl, { contractAddress, challengeData: challenge.challengeData, signature }));
    console.error(`open it within ${parameters.CHALLENGE_TTL_SECONDS} s; it signs in once`);
    return 0;
  });
};

/** --key-file's contents (surrounding whitespace ignored), else OPERATOR_PRIVATE_KEY. */
function loginKey(keyFile: string | boolean | undefined): `0x${string}` {
  if (typeof keyFile !== "string") return operatorKey();
  let key: string;
  try {
    key = readFileSync(keyFile, "utf8").trim();
  } catch (error) {
    throw new UsageError(`cannot read ${keyFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (!KEY_PATTERN.test(key)) throw new UsageError(`${keyFile} must hold the operator's 0x-prefixed 32-byte private key`);
  return key as `0x${string}`;
}

/**
 * Signs in as the contract's operator and prints the bearer token, for curl and for the other
 * commands (POINTS_LEDGER_TOKEN); `--export` prints it as a shell line to eval.
 */
const login: ClientCommand = async (argv) => {
  const { values } = parse(argv, { "key-file": { type: "string" }, export: { type: "boolean" } });
  if (values.help) return usage();
  const contractAddress = contractOf(values.contract);
  const key = loginKey(values["key-file"]);
  return reportingFailures(async () => {
    const client = new PointsClient({ baseUrl: urlOf(values), contractAddress, operator: key });
    const session = await client.signIn();
    console.log(values.export ? `export POINTS_LEDGER_TOKEN=${session.bearerToken}` : session.bearerToken);
    console.error(`signed in as ${client.operatorAddress ?? ""} for ${client.contractAddress}; the token expires at ${session.expiresAt}`);
    return 0;
  });
};

const DEV_KEY_WARNING = "for trying points-ledger locally only, NOT for production: this key was printed in clear";

/** A fresh operator key and its address, as shell lines to eval. */
const devKey: ClientCommand = async (argv) => {
  const { values } = parse(argv, {});
  if (values.help) return usage();
  const key = generatePrivateKey();
  console.log(`# ${DEV_KEY_WARNING}\nexport OPERATOR_PRIVATE_KEY=${key}\nexport OPERATOR=${privateKeyToAccount(key).address}`);
  console.error(`points-ledger dev-key: ${DEV_KEY_WARNING}`);
  return 0;
};

/**
 * Signs one message with OPERATOR_PRIVATE_KEY (ERC-191 personal_sign) and prints the signature:
 * the middle step of signing in by hand with curl (challenge, sign, solve).
 */
const signMessage: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (values.help) return usage();
  if (positionals.length !== 1) throw new UsageError("usage: sign-message <message>");
  console.log(await privateKeyToAccount(operatorKey()).signMessage({ message: positionals[0]! }));
  return 0;
};

const API_KEYS_USAGE =
  "usage: api-keys create --name <name> --scopes read,submit,cancel,webhooks [--expires <iso>] | list [--json] | show <keyId> | revoke <keyId>";

function apiKeyLine(key: ApiKey): string {
  const state =
    key.revokedAt !== null
      ? `revoked ${key.revokedAt} (${key.revokedReason ?? ""})`
      : key.expiresAt !== null
        ? `expires ${key.expiresAt}`
        : "active";
  return `${key.id}  ${key.prefix}…  ${key.scopes.join(",")}  ${state}  last used ${key.lastUsedAt ?? "never"}  ${key.name}`;
}

/** `api-keys …`: the contract's API keys (operator only). The secret is printed once, on stdout, alone. */
const apiKeys: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, {
    name: { type: "string" },
    scopes: { type: "string" },
    expires: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return usage();
  const [action, ...ids] = positionals;
  const wanted = { create: 0, list: 0, show: 1, revoke: 1 }[action ?? ""];
  if (wanted === undefined || ids.length !== wanted) throw new UsageError(API_KEYS_USAGE);
  const client = clientFor(values);
  return reportingFailures(async () => {
    if (action === "create") {
      const scopes = required(values.scopes, "scopes").split(",") as ApiKeyScope[];
      const expiresAt = typeof values.expires === "string" ? values.expires : null;
      const { apiKey, secret } = await client.apiKeys.create({ name: required(values.name, "name"), scopes, expiresAt });
      console.error(`created ${apiKeyLine(apiKey)}\nthe secret below is shown only now: keep it in your secret store`);
      console.log(secret);
      return 0;
    }
    if (action === "list") {
      const keys = await client.apiKeys.list();
      for (const key of keys) console.log(values.json ? JSON.stringify(key) : apiKeyLine(key));
      return 0;
    }
    const key = action === "show" ? await client.apiKeys.get(ids[0]!) : await client.apiKeys.revoke(ids[0]!);
    console.log(values.json ? JSON.stringify(key) : apiKeyLine(key));
    return 0;
  });
};

const boardOptions = {
  "point-type": { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  json: { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

/** --point-type (required: a board is of one type) and the window; the service checks the days (400 naming from or to). */
function boardQueryOf(values: { "point-type"?: string | boolean; from?: string | boolean; to?: string | boolean }) {
  return {
    pointType: required(values["point-type"], "point-type"),
    from: typeof values.from === "string" ? values.from : undefined,
    to: typeof values.to === "string" ? values.to : undefined,
  };
}

function windowText(page: Pick<LeaderboardPage, "from" | "to">): string {
  if (page.from === null && page.to === null) return "all time";
  return `${page.from ?? "the start"} to ${page.to ?? "now"} (exclusive)`;
}

/**
 * Table lines: rank, address, points. Widths come from the board (its participants), not from a
 * page, so the pages of --all line up; points go last, left-aligned, as the other commands print them.
 */
function boardLines(entries: readonly LeaderboardEntry[], participants: number): string[] {
  const rankWidth = Math.max("rank".length, String(participants).length);
  return entries.map((entry) => `${String(entry.rank).padStart(rankWidth)}  ${entry.address}  ${entry.points}`);
}

function boardHeader(participants: number): string {
  return `${"rank".padStart(Math.max(4, String(participants).length))}  ${"address".padEnd(42)}  points`;
}

/**
 * `leaderboard`: one page (--limit entries, default 100) or, with --all, the whole board, read
 * page by page; --json prints one JSON entry per line.
 */
const leaderboard: ClientCommand = async (argv) => {
  const { values } = parse(argv, { ...boardOptions, limit: { type: "string" }, all: { type: "boolean" } });
  if (values.help) return usage();
  const query = { ...boardQueryOf(values), limit: wholeNumber(values.limit, "limit") };
  const client = clientFor(values);
  return reportingFailures(async () => {
    const first = await client.leaderboardPage(query);
    if (!values.json) {
      console.log(
        `leaderboard of ${client.contractAddress}, ${first.pointType}, ${windowText(first)}: ${first.participants} participant(s), ${throughText(first.through)}`,
      );
      console.log(boardHeader(first.participants));
    }
    let shown = 0;
    let cursor = first.cursor;
    let page: LeaderboardPage = first;
    for (;;) {
      const lines = values.json ? page.entries.map((entry) => JSON.stringify(entry)) : boardLines(page.entries, first.participants);
      for (const line of lines) console.log(line);
      shown += page.entries.length;
      if (!values.all || cursor === null) break;
      page = await client.leaderboardPage({ ...query, cursor });
      cursor = page.cursor;
    }
    if (!values.json && cursor !== null) console.error(`${shown} shown; more with --all (or a larger --limit)`);
    return 0;
  });
};

/** `rank <address>`: the address's rank, points and the board's participants. */
const rank: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, boardOptions);
  if (values.help) return usage();
  if (positionals.length !== 1) throw new UsageError("usage: rank <address> --contract <addr> --point-type T [--from D] [--to D]");
  const address = positionals[0]!;
  if (parseAddress(address) === null) throw new UsageError(`${address} is not a valid address`);
  const query = boardQueryOf(values);
  const client = clientFor(values);
  return reportingFailures(async () => {
    const standing = await client.rank(address, query);
    if (values.json) return printJson(standing);
    const place = standing.rank === null ? "not ranked" : `rank ${standing.rank} of ${standing.participants}`;
    console.log(`${standing.address}: ${place}, ${standing.points} ${query.pointType}, ${throughText(standing.through)}`);
    return 0;
  });
};

export const clientCommands: Record<string, ClientCommand> = {
  leaderboard,
  rank,
  "api-keys": apiKeys,
  login,
  "sign-message": signMessage,
  "dev-key": devKey,
  submit,
  batches,
  balances,
  events,
  webhooks,
  "console-login": consoleLogin,
};
