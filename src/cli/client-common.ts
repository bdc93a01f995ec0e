import { parseArgs, type ParseArgsConfig } from "node:util";
import {
  PointsApiError,
  PointsClient,
  PointsInputError,
  PointsNetworkError,
  type Parameters,
  type PointType,
  type OperatorCredential,
} from "../client/index.js";
import { parseAddress } from "../domain/address.js";
import { UsageError } from "./commands.js";
import { readableDetails, refusal } from "./report.js";

/**
 * What the operator's commands share (./client-commands.ts lists them, one file per command
 * group): they talk to a running service over HTTP through the client, like any integration
 * would, and each parses its own raw arguments with these options, credentials and failure report.
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

/** What parse returns for a command's own options beside the common ones. */
export type ParsedArgs<O extends NonNullable<ParseArgsConfig["options"]>> = ReturnType<
  typeof parseArgs<{ args: string[]; options: typeof commonOptions & O; allowPositionals: true; strict: true }>
>;

export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(argv: string[], options: O): ParsedArgs<O> {
  try {
    return parseArgs({ args: argv, options: { ...commonOptions, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function required(value: string | boolean | undefined, name: string): string {
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

/**
 * --point-type, checked against the service's POINT_TYPES (GET /v1/parameters); absent, the
 * first of them. With no parameters (the service did not answer and the file is rejected for its
 * own errors) nothing can be checked.
 */
export function pointTypeOf(value: string | boolean | undefined, parameters: Parameters | null): PointType {
  const requested = typeof value === "string" ? value : undefined;
  if (parameters === null) return requested ?? "";
  const known = parameters.POINT_TYPES;
  if (requested === undefined) return known[0] ?? "";
  if (!known.includes(requested)) throw new UsageError(`--point-type must be one of the service's point types: ${known.join(", ")}`);
  return requested;
}

export function wholeNumber(value: string | boolean | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^[0-9]{1,9}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

export const KEY_PATTERN = /^0x[0-9a-fA-F]{64}$/;

export function operatorKey(): `0x${string}` {
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
export function contractCredential(): { operator: OperatorCredential } | { apiKey: string } {
  const token = process.env.POINTS_LEDGER_TOKEN ?? "";
  const apiKey = process.env.POINTS_LEDGER_API_KEY ?? "";
  if (process.env.OPERATOR_PRIVATE_KEY) return { operator: operatorKey() };
  if (token !== "") return { operator: { bearerToken: token, expiresAt: TOKEN_EXPIRY_UNKNOWN } };
  if (apiKey !== "") return { apiKey };
  throw new UsageError(
    "set OPERATOR_PRIVATE_KEY to the operator's 0x-prefixed 32-byte private key, POINTS_LEDGER_TOKEN to a token from `points-ledger login`, or POINTS_LEDGER_API_KEY to an API key",
  );
}

export function contractOf(value: string | boolean | undefined): string {
  const contract = required(value, "contract");
  if (parseAddress(contract) === null) throw new UsageError(`--contract ${contract} is not a valid address`);
  return contract;
}

export function urlOf(values: { url?: string | boolean | undefined }): string {
  return typeof values.url === "string" ? values.url : process.env.POINTS_LEDGER_URL || DEFAULT_URL;
}

export function clientFor(values: { contract?: string | boolean | undefined; url?: string | boolean | undefined }): PointsClient {
  return new PointsClient({ baseUrl: urlOf(values), contractAddress: contractOf(values.contract), ...contractCredential() });
}

/** API and network failures end a command with exit code 1 and a readable line, not a stack. */
export async function reportingFailures(run: () => Promise<number>): Promise<number> {
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

export function printJson(value: unknown): number {
  console.log(JSON.stringify(value, null, 2));
  return 0;
}

export function usage(): number {
  console.log(CLIENT_USAGE.trim());
  return 0;
}
