import { randomBytes, randomInt } from "node:crypto";
import { expect } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { formatPoints, parsePoints, sumUnits } from "../src/domain/points.js";
import {
  call,
  callOk,
  creditPoints,
  listAllBatches,
  newAdminToken,
  pollUntil,
  randomAddress,
  runCli,
  setOperator,
  signIn,
  sleep,
  startServerProcess,
  type BatchSummary,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * The crash scenario ("acknowledged means durable", README): a load of concurrent
 * multi-transfer PUTs, SIGKILL in the middle of it while the finalizer is also working,
 * restart on the same database, then every acknowledged batch is present and whole, no batch
 * is partial, every batch finalizes and the balances add up. It takes the DATABASE_URL so the
 * same scenario runs on SQLite and on PostgreSQL.
 */

const POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
type PointType = (typeof POINT_TYPES)[number];

/** Each point type is credited this much: far more than any load here can send. */
const CREDIT_POINTS = "1000000000";
/** Transfer amounts: the PHASE2_POINTS minimum (0.01) up to about 100 points, with 12 decimals. */
const MIN_TRANSFER_UNITS = parsePoints("0.01")!;
const TRANSFER_SPREAD_UNITS = 100_000_000_000_000;
/** Deadlines of the phases; generous for a loaded 2-core machine. */
const KILL_TRIGGER_DEADLINE_MS = 60_000;
const FINALIZE_DEADLINE_MS = 60_000;
const MONITOR_INTERVAL_MS = 100;

export interface CrashScenarioOptions {
  /** Extra server environment (e.g. PostgreSQL pool settings). */
  env?: Env;
  /** Concurrent PUTs kept in flight. */
  concurrency?: number;
  transfersPerBatch?: number;
  /** The kill waits for at least this many acknowledged PUTs (and one finalized batch). */
  minAcknowledgedBeforeKill?: number;
}

export interface CrashScenarioReport {
  sent: number;
  acknowledged: number;
  unanswered: number;
  inFlightAtKill: number;
  /** Unanswered PUTs whose batch was nevertheless stored (whole). */
  storedUnanswered: number;
  finalizedBeforeKill: boolean;
  readyAfterCrashMs: number;
}

interface Transfer {
  toAddress: string;
  points: string;
}

interface SentBatch {
  batchId: string;
  pointType: PointType;
  secondsToFinalize: number;
  transfers: Transfer[];
  totalUnits: bigint;
  outcome: "in-flight" | "acknowledged" | "unanswered" | { status: number; body: unknown };
}

interface Session {
  contract: string;
  token: string;
  adminToken: string;
}

function newBatch(batchId: string, transferCount: number): SentBatch {
  const pointType = POINT_TYPES[randomInt(POINT_TYPES.length)]!;
  const amounts = Array.from({ length: transferCount }, () => MIN_TRANSFER_UNITS + BigInt(randomInt(TRANSFER_SPREAD_UNITS)));
  return {
    batchId,
    pointType,
    secondsToFinalize: 1 + randomInt(3),
    transfers: amounts.map((units) => ({ toAddress: randomAddress(), points: formatPoints(units) })),
    totalUnits: sumUnits(amounts),
    outcome: "in-flight",
  };
}

async function prepareContract(server: ServerProcess, adminToken: string): Promise<Session> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(server.url, adminToken, contract, operator.address);
  for (const pointType of POINT_TYPES) {
    await creditPoints(server.url, adminToken, contract, `crash-credit-${pointType}`, pointType, CREDIT_POINTS);
  }
  return { contract, token: await signIn(server.url, contract, operator), adminToken };
}

/** PUTs one batch and records what the client learned: 200, another answer, or nothing. */
async function submit(server: ServerProcess, session: Session, batch: SentBatch): Promise<void> {
  const path = `/v1/contracts/${session.contract}/batches/${batch.batchId}`;
  const body = { pointType: batch.pointType, transfers: batch.transfers, secondsToFinalize: batch.secondsToFinalize };
  try {
    const response = await call(server.url, "PUT", path, session.token, body);
    batch.outcome = response.status === 200 ? "acknowledged" : { status: response.status, body: response.body };
  } catch {
    // Connection reset or refused: the client cannot know whether the batch was stored.
    batch.outcome = "unanswered";
  }
}

async function hasFinalizedBatch(server: ServerProcess, session: Session): Promise<boolean> {
  const response = await call(server.url, "GET", `/v1/contracts/${session.contract}/point-balances`, session.token);
  if (response.status !== 200) return false;
  const balances = response.body.balancesByPointType as Record<PointType, { finalizedSentCumulative: string }>;
  return POINT_TYPES.some((pointType) => balances[pointType].finalizedSentCumulative !== "0");
}

/**
 * Keeps `concurrency` PUTs in flight; once enough are acknowledged and the finalizer has
 * finalized something, SIGKILLs the server while PUTs are still in flight.
 */
async function loadUntilKilled(server: ServerProcess, session: Session, options: Required<Omit<CrashScenarioOptions, "env">>) {
  const sent: SentBatch[] = [];
  const runId = randomBytes(4).toString("hex");
  let killed = false;
  const worker = async () => {
    while (!killed) {
      const batch = newBatch(`crash-${runId}-${sent.length}`, options.transfersPerBatch);
      sent.push(batch);
      await submit(server, session, batch);
    }
  };
  const workers = Array.from({ length: options.concurrency }, worker);
  const startedMs = Date.now();
  let finalizedBeforeKill = false;
  for (;;) {
    await sleep(MONITOR_INTERVAL_MS);
    const acknowledged = sent.filter((batch) => batch.outcome === "acknowledged").length;
    finalizedBeforeKill ||= await hasFinalizedBatch(server, session);
    if (acknowledged >= options.minAcknowledgedBeforeKill && finalizedBeforeKill) break;
    if (Date.now() - startedMs > KILL_TRIGGER_DEADLINE_MS) break;
  }
  const inFlightAtKill = sent.filter((batch) => batch.outcome === "in-flight").length;
  killed = true;
  const exit = await server.kill("SIGKILL");
  await Promise.all(workers);
  return { sent, inFlightAtKill, finalizedBeforeKill, exit };
}

