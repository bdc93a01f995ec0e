import { parsePoints } from "./domain/points.js";

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
  minimumTransferUnits: { PHASE2_POINTS: bigint; PHASE2_GOLD: bigint };
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
  logLevel: string;
  /** Origins allowed to call the API from a browser (CORS); empty means no CORS headers. */
  corsOrigins: string[];
  /** Fastify trustProxy: false, true, or addresses/CIDRs of the trusted proxies. */
  trustProxy: boolean | string;
  sqliteSynchronous: "FULL" | "NORMAL";
  pgPoolSize: number;
  pgStatementTimeoutMs: number;
  shutdownTimeoutMs: number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

/** Hard limits that no setting may exceed. */
const MAX_TRANSFERS_PER_BATCH_LIMIT = 10_000;
const MAX_FINALIZE_SECONDS_LIMIT = 365 * 24 * 3600;
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function readChoice<T extends string>(env: Env, name: string, fallback: T, choices: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${choices.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

function readPoints(env: Env, name: string, fallback: string): bigint {
  const raw = env[name] || fallback;
  const units = parsePoints(raw);
  if (units === null || units === 0n) throw new ConfigError(name, `must be a positive decimal points string, got "${raw}"`);
  return units;
}

function readDatabaseUrl(env: Env): string {
  const url = env.DATABASE_URL || "sqlite:./data/points.db";
  if (/^sqlite:.+/.test(url) || /^postgres(ql)?:\/\/.+/.test(url)) return url;
  throw new ConfigError("DATABASE_URL", `must be sqlite:<path> or postgres://…, got "${url}"`);
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
    databaseUrl: readDatabaseUrl(env),
    adminToken: readAdminToken(env),
    minimumFinalizeSeconds,
    defaultFinalizeSeconds,
    maxTransfersPerBatch,
    minimumTransferUnits: {
      PHASE2_POINTS: readPoints(env, "MINIMUM_PHASE2_POINTS_TRANSFER_SIZE", "0.01"),
      PHASE2_GOLD: readPoints(env, "MINIMUM_PHASE2_GOLD_TRANSFER_SIZE", "0.000001"),
    },
    bearerTokenTtlSeconds: readInt(env, "BEARER_TOKEN_TTL_SECONDS", 3600, 1, 30 * 24 * 3600),
    challengeTtlSeconds: readInt(env, "CHALLENGE_TTL_SECONDS", 300, 1, 24 * 3600),
    finalizerIntervalMs: readInt(env, "FINALIZER_INTERVAL_MS", 250, 10, 60_000),
    finalizerEnabled: readChoice(env, "FINALIZER_ENABLED", "true", ["true", "false"]) === "true",
    finalizerBatchesPerPass: readInt(env, "FINALIZER_BATCHES_PER_PASS", 50, 1, 10_000),
    // A full batch of 2000 transfers with checksummed addresses and 12-decimal points is ≈ 175 KB.
    bodyLimitBytes: readInt(env, "BODY_LIMIT_BYTES", Math.max(1_048_576, maxTransfersPerBatch * 512), 1024, 64 * 1_048_576),
    rateLimitPerMinute: readInt(env, "RATE_LIMIT_PER_MINUTE", 60_000, 1, 100_000_000),
    maxInFlightRequests: readInt(env, "MAX_IN_FLIGHT_REQUESTS", 512, 1, 100_000),
    authRateLimitPerMinute: readInt(env, "AUTH_RATE_LIMIT_PER_MINUTE", 600, 1, 100_000_000),
    logLevel: readChoice(env, "LOG_LEVEL", "info", LOG_LEVELS),
    trustProxy: readTrustProxy(env),
    corsOrigins: readCorsOrigins(env),
    sqliteSynchronous: readChoice(env, "SQLITE_SYNCHRONOUS", "FULL", ["FULL", "NORMAL"] as const),
    pgPoolSize: readInt(env, "PG_POOL_SIZE", 10, 1, 1000),
    pgStatementTimeoutMs: readInt(env, "PG_STATEMENT_TIMEOUT_MS", 10_000, 100, 600_000),
    shutdownTimeoutMs: readInt(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 100, 600_000),
  };
}
