import { availableParallelism } from "node:os";
import { DEFAULT_WEBHOOK_CLAIM_LEASE_MS, MAX_FINALIZE_SECONDS_LIMIT, MAX_TRANSFERS_PER_BATCH_LIMIT } from "./domain/limits.js";
import { DEFAULT_EVENT_STREAMS_PER_CONTRACT, DEFAULT_EVENT_STREAMS_PER_TOKEN, MAX_EVENT_STREAMS } from "./domain/limits.js";
import { ASSET_PATTERN, DEFAULT_BALANCE_ASSETS, DEFAULT_POINT_TYPES, POINT_TYPE_PATTERN, type PointType } from "./domain/batch.js";
import { oneOfMessage } from "./domain/messages.js";
import { parsePoints } from "./domain/points.js";
import { parseSignerKey } from "./domain/signed-note.js";
import type { PublishersConfig } from "./domain/publishers.js";
import { parseAddress } from "./domain/address.js";
import { CHAIN_BLOCK_TAGS, type ChainConfig } from "./domain/chain.js";
import { REPLICA_CHECK_INTERVAL_MS } from "./domain/replica-lag.js";

/**
 * Every setting, read once from the environment and validated. An invalid setting stops
 * start-up with a ConfigError naming the variable.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  adminToken: string | null;
  minimumFinalizeSeconds: number;
  defaultFinalizeSeconds: number;
  maxTransfersPerBatch: number;
  /** POINT_TYPES: the one list of point types; every other part of the service reads it here. */
  pointTypes: readonly PointType[];
  /** MINIMUM_<TYPE>_TRANSFER_SIZE of each configured point type, in units. */
  minimumTransferUnits: Readonly<Record<PointType, bigint>>;
  /** BALANCE_ASSETS: assets every balance lists in `byAsset`, zero when no credit named them. */
  balanceAssets: readonly string[];
  bearerTokenTtlSeconds: number;
  challengeTtlSeconds: number;
  finalizerIntervalMs: number;
  finalizerEnabled: boolean;
  /** Batches one finalizer pass claims at most before it yields to the event loop. */
  finalizerBatchesPerPass: number;
  bodyLimitBytes: number;
  rateLimitPerMinute: number;
  /** Requests served at once before new ones get 503 (bounded queue under overload). */
  maxInFlightRequests: number;
  authRateLimitPerMinute: number;
  /** A request's headers and body must have arrived within these (slow clients cannot hold slots). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Mean event-loop delay past which new API requests get 503 (0: no shedding on it). */
  maxEventLoopDelayMs: number;
  /** MAX_QUEUE_DELAY_MS: how long a request may have waited to be read before it gets 503 + Retry-After (0: no admission on it). */
  maxQueueDelayMs: number;
  /** CLIENT_TURN_BUDGET_MS: admitted work one client address may take of an event-loop turn before its further requests of the turn get 429 (0: no such share). */
  clientTurnBudgetMs: number;
  /** MAX_IN_FLIGHT_PER_CLIENT: requests of one client address served at once before its next gets 429 (at most MAX_IN_FLIGHT_REQUESTS). */
  maxInFlightPerClient: number;
  /** Worker threads that parse and validate submitted batches beside the writer (0: on the main thread). */
  batchIntakeThreads: number;
  logLevel: string;
  /** WEBHOOK_RETRY_SCHEDULE_SECONDS: waits before each retry of a failed delivery (±20 % jitter); after the last, FAILED. */
  webhookRetryScheduleSeconds: readonly number[];
  /** WEBHOOK_ALLOW_PRIVATE_URLS: endpoints may target loopback, private and link-local addresses (tests, closed networks). */
  webhookAllowPrivateUrls: boolean;
  /**
   * WEBHOOK_CLAIM_LEASE_MS: how long a claimed delivery is a sender's alone without a renewal; the
   * sender renews it every quarter of it while the attempt runs, so after a sender died its
   * deliveries are due again within one lease (for this process after a restart, or for another instance).
   */
  webhookClaimLeaseMs: number;
  /** PUBLIC_READS: address balances and snapshots (proofs, tree) readable without a token. */
  publicReads: boolean;
  /** PUBLIC_READ_RATE_LIMIT_PER_MINUTE: requests one client address may make to the public reads (with PUBLIC_READS) per minute. */
  publicReadRateLimitPerMinute: number;
  /** NEW_WINDOWS_PER_MINUTE_PER_CALLER: refill of one caller's bucket of new leaderboard windows, those not kept as a board (src/http/window-budget.ts). */
  newWindowsPerMinutePerCaller: number;
  /** NEW_WINDOWS_PER_MINUTE_PER_CONTRACT: the same for the bucket of all callers of one contract. */
  newWindowsPerMinutePerContract: number;
  /** Origins allowed to call the API from a browser (CORS); empty means no CORS headers. */
  corsOrigins: string[];
  /** Fastify trustProxy: false, true, or addresses/CIDRs of the trusted proxies. */
  trustProxy: boolean | string;
  sqliteSynchronous: "FULL" | "NORMAL";
  pgPoolSize: number;
  pgStatementTimeoutMs: number;
  /**
   * DATABASE_READ_URL: a PostgreSQL replica (or HAProxy's replica port) for the reads that state
   * their freshness or change rarely (src/store/postgres/replica.ts); null: every read on the primary.
   */
  databaseReadUrl: string | null;
  /** REPLICA_MAX_LAG_SECONDS: a replica further behind than this serves nothing until it catches up (the reads go to the primary). */
  replicaMaxLagSeconds: number;
  shutdownTimeoutMs: number;
  /** EVENT_RETENTION_DAYS: events older than this are purged; a cursor before them is 410 CURSOR_EXPIRED. */
  eventRetentionDays: number;
  /** WEBHOOK_DELIVERY_RETENTION_DAYS: finished (SUCCEEDED or FAILED) webhook deliveries older than this are purged with their attempts. */
  webhookDeliveryRetentionDays: number;
  /** PUBLIC_URL: the service's public address (the console's origin); makes the challenge an EIP-4361 message. */
  publicUrl: string | null;
  /** EVENT_STREAM_KEEPALIVE_MS: how often an idle event stream sends a comment line (proxies close silent connections). */
  eventStreamKeepAliveMs: number;
  /** MAX_EVENT_STREAMS_PER_CONTRACT, MAX_EVENT_STREAMS_PER_TOKEN: open event streams per contract and per token in a process (1 to MAX_EVENT_STREAMS). */
  maxEventStreamsPerContract: number;
  maxEventStreamsPerToken: number;
  /** LOG_ORIGIN: the transparency log's origin line and key name (default: PUBLIC_URL's host + /points-ledger). */
  logOrigin: string;
  /** LOG_SIGNING_KEY: the checkpoints' Ed25519 key, `PRIVATE+KEY+<name>+<id>+<base64>`; null: one made at first start and kept in the database. */
  logSigningKey: string | null;
  /**
   * LOG_CHECKPOINT_SECONDS: the least time between two signed checkpoints while the log grows
   * (0.1–3600, decimals allowed). An event waits up to this long for its checkpoint, so a p99 of
   * 1 s from commit to checkpoint needs less than 1 (docs/performance.md, The transparency log).
   */
  logCheckpointSeconds: number;
  /** EVENTS_NATS_*, EVENTS_AMQP_*, EVENTS_PUBLISH_FROM: the event log published to brokers (API.md, Events to a message broker). */
  publishers: PublishersConfig;
  /**
   * CHAIN_RPC_URL, OPERATOR_REGISTRY_ADDRESS, CHAIN_BLOCK_TAG, CHAIN_TIMEOUT_MS, CHAIN_POLL_SECONDS:
   * operators read from the chain's operator registry (API.md, Operators on chain); null: an administrator sets them.
   */
  chain: ChainConfig | null;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

