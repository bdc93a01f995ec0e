import {
  PointsClient,
  BATCH_STATUSES,
  type Batch,
  type BatchStatus,
  type EventType,
  type Balance,
  type BalanceAsOf,
} from "../client/index.js";
import { UsageError } from "./commands.js";
import { type ClientCommand, parse, pointTypeOf, wholeNumber, clientFor, reportingFailures, usage } from "./client-common.js";

/** `points-ledger batches|balances|events`: the contract's batches, balances and event log, read (and batches cancelled) through the client. */

export const batches: ClientCommand = async (argv) => {
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

export const balances: ClientCommand = async (argv) => {
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

export const events: ClientCommand = async (argv) => {
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