async function expectBatchWhole(server: ServerProcess, session: Session, batch: SentBatch): Promise<void> {
  const body = await callOk(server.url, "GET", `/v1/contracts/${session.contract}/batches/${batch.batchId}`, session.token);
  const stored = body.batch as BatchSummary & { transfers: Transfer[] };
  expect(stored.pointType, batch.batchId).toBe(batch.pointType);
  expect(stored.transferCount, batch.batchId).toBe(batch.transfers.length);
  expect(stored.points, batch.batchId).toBe(formatPoints(batch.totalUnits));
  expect(stored.transfers, batch.batchId).toEqual(batch.transfers);
}

async function waitAllFinalized(server: ServerProcess, session: Session): Promise<BatchSummary[]> {
  return pollUntil("every stored batch to be FINALIZED", FINALIZE_DEADLINE_MS, async () => {
    const batches = await listAllBatches(server.url, session.token, session.contract);
    return batches.every((batch) => batch.status === "FINALIZED") ? batches : undefined;
  });
}

async function expectBalancesAddUp(server: ServerProcess, session: Session, stored: SentBatch[]): Promise<void> {
  const body = await callOk(server.url, "GET", `/v1/contracts/${session.contract}/point-balances`, session.token);
  const balances = body.balancesByPointType as Record<PointType, Record<string, string>>;
  for (const pointType of POINT_TYPES) {
    const finalizedUnits = sumUnits(stored.filter((batch) => batch.pointType === pointType).map((batch) => batch.totalUnits));
    expect(balances[pointType], pointType).toMatchObject({
      finalizedSentCumulative: formatPoints(finalizedUnits),
      pendingSent: "0",
      earnedCumulative: CREDIT_POINTS,
      available: formatPoints(parsePoints(CREDIT_POINTS)! - finalizedUnits),
    });
  }
}

async function expectVerifyPasses(env: Env): Promise<void> {
  const result = await runCli(["verify"], env);
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
  expect(result.stdout).toContain("all invariants hold");
}

/** Runs the whole scenario on `databaseUrl`; a fresh contract keeps it independent of other data there. */
export async function runCrashScenario(databaseUrl: string, options: CrashScenarioOptions = {}): Promise<CrashScenarioReport> {
  const adminToken = newAdminToken();
  const env: Env = {
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "100",
    ...options.env,
  };
  const load = {
    concurrency: options.concurrency ?? 8,
    transfersPerBatch: options.transfersPerBatch ?? 200,
    minAcknowledgedBeforeKill: options.minAcknowledgedBeforeKill ?? 40,
  };
  let server = await startServerProcess(env);
  try {
    const session = await prepareContract(server, adminToken);
    const { sent, inFlightAtKill, finalizedBeforeKill, exit } = await loadUntilKilled(server, session, load);
    expect(exit.signal).toBe("SIGKILL");
    expect(inFlightAtKill, "the kill must interrupt PUTs in flight").toBeGreaterThan(0);
    expect(finalizedBeforeKill, "the finalizer must have been working when the kill came").toBe(true);
    const refused = sent.filter((batch) => typeof batch.outcome === "object");
    expect(
      refused.map((batch) => batch.outcome),
      "every answered PUT before the kill",
    ).toEqual([]);
    const acknowledged = sent.filter((batch) => batch.outcome === "acknowledged");
    expect(acknowledged.length).toBeGreaterThanOrEqual(load.minAcknowledgedBeforeKill);

    // The crashed database, before any server touches it again.
    await expectVerifyPasses(env);

    server = await startServerProcess(env);
    for (const batch of acknowledged) await expectBatchWhole(server, session, batch);
    const finalized = await waitAllFinalized(server, session);
    const sentById = new Map(sent.map((batch) => [batch.batchId, batch]));
    const stored = finalized.map((summary) => sentById.get(summary.id));
    expect(
      stored.filter((batch) => batch === undefined),
      "stored batches nobody sent",
    ).toEqual([]);
    const storedBatches = stored as SentBatch[];
    for (const batch of storedBatches.filter((candidate) => candidate.outcome !== "acknowledged")) {
      await expectBatchWhole(server, session, batch);
    }
    const storedIds = new Set(finalized.map((summary) => summary.id));
    expect(acknowledged.filter((batch) => !storedIds.has(batch.batchId)).map((batch) => batch.batchId)).toEqual([]);
    await expectBalancesAddUp(server, session, storedBatches);

    const stop = await server.kill("SIGTERM");
    expect(stop.code, server.output()).toBe(0);
    await expectVerifyPasses(env);
    return {
      sent: sent.length,
      acknowledged: acknowledged.length,
      unanswered: sent.filter((batch) => batch.outcome === "unanswered").length,
      inFlightAtKill,
      storedUnanswered: storedBatches.length - acknowledged.length,
      finalizedBeforeKill,
      readyAfterCrashMs: server.readyMs,
    };
  } finally {
    await server.kill("SIGKILL");
  }
}
