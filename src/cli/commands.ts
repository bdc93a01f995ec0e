import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { ADMIN_ACTOR } from "../domain/actors.js";
import { checksumAddress } from "../domain/address.js";
import { ASSET_PATTERN, MAX_BLOCK } from "../domain/batch.js";
import { alreadyExistsMessage } from "../domain/messages.js";
import { ERROR_CATALOGUE } from "../domain/errors.js";
import { requireAddress, requirePoints } from "../domain/validate.js";
import { createWorker } from "../worker/index.js";
import { chainOperatorsOf, identifyAtStart } from "../chain/operators.js";
import { STOPPED_LINE, startServer, startupLines } from "../server.js";
import { openStore } from "../ledger/open.js";
import { assertPointTypesConfigured } from "../store/point-types.js";
import type { LedgerStore } from "../store/store.js";
import { systemClock } from "../clock.js";
import { runDemo } from "./demo.js";
import { openTransparencyLog } from "../auth/log-signing-key.js";
import { logLagViolations } from "../ledger/transparency-log.js";
import { redactingLoggerOptions } from "../log-redaction.js";

type Options = { id?: string | undefined; asset?: string | undefined; block?: string | undefined };
export type Command = (args: string[], options: Options, config: () => Config) => Promise<number>;

export class UsageError extends Error {
  override name = "UsageError";
}

export async function withStore<T>(config: Config, use: (store: LedgerStore) => Promise<T>): Promise<T> {
  const store = await openStore(config);
  try {
    await store.migrate();
    await assertPointTypesConfigured(store, config.pointTypes);
    return await use(store);
  } finally {
    await store.close();
  }
}

function argument(args: string[], index: number, name: string): string {
  const value = args[index];
  if (value === undefined) throw new UsageError(`missing <${name}>`);
  return value;
}

/** Resolves when SIGTERM or SIGINT arrives. */
function shutdownSignal(): Promise<string> {
  return new Promise((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => resolve(signal));
  });
}

const serve: Command = async (_args, _options, config) => {
  const settings = config();
  const server = await startServer(settings);
  server.app.log.info({ url: server.url, database: settings.databaseUrl.replace(/\/\/[^@]*@/, "//***@") }, "points-ledger listening");
  process.stderr.write(`${startupLines(server.url, settings).join("\n")}\n`);
  const signal = await shutdownSignal();
  server.app.log.info({ signal }, "shutting down");
  const timer = setTimeout(() => {
    server.app.log.error("graceful shutdown timed out; exiting");
    process.exit(1);
  }, settings.shutdownTimeoutMs);
  timer.unref();
  const stoppingMs = performance.now();
  await server.stop();
  server.app.log.info({ signal, ms: Math.round(performance.now() - stoppingMs) }, "stopped");
  process.stderr.write(`${STOPPED_LINE}\n`);
  return 0;
};

/** The background jobs alone (finalize, deliver, purge), beside API-only `serve` processes. */
const worker: Command = async (_args, _options, config) => {
  const settings = config();
  return withStore(settings, async (store) => {
    const { default: pino } = await import("pino");
    const log = pino(redactingLoggerOptions({ level: settings.logLevel }, [settings.adminToken]));
    await openTransparencyLog(store, settings, Date.now());
    const chain = chainOperatorsOf(settings, systemClock);
    if (chain !== null) await identifyAtStart(chain, (message) => log.warn(message));
    const jobs = createWorker(store, settings, systemClock, null, log, chain);
    await jobs.openPublishers();
    jobs.start();
    log.info("worker running: finalize, deliver, purge");
    await shutdownSignal();
    await jobs.stop();
    return 0;
  });
};

const operator: Command = async (args, _options, config) => {
  if (args[0] !== "set") throw new UsageError("usage: operator set <contract> <operator>");
  const contract = requireAddress(argument(args, 1, "contract"), "contract");
  const operatorAddress = requireAddress(argument(args, 2, "operator"), "operator");
  const settings = config();
  if (settings.chain !== null) {
    console.error(
      `points-ledger: OPERATORS_ON_CHAIN: ${ERROR_CATALOGUE.OPERATORS_ON_CHAIN.message}: a contract names its operator in the registry`,
    );
    return 1;
  }
  return withStore(settings, async (store) => {
    // The CLI works on the database with the admin's authority, as the admin API does.
    await store.setOperator(contract, operatorAddress, Date.now(), ADMIN_ACTOR);
    console.log(`operator of ${checksumAddress(contract)} is ${checksumAddress(operatorAddress)}`);
    return 0;
  });
};

/** --asset and --block of `credit`: what the points were earned on, and up to which block. */
function creditSource(options: Options): { asset: string | null; block: number | null } {
  const asset = options.asset ?? null;
  if (asset !== null && !new RegExp(ASSET_PATTERN).test(asset)) throw new UsageError(`--asset must match ${ASSET_PATTERN}`);
  const block = options.block ?? null;
  if (block !== null && (!/^[0-9]{1,16}$/.test(block) || Number(block) > MAX_BLOCK)) {
    throw new UsageError(`--block must be a whole number from 0 to ${MAX_BLOCK}`);
  }
  return { asset, block: block === null ? null : Number(block) };
}

const credit: Command = async (args, options, config) => {
  const settings = config();
  const address = requireAddress(argument(args, 0, "address"), "address");
  const pointType = argument(args, 1, "pointType");
  if (!settings.pointTypes.includes(pointType))
    throw new UsageError(`pointType must be one of ${settings.pointTypes.join(", ")} (POINT_TYPES)`);
  const amount = requirePoints(argument(args, 2, "points"), "points");
  const source = creditSource(options);
  const creditId = options.id ?? randomUUID();
  return withStore(settings, async (store) => {
    const result = await store.credit({ address, creditId, pointType, amount, createdAtMs: Date.now(), ...source }, ADMIN_ACTOR);
    if (result.kind === "credited") console.log(`credited ${args[2]} ${pointType} to ${checksumAddress(address)} (creditId ${creditId})`);
    else if (result.kind === "exists") console.log(`${alreadyExistsMessage("credit", creditId)} (matches: ${result.matchesRequest})`);
    else console.log(`refused: the total supply of ${pointType} (all credits together) would pass 10^18 points`);
    return result.kind === "credited" || (result.kind === "exists" && result.matchesRequest) ? 0 : 1;
  });
};

const verify: Command = async (_args, _options, config) =>
  withStore(config(), async (store) => {
    const violations = [...(await store.verify()), ...logLagViolations(await store.logStatus(), Date.now())];
    for (const violation of violations) console.log(`invariant ${violation.invariant}: ${violation.message}`);
    console.log(violations.length === 0 ? "ledger verified: all invariants hold" : `${violations.length} violation(s)`);
    return violations.length === 0 ? 0 : 1;
  });

const demo: Command = async () => runDemo();

/** `migrate` and `backup` are in ops-commands.ts (their own options). */
export const commands: Record<string, Command> = { serve, worker, finalizer: worker, operator, credit, verify, demo };
