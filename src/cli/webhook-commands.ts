import type { ParseArgsConfig } from "node:util";
import {
  PointsClient,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
  type WebhookEndpointChange,
  type WebhookEventType,
  WEBHOOK_DELIVERY_STATUSES,
} from "../client/index.js";
import { UsageError } from "./commands.js";
import { type ClientCommand, parse, required, wholeNumber, clientFor, reportingFailures, printJson, usage } from "./client-common.js";

/** `points-ledger webhooks …`: the contract's webhook endpoints and their deliveries, through the client. */

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
export const webhooks: ClientCommand = async (argv) => {
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