/** docs/api.md Events: events are kept 30 days unless EVENT_RETENTION_DAYS says otherwise. */
export const DEFAULT_EVENT_RETENTION_DAYS = 30;
/** Finished deliveries are kept as long as the events by default, so a delivery's event can still be read. */
export const DEFAULT_WEBHOOK_DELIVERY_RETENTION_DAYS = 30;
/** The longest retention either setting accepts (about 10 years). */
const MAX_RETENTION_DAYS = 3650;

/** Point types and balance assets a deployment may configure (each is a key of every balance). */
const MAX_POINT_TYPES = 32;
const MAX_BALANCE_ASSETS = 64;
/** PHASE2_GOLD keeps the Blast API's smaller minimum; every other type gets the PHASE2_POINTS one. */
const DEFAULT_MINIMUM_TRANSFER_SIZE = "0.01";
const DEFAULT_MINIMUM_TRANSFER_SIZES: Readonly<Record<string, string>> = { PHASE2_GOLD: "0.000001" };
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

/** Seconds with up to three decimals (milliseconds), between min and max. */
function readSeconds(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+(\.[0-9]{1,3})?$/.test(raw)) throw new ConfigError(name, `must be a number of seconds like 1 or 0.5, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function readChoice<T extends string>(env: Env, name: string, fallback: T, choices: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `${oneOfMessage(choices)}, got "${raw}"`);
  }
  return raw as T;
}

function readPoints(env: Env, name: string, fallback: string): bigint {
  const raw = env[name] || fallback;
  const units = parsePoints(raw);
  if (units === null || units === 0n) throw new ConfigError(name, `must be a positive decimal points string, got "${raw}"`);
  return units;
}

/** A comma-separated list of distinct names, each matching `pattern`. */
function readNames(env: Env, name: string, fallback: readonly string[], pattern: string, max: number): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [...fallback];
  const names = raw.split(",").map((item) => item.trim());
  const shape = new RegExp(pattern);
  for (const item of names) {
    if (!shape.test(item)) throw new ConfigError(name, `must be comma-separated names matching ${pattern}, got "${item}"`);
  }
  if (new Set(names).size !== names.length) throw new ConfigError(name, `must not repeat a name, got "${raw}"`);
  if (names.length > max) throw new ConfigError(name, `may name at most ${max}, got ${names.length}`);
  return names;
}

function readPointTypes(env: Env): Pick<Config, "pointTypes" | "minimumTransferUnits"> {
  const pointTypes = readNames(env, "POINT_TYPES", DEFAULT_POINT_TYPES, POINT_TYPE_PATTERN, MAX_POINT_TYPES);
  const minimumTransferUnits: Record<PointType, bigint> = {};
  for (const pointType of pointTypes) {
    const fallback = DEFAULT_MINIMUM_TRANSFER_SIZES[pointType] ?? DEFAULT_MINIMUM_TRANSFER_SIZE;
    minimumTransferUnits[pointType] = readPoints(env, `MINIMUM_${pointType}_TRANSFER_SIZE`, fallback);
  }
  return { pointTypes, minimumTransferUnits };
}

function readDatabaseUrl(env: Env): string {
  const url = env.DATABASE_URL || "sqlite:./data/points.db";
  if (/^sqlite:.+/.test(url)) return url;
  if (/^postgres(ql)?:\/\/.+/.test(url)) return checkedPostgresUrl("DATABASE_URL", url);
  throw new ConfigError("DATABASE_URL", `must be sqlite:<path> or postgres://…, got "${url}"`);
}

