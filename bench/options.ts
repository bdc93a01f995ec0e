import { parseArgs } from "node:util";

export interface BenchOptions {
  short: boolean;
  /** Seconds of each measured load phase. */
  durationSec: number;
  connections: number;
  db: "sqlite" | "postgres";
  processes: number;
  /** Minutes of mixed load after the main phases; 0 = no soak. */
  soakMinutes: number;
  /** Directory for `--cpu-prof` profiles of the server and the ceilings, or null. */
  cpuProfDir: string | null;
  /** Batches per finalizer pass given to the server (FINALIZER_BATCHES_PER_PASS), or null for its default. */
  finalizerBatchesPerPass: number | null;
  /** Submit with an API key (scopes submit, read) instead of the operator's bearer token. */
  apiKey: boolean;
  /** --publisher nats: the server publishes its events to NATS JetStream, and the phases time it (bench/publish-lag.ts). */
  publisher: "nats" | null;
}

export const USAGE = `npm run bench -- [options]

  --short               a few seconds per phase (the CI smoke test)
  --duration N          seconds per measured phase (default 10, 3 with --short)
  --connections N       concurrent connections of the load (default 8, the load of the speed targets)
  --db sqlite|postgres  postgres reads BENCH_DATABASE_URL (skipped when unset)
  --processes N         server processes on one PostgreSQL database (default 1)
  --api-key             submit with an API key (scopes submit, read) instead of a bearer token
  --publisher nats      the server publishes its events to NATS JetStream (BENCH_NATS_URL, default
                        nats://127.0.0.1:4222); the half-rate and mixed phases report the publication lag
  --soak MINUTES        mixed load for that long at the end, sampling server RSS every 10 s
  --cpu-prof DIR        write V8 CPU profiles of the server and both ceilings into DIR
  --finalizer-batches-per-pass N   FINALIZER_BATCHES_PER_PASS for the server processes
  --snapshot [--db sqlite|postgres] [--addresses N]
                        only: a Merkle snapshot of N addresses (default 1,000,000), its time and peak RSS (bench/snapshot.ts)
  --leaderboards [--db sqlite|postgres] [--recipients N] [--transfers N] [--samples N] [--budget SECONDS] [--seed-only] [--keep FILE|SCHEMA]
                        only: seeds N recipients (default 1,000,000) and N finalized transfers (default 10,000,000)
                        through the store over 60 days, then times board pages, ranks, balances asOf and a
                        snapshot asOf (bench/leaderboards.ts); --samples per measure (default 1000), each
                        measure stops after --budget seconds (default 60); --seed-only times the seeding alone; --keep FILE keeps the SQLite database
                        in FILE; with --db postgres, --keep SCHEMA seeds into that new schema and keeps it
  --tlog-proofs [--events N] [--samples N]
                        only: the transparency log's tree of N events (default 10,000,000) seeded into SQLite,
                        then the p50/p99 of N inclusion and consistency proofs (default 2000), the tree's bytes
                        per event and the RSS (bench/tlog-proofs.ts)`;

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return value;
}

function minutes(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--soak must be a positive number of minutes, got "${raw}"`);
  return value;
}

function publisherOption(value: string | undefined): "nats" | null {
  if (value === undefined) return null;
  if (value !== "nats") throw new Error(`--publisher must be nats, got "${value}"`);
  return value;
}

export function parseOptions(argv: string[]): BenchOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      short: { type: "boolean", default: false },
      duration: { type: "string" },
      connections: { type: "string" },
      db: { type: "string", default: "sqlite" },
      processes: { type: "string" },
      soak: { type: "string" },
      "cpu-prof": { type: "string" },
      "finalizer-batches-per-pass": { type: "string" },
      "api-key": { type: "boolean", default: false },
      publisher: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return "help";
  if (values.db !== "sqlite" && values.db !== "postgres") throw new Error(`--db must be sqlite or postgres, got "${values.db}"`);
  const processes = positiveInt("processes", values.processes, 1);
  if (processes > 1 && values.db !== "postgres") throw new Error("--processes > 1 needs --db postgres (SQLite has one writer process)");
  const short = values.short ?? false;
  return {
    short,
    durationSec: positiveInt("duration", values.duration, short ? 3 : 10),
    connections: positiveInt("connections", values.connections, 8),
    db: values.db,
    processes,
    soakMinutes: minutes(values.soak),
    cpuProfDir: values["cpu-prof"] ?? null,
    apiKey: values["api-key"] ?? false,
    publisher: publisherOption(values.publisher),
    finalizerBatchesPerPass:
      values["finalizer-batches-per-pass"] === undefined
        ? null
        : positiveInt("finalizer-batches-per-pass", values["finalizer-batches-per-pass"], 1),
  };
}

export interface LeaderboardsOptions {
  db: "sqlite" | "postgres";
  recipients: number;
  transfers: number;
  /** Timed reads per measure, at most. */
  samples: number;
  /** Each measure stops taking samples after this long (a slow measure still reports what it took). */
  budgetSec: number;
  /** Only the seeding and its finalize rate: the paired run against code without leaderboards. */
  seedOnly: boolean;
  /** Seed into this SQLite file or new PostgreSQL schema and keep it (for inspection), instead of a temporary one. */
  keep: string | null;
}

export function parseLeaderboardsOptions(argv: string[]): LeaderboardsOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      leaderboards: { type: "boolean" },
      db: { type: "string", default: "sqlite" },
      recipients: { type: "string" },
      transfers: { type: "string" },
      samples: { type: "string" },
      budget: { type: "string" },
      "seed-only": { type: "boolean", default: false },
      keep: { type: "string" },
    },
  });
  if (values.db !== "sqlite" && values.db !== "postgres") throw new Error(`--db must be sqlite or postgres, got "${values.db}"`);
  const recipients = positiveInt("recipients", values.recipients, 1_000_000, 2000);
  const transfers = positiveInt("transfers", values.transfers, 10_000_000, recipients);
  return {
    db: values.db,
    recipients,
    transfers,
    samples: positiveInt("samples", values.samples, 1000),
    budgetSec: positiveInt("budget", values.budget, 60),
    seedOnly: values["seed-only"] ?? false,
    keep: values.keep ?? null,
  };
}
