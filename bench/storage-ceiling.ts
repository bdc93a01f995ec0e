import { randomBytes } from "node:crypto";
import { loadConfig } from "../src/config.js";
import type { AddressKey } from "../src/domain/address.js";
import type { NewBatch } from "../src/domain/batch.js";
import { toNewBatch, type BatchBody } from "../src/domain/validate.js";
import { batchBodySchema } from "../src/http/schemas.js";
import { validatorCompiler } from "../src/http/validation.js";
import { openStore } from "../src/ledger/open.js";
import type { LedgerStore } from "../src/store/store.js";
import { buildTransfers, encodeBodies, type PayloadSpec } from "./payload.js";

/**
 * The storage ceiling: the same batches the HTTP load sends, written by the store directly in a
 * loop, no HTTP. Also times each CPU stage of the request path on its own (JSON.parse, the body
 * schema, domain validation) so the report can say where a batch's time goes. Run as a child of
 * the bench (so `--cpu-prof` can profile it alone); prints one JSON line.
 */

export interface StorageCeilingSpec {
  payload: PayloadSpec;
  durationSec: number;
  /** Concurrent submit loops: 1 for SQLite (one synchronous writer), more for PostgreSQL. */
  concurrency: number;
  secondsToFinalize: number;
}

export interface StorageCeilingResult {
  transfersPerSec: number;
  batches: number;
  /** Transfers per second of each CPU stage alone, one core. */
  stages: { jsonParse: number; schema: number; domain: number };
}

/** Each CPU stage is timed for this long. */
const STAGE_MS = 700;

/** Untimed rounds first, so the JIT has compiled the stage before it is timed. */
const STAGE_WARMUP_MS = 300;

function rate(transfersPerRound: number, run: () => void, budgetMs: number): number {
  for (const warmupEnd = performance.now() + STAGE_WARMUP_MS; performance.now() < warmupEnd;) run();
  const start = performance.now();
  let rounds = 0;
  while (performance.now() - start < budgetMs) {
    run();
    rounds++;
  }
  return (rounds * transfersPerRound) / ((performance.now() - start) / 1000);
}

function timeStages(spec: StorageCeilingSpec, raw: Buffer[], contract: AddressKey) {
  const config = loadConfig(process.env);
  const validate = validatorCompiler({ schema: batchBodySchema(config), httpPart: "body", method: "PUT", url: "/" });
  const parsed = raw.map((body) => JSON.parse(body.toString()) as BatchBody);
  const perBatch = spec.payload.transfersPerBatch;
  let i = 0;
  const next = <T>(list: T[]) => list[i++ % list.length]!;
  return {
    jsonParse: rate(perBatch, () => JSON.parse(next(raw).toString()), STAGE_MS),
    schema: rate(
      perBatch,
      () => {
        if (validate(next(parsed)) !== true) throw new Error("the bench body fails the schema");
      },
      STAGE_MS,
    ),
    domain: rate(perBatch, () => toNewBatch(contract, "stage", next(parsed), config, Date.now()), STAGE_MS),
  };
}

async function submitLoop(store: LedgerStore, templates: NewBatch[], deadlineMs: number, loop: number): Promise<number> {
  let count = 0;
  while (performance.now() < deadlineMs) {
    const template = templates[count % templates.length]!;
    const result = await store.submitBatch({ ...template, batchId: `ceiling-${loop}-${count}`, createdAtMs: Date.now() });
    if (result.kind !== "accepted") throw new Error(`storage ceiling: submit answered ${result.kind}`);
    count++;
  }
  return count;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as StorageCeilingSpec;
  const config = loadConfig(process.env);
  const contract = `0x${randomBytes(20).toString("hex")}` as AddressKey;
  const raw = encodeBodies(spec.payload, buildTransfers(spec.payload, new Set([contract])), spec.secondsToFinalize);
  const stages = timeStages(spec, raw, contract);
  const store = await openStore(config);
  try {
    await store.migrate();
    await store.credit({
      address: contract,
      creditId: "ceiling",
      pointType: spec.payload.pointType,
      amount: 10n ** 27n,
      createdAtMs: Date.now(),
    });
    const templates = raw.map((body) => toNewBatch(contract, "template", JSON.parse(body.toString()) as BatchBody, config, Date.now()));
    const startMs = performance.now();
    const deadlineMs = startMs + spec.durationSec * 1000;
    const loops = Array.from({ length: spec.concurrency }, (_, loop) => submitLoop(store, templates, deadlineMs, loop));
    const batches = (await Promise.all(loops)).reduce((sum, n) => sum + n, 0);
    const elapsedSec = (performance.now() - startMs) / 1000;
    const result: StorageCeilingResult = { transfersPerSec: (batches * spec.payload.transfersPerBatch) / elapsedSec, batches, stages };
    process.stdout.write(JSON.stringify(result) + "\n");
  } finally {
    await store.close();
  }
}

await main();