function checkedPostgresUrl(variable: string, url: string): string {
  // Not echoed: the URL may hold a password.
  if (!parsesAsPostgresUrl(url)) {
    throw new ConfigError(
      variable,
      "is not a valid postgres://user:password@host:port/database URL (percent-encode any @ : / ? # in the password)",
    );
  }
  return url;
}

/**
 * DATABASE_URL, DATABASE_READ_URL and REPLICA_MAX_LAG_SECONDS (docs/operations.md, Reads from a replica). A
 * replica is PostgreSQL's: SQLite has none, so the setting beside a SQLite DATABASE_URL stops
 * start-up rather than being ignored.
 */
function readDatabaseUrls(env: Env): Pick<Config, "databaseUrl" | "databaseReadUrl" | "replicaMaxLagSeconds"> {
  const databaseUrl = readDatabaseUrl(env);
  const replicaMaxLagSeconds = readSeconds(
    env,
    "REPLICA_MAX_LAG_SECONDS",
    DEFAULT_REPLICA_MAX_LAG_SECONDS,
    MIN_REPLICA_MAX_LAG_SECONDS,
    3600,
  );
  const url = env.DATABASE_READ_URL?.trim() || null;
  if (url === null) return { databaseUrl, databaseReadUrl: null, replicaMaxLagSeconds };
  if (!databaseUrl.startsWith("postgres")) {
    throw new ConfigError("DATABASE_READ_URL", "needs a PostgreSQL DATABASE_URL (SQLite has no replicas): unset it, or move to PostgreSQL");
  }
  if (!/^postgres(ql)?:\/\/.+/.test(url)) throw new ConfigError("DATABASE_READ_URL", "must be a postgres://… URL of a replica");
  return { databaseUrl, databaseReadUrl: checkedPostgresUrl("DATABASE_READ_URL", url), replicaMaxLagSeconds };
}

/** docs/operations.md, Reads from a replica: what a public page may show late, and still say how late (`through`). */
const DEFAULT_REPLICA_MAX_LAG_SECONDS = 5;
/**
 * Two checks' interval: the lag measured of a replica that keeps up is the age of the last check
 * (src/domain/replica-lag.ts), so a bound below it would drop the replica between checks.
 */
const MIN_REPLICA_MAX_LAG_SECONDS = (2 * REPLICA_CHECK_INTERVAL_MS) / 1000;

/**
 * Whether node-postgres can read the URL: the same parse pg-connection-string makes (spaces
 * encoded, a WHATWG URL, an empty host allowed), which otherwise fails only at the first query.
 */
function parsesAsPostgresUrl(url: string): boolean {
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, "%$1") : url;
  return [encoded, encoded.replace("@/", "@___DUMMY___/")].some((candidate) => URL.canParse(candidate, "postgres://base"));
}

function readAdminToken(env: Env): string | null {
  const token = env.ADMIN_TOKEN;
  if (token === undefined || token === "") return null;
  if (token.length < 16) throw new ConfigError("ADMIN_TOKEN", "must be at least 16 characters");
  return token;
}

function readCorsOrigins(env: Env): string[] {
  const raw = env.CORS_ORIGINS;
  if (raw === undefined || raw.trim() === "") return [];
  const origins = raw.split(",").map((origin) => origin.trim());
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError("CORS_ORIGINS", `must be * or comma-separated origins like https://app.example, got "${origin}"`);
    }
  }
  return origins;
}

function readTrustProxy(env: Env): boolean | string {
  const raw = env.TRUST_PROXY;
  if (raw === undefined || raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  if (/^[0-9a-fA-F.:/,\s]+$/.test(raw)) return raw;
  throw new ConfigError("TRUST_PROXY", `must be true, false, or proxy addresses/CIDRs, got "${raw}"`);
}

function readRequestTimeouts(env: Env): { headersTimeoutMs: number; requestTimeoutMs: number } {
  const requestTimeoutMs = readInt(env, "REQUEST_TIMEOUT_MS", 30_000, 100, 600_000);
  const headersTimeoutMs = readInt(env, "HEADERS_TIMEOUT_MS", Math.min(10_000, requestTimeoutMs), 100, 600_000);
  // Node refuses a headers timeout longer than the whole request's.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError("HEADERS_TIMEOUT_MS", `must be ≤ REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  return { headersTimeoutMs, requestTimeoutMs };
}

/** docs/api.md Webhooks: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
const DEFAULT_WEBHOOK_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000];
const MAX_WEBHOOK_RETRIES = 20;
const MAX_WEBHOOK_RETRY_SECONDS = 7 * 24 * 3600;

function readRetrySchedule(env: Env): number[] {
  const name = "WEBHOOK_RETRY_SCHEDULE_SECONDS";
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [...DEFAULT_WEBHOOK_RETRY_SCHEDULE_SECONDS];
  const items = raw.split(",").map((item) => item.trim());
  if (items.length > MAX_WEBHOOK_RETRIES) throw new ConfigError(name, `may list at most ${MAX_WEBHOOK_RETRIES} waits, got ${items.length}`);
  return items.map((item) => {
    if (!/^[0-9]{1,7}$/.test(item) || Number(item) > MAX_WEBHOOK_RETRY_SECONDS) {
      throw new ConfigError(name, `must be comma-separated whole seconds from 0 to ${MAX_WEBHOOK_RETRY_SECONDS}, got "${item}"`);
    }
    return Number(item);
  });
}

/** PUBLIC_URL: an http(s) origin, optionally with a path; no query or fragment (it is signed into challenges). */
function readPublicUrl(env: Env): string | null {
  const raw = env.PUBLIC_URL;
  if (raw === undefined || raw.trim() === "") return null;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (url === null || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "" || url.username !== "") {
    throw new ConfigError("PUBLIC_URL", `must be an http(s) URL like https://points.example.com, got "${raw}"`);
  }
  return url.toString().replace(/\/+$/, "");
}

/** Intake threads a setting may ask for; the default is every core but the writer's, at most 4. */
const MAX_INTAKE_THREADS = 16;
const DEFAULT_MAX_INTAKE_THREADS = 4;

function defaultIntakeThreads(): number {
  return Math.max(0, Math.min(DEFAULT_MAX_INTAKE_THREADS, availableParallelism() - 1));
}

export function loadConfig(env: Env = process.env): Config {
  const minimumFinalizeSeconds = readInt(env, "MINIMUM_FINALIZE_SECONDS", 3600, 0, MAX_FINALIZE_SECONDS_LIMIT);
  const defaultFinalizeSeconds = readInt(env, "DEFAULT_FINALIZE_SECONDS", 86400, 0, MAX_FINALIZE_SECONDS_LIMIT);
  if (defaultFinalizeSeconds < minimumFinalizeSeconds) {
    throw new ConfigError("DEFAULT_FINALIZE_SECONDS", `must be ≥ MINIMUM_FINALIZE_SECONDS (${minimumFinalizeSeconds})`);
  }
  const maxTransfersPerBatch = readInt(env, "MAX_TRANSFERS_PER_BATCH", 2000, 1, MAX_TRANSFERS_PER_BATCH_LIMIT);
  return {
    port: readInt(env, "PORT", 8080, 0, 65535),
    host: env.HOST || "127.0.0.1",
    ...readDatabaseUrls(env),
    adminToken: readAdminToken(env),
    minimumFinalizeSeconds,
    defaultFinalizeSeconds,
    maxTransfersPerBatch,
    ...readPointTypes(env),
    balanceAssets: readNames(env, "BALANCE_ASSETS", DEFAULT_BALANCE_ASSETS, ASSET_PATTERN, MAX_BALANCE_ASSETS),
    bearerTokenTtlSeconds: readInt(env, "BEARER_TOKEN_TTL_SECONDS", 3600, 1, 30 * 24 * 3600),
    challengeTtlSeconds: readInt(env, "CHALLENGE_TTL_SECONDS", 300, 1, 24 * 3600),
    finalizerIntervalMs: readInt(env, "FINALIZER_INTERVAL_MS", 250, 10, 60_000),
    finalizerEnabled: readChoice(env, "FINALIZER_ENABLED", "true", ["true", "false"]) === "true",
    finalizerBatchesPerPass: readInt(env, "FINALIZER_BATCHES_PER_PASS", 50, 1, 10_000),
    // A full batch of 2000 transfers with checksummed addresses and 12-decimal points is ≈ 175 KB.
    bodyLimitBytes: readInt(env, "BODY_LIMIT_BYTES", Math.max(1_048_576, maxTransfersPerBatch * 512), 1024, 64 * 1_048_576),
    rateLimitPerMinute: readInt(env, "RATE_LIMIT_PER_MINUTE", 60_000, 1, 100_000_000),
    ...readInFlightLimits(env),
    authRateLimitPerMinute: readInt(env, "AUTH_RATE_LIMIT_PER_MINUTE", 600, 1, 100_000_000),
    ...readRequestTimeouts(env),
    maxEventLoopDelayMs: readInt(env, "MAX_EVENT_LOOP_DELAY_MS", 500, 0, 60_000),
    maxQueueDelayMs: readInt(env, "MAX_QUEUE_DELAY_MS", 300, 0, 60_000),
    clientTurnBudgetMs: readInt(env, "CLIENT_TURN_BUDGET_MS", DEFAULT_CLIENT_TURN_BUDGET_MS, 0, 60_000),
    batchIntakeThreads: readInt(env, "BATCH_INTAKE_THREADS", defaultIntakeThreads(), 0, MAX_INTAKE_THREADS),
    logLevel: readChoice(env, "LOG_LEVEL", "info", LOG_LEVELS),
    webhookRetryScheduleSeconds: readRetrySchedule(env),
    webhookAllowPrivateUrls: readChoice(env, "WEBHOOK_ALLOW_PRIVATE_URLS", "false", ["true", "false"]) === "true",
    webhookClaimLeaseMs: readInt(env, "WEBHOOK_CLAIM_LEASE_MS", DEFAULT_WEBHOOK_CLAIM_LEASE_MS, 1000, 600_000),
    publicReads: readChoice(env, "PUBLIC_READS", "false", ["true", "false"]) === "true",
    publicReadRateLimitPerMinute: readInt(env, "PUBLIC_READ_RATE_LIMIT_PER_MINUTE", 600, 1, 100_000_000),
    newWindowsPerMinutePerCaller: readInt(
      env,
      "NEW_WINDOWS_PER_MINUTE_PER_CALLER",
      DEFAULT_NEW_WINDOWS_PER_MINUTE_PER_CALLER,
      1,
      100_000_000,
    ),
    newWindowsPerMinutePerContract: readInt(
      env,
      "NEW_WINDOWS_PER_MINUTE_PER_CONTRACT",
      DEFAULT_NEW_WINDOWS_PER_MINUTE_PER_CONTRACT,
      1,
      100_000_000,
    ),
    trustProxy: readTrustProxy(env),
    corsOrigins: readCorsOrigins(env),
    sqliteSynchronous: readChoice(env, "SQLITE_SYNCHRONOUS", "FULL", ["FULL", "NORMAL"] as const),
    pgPoolSize: readInt(env, "PG_POOL_SIZE", 10, 1, 1000),
    pgStatementTimeoutMs: readInt(env, "PG_STATEMENT_TIMEOUT_MS", 10_000, 100, 600_000),
    shutdownTimeoutMs: readInt(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 100, 600_000),
    eventRetentionDays: readInt(env, "EVENT_RETENTION_DAYS", DEFAULT_EVENT_RETENTION_DAYS, 1, MAX_RETENTION_DAYS),
    webhookDeliveryRetentionDays: readInt(
      env,
      "WEBHOOK_DELIVERY_RETENTION_DAYS",
      DEFAULT_WEBHOOK_DELIVERY_RETENTION_DAYS,
      1,
      MAX_RETENTION_DAYS,
    ),
    eventStreamKeepAliveMs: readInt(env, "EVENT_STREAM_KEEPALIVE_MS", 15_000, 100, 300_000),
    ...readEventStreamCaps(env),
    ...readPublicUrlAndLog(env),
  };
}

/** CHAIN_TIMEOUT_MS's default (API.md) and bounds; CHAIN_POLL_SECONDS's. */
const DEFAULT_CHAIN_TIMEOUT_MS = 3000;
const MAX_CHAIN_TIMEOUT_MS = 60_000;
const DEFAULT_CHAIN_POLL_SECONDS = 5;
const MAX_CHAIN_POLL_SECONDS = 3600;

/** API.md, Operators on chain: an http(s) endpoint (never echoed: its path often holds a provider's key). */
function readChain(env: Env): ChainConfig | null {
  const rpcUrl = env.CHAIN_RPC_URL?.trim();
  if (rpcUrl === undefined || rpcUrl === "") return null;
  let url: URL | null = null;
  try {
    url = new URL(rpcUrl);
  } catch {
    url = null;
  }
  if (url === null || !/^https?:$/.test(url.protocol))
    throw new ConfigError("CHAIN_RPC_URL", "must be an http(s) URL of an EVM JSON-RPC endpoint");
  const rawRegistry = env.OPERATOR_REGISTRY_ADDRESS?.trim() || null;
  const registryAddress = rawRegistry === null ? null : parseAddress(rawRegistry);
  if (rawRegistry !== null && registryAddress === null) {
    throw new ConfigError("OPERATOR_REGISTRY_ADDRESS", `must be an address (0x and 40 hex digits), got "${rawRegistry}"`);
  }
  return {
    rpcUrl,
    registryAddress,
    blockTag: readChoice(env, "CHAIN_BLOCK_TAG", "finalized", CHAIN_BLOCK_TAGS),
    timeoutMs: readInt(env, "CHAIN_TIMEOUT_MS", DEFAULT_CHAIN_TIMEOUT_MS, 100, MAX_CHAIN_TIMEOUT_MS),
    pollSeconds: readSeconds(env, "CHAIN_POLL_SECONDS", DEFAULT_CHAIN_POLL_SECONDS, 0.1, MAX_CHAIN_POLL_SECONDS),
  };
}

/**
 * New leaderboard windows (src/http/window-budget.ts): a person choosing windows in the console
 * asks a few a minute; a program's page shows a handful of fixed ones, kept as boards and free.
 * Measured in test/window-budget.test.ts.
 */
const DEFAULT_NEW_WINDOWS_PER_MINUTE_PER_CALLER = 30;
const DEFAULT_NEW_WINDOWS_PER_MINUTE_PER_CONTRACT = 120;

/**
 * Admission per client address (src/http/queue-admission.ts): a third of the default queueing
 * target, so one address's crowd leaves two thirds of a turn to everybody else; and half the
 * requests in flight. Measured in test/overload-keepalive.test.ts.
 */
const DEFAULT_CLIENT_TURN_BUDGET_MS = 100;
const DEFAULT_MAX_IN_FLIGHT_REQUESTS = 512;

function readInFlightLimits(env: Env): Pick<Config, "maxInFlightRequests" | "maxInFlightPerClient"> {
  const maxInFlightRequests = readInt(env, "MAX_IN_FLIGHT_REQUESTS", DEFAULT_MAX_IN_FLIGHT_REQUESTS, 1, 100_000);
  const fallback = Math.max(1, Math.floor(maxInFlightRequests / 2));
  const maxInFlightPerClient = readInt(env, "MAX_IN_FLIGHT_PER_CLIENT", fallback, 1, 100_000);
  if (maxInFlightPerClient > maxInFlightRequests) {
    throw new ConfigError("MAX_IN_FLIGHT_PER_CLIENT", `must be ≤ MAX_IN_FLIGHT_REQUESTS (${maxInFlightRequests})`);
  }
  return { maxInFlightRequests, maxInFlightPerClient };
}

/** A signed-note key name: printable, no space and no plus sign (C2SP signed-note). */
const LOG_ORIGIN_PATTERN = /^[\x21-\x2a\x2c-\x7e]{1,255}$/;

/** PUBLIC_URL, and LOG_ORIGIN (default: its host), LOG_SIGNING_KEY and LOG_CHECKPOINT_SECONDS (API.md, Transparency log). */
function readPublicUrlAndLog(env: Env): Pick<Config, "publicUrl" | "logOrigin" | "logSigningKey" | "logCheckpointSeconds"> {
  const publicUrl = readPublicUrl(env);
  const raw = env.LOG_SIGNING_KEY?.trim() || null;
  let keyName: string | null = null;
  if (raw !== null) {
    try {
      keyName = parseSignerKey(raw).name;
    } catch {
      // The value is a secret: the message never repeats it.
      throw new ConfigError(
        "LOG_SIGNING_KEY",
        "must be an Ed25519 signer key PRIVATE+KEY+<name>+<key id>+<base64> (points-ledger log keygen makes one)",
      );
    }
  }
  // Without LOG_ORIGIN the log is named as its key is (`log keygen --origin` names it), then by PUBLIC_URL.
  const logOrigin = env.LOG_ORIGIN?.trim() || keyName || `${publicUrl === null ? "localhost" : new URL(publicUrl).host}/points-ledger`;
  if (!LOG_ORIGIN_PATTERN.test(logOrigin)) {
    throw new ConfigError("LOG_ORIGIN", `must be printable ASCII without spaces or "+", like points.example.com/points-ledger`);
  }
  return { publicUrl, logOrigin, logSigningKey: raw, logCheckpointSeconds: readSeconds(env, "LOG_CHECKPOINT_SECONDS", 1, 0.1, 3600) };
}

/** Per-tenant shares of the process's MAX_EVENT_STREAMS, so one tenant cannot take every stream; the publishers; the chain. */
function readEventStreamCaps(env: Env): Pick<Config, "maxEventStreamsPerContract" | "maxEventStreamsPerToken" | "publishers" | "chain"> {
  return {
    ...readPublishers(env),
    chain: readChain(env),
    maxEventStreamsPerContract: readInt(env, "MAX_EVENT_STREAMS_PER_CONTRACT", DEFAULT_EVENT_STREAMS_PER_CONTRACT, 1, MAX_EVENT_STREAMS),
    maxEventStreamsPerToken: readInt(env, "MAX_EVENT_STREAMS_PER_TOKEN", DEFAULT_EVENT_STREAMS_PER_TOKEN, 1, MAX_EVENT_STREAMS),
  };
}

/** A NATS subject prefix: dot-separated tokens without wildcards or spaces; a stream or exchange name. */
const SUBJECT_PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const NATS_STREAM_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;
const AMQP_EXCHANGE_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;
const MAX_DUPLICATE_WINDOW_SECONDS = 7 * 24 * 3600;

/** A broker URL of one of `protocols`; never echoed (it may hold a password). */
function readBrokerUrl(env: Env, name: string, protocols: readonly string[]): string | null {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return null;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (url === null || !protocols.includes(url.protocol) || url.hostname === "") {
    throw new ConfigError(name, `must be a URL like ${protocols[0]}//host:port (percent-encode any @ : / in the password)`);
  }
  return raw;
}

function readName(env: Env, name: string, fallback: string, pattern: RegExp, shape: string): string {
  const raw = env[name]?.trim() || fallback;
  if (!pattern.test(raw)) throw new ConfigError(name, `must be ${shape}, got "${raw}"`);
  return raw;
}

/** API.md, Events to a message broker. */
function readPublishers(env: Env): Pick<Config, "publishers"> {
  return { publishers: readPublisherSettings(env) };
}

function readPublisherSettings(env: Env): PublishersConfig {
  const natsUrl = readBrokerUrl(env, "EVENTS_NATS_URL", ["nats:", "tls:"]);
  const amqpUrl = readBrokerUrl(env, "EVENTS_AMQP_URL", ["amqp:", "amqps:"]);
  return {
    nats:
      natsUrl === null
        ? null
        : {
            url: natsUrl,
            stream: readName(
              env,
              "EVENTS_NATS_STREAM",
              "POINTS_LEDGER",
              NATS_STREAM_PATTERN,
              "letters, digits, - and _ (a JetStream stream name)",
            ),
            subjectPrefix: readName(
              env,
              "EVENTS_NATS_SUBJECT_PREFIX",
              "points-ledger.events",
              SUBJECT_PREFIX_PATTERN,
              "dot-separated tokens of letters, digits, - and _ (no wildcard)",
            ),
            duplicateWindowSeconds: readInt(env, "EVENTS_NATS_DUPLICATE_WINDOW_SECONDS", 3600, 1, MAX_DUPLICATE_WINDOW_SECONDS),
          },
    amqp:
      amqpUrl === null
        ? null
        : {
            url: amqpUrl,
            exchange: readName(env, "EVENTS_AMQP_EXCHANGE", "points-ledger.events", AMQP_EXCHANGE_PATTERN, "letters, digits, - _ . and :"),
          },
    from: readChoice(env, "EVENTS_PUBLISH_FROM", "start", ["start", "now"] as const),
  };
}
