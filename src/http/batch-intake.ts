import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker, type ResourceLimits } from "node:worker_threads";
import secureJson from "secure-json-parse";
import type { Config } from "../config.js";
import type { AddressKey } from "../domain/address.js";
import type { NewBatch, Transfer } from "../domain/batch.js";
import { ApiError, assertInvariant, validationFailed, type FieldError } from "../domain/errors.js";
import { INTAKE_WORKER_HEAP_BASE_MB, INTAKE_WORKER_HEAP_PER_BODY_MB, INTAKE_WORKER_YOUNG_GENERATION_MB } from "../domain/limits.js";
import { EMPTY_BODY_MESSAGE, MALFORMED_REQUEST_MESSAGE } from "../domain/messages.js";
import { toNewBatch, type BatchBody, type BatchRules } from "../domain/validate.js";
import { batchBodySchema } from "./schemas.js";
import { boundedBodyValidator, fieldErrorsOf, type SchemaNode, type Validate } from "./validation.js";

/**
 * The intake of a submitted batch body — JSON parse, schema, ledger rules (checksums, exact
 * points) — as one pure step, so it can run beside the writer: the main thread receives the
 * bytes and stores the batch, worker threads turn bytes into a NewBatch (issue 12: the accept
 * path used one core while the other idled). The answers are the same as inline, to the message.
 */

export interface IntakeRequest {
  /** The raw body; undefined when the request had none. */
  body: Uint8Array | undefined;
  contract: AddressKey;
  batchId: string;
  nowMs: number;
}

export type IntakeAnswer = { ok: true; batch: NewBatch } | { ok: false; message: string; details: FieldError[] };

const WORKER_URL = new URL("./batch-intake-worker.js", import.meta.url);
/** A worker that exits sooner than this after its start is not replaced (it would only die again). */
const RESPAWN_MIN_LIFETIME_MS = 1000;

/** Fastify's own text for this case, kept so answers do not change with where the intake runs (so is EMPTY_BODY_MESSAGE). */
const INVALID_JSON = "Body is not valid JSON but content-type is set to 'application/json'";

export interface Intake {
  validate: Validate;
  rules: BatchRules;
}

export function createIntake(config: Config): Intake {
  return { validate: boundedBodyValidator(batchBodySchema(config) as SchemaNode), rules: config };
}

function refused(error: ApiError): IntakeAnswer {
  return { ok: false, message: error.message, details: (error.details as FieldError[] | undefined) ?? [] };
}

/** Bytes → NewBatch, or the VALIDATION_FAILED answer naming every offending field. */
export function intakeBatch(intake: Intake, request: IntakeRequest): IntakeAnswer {
  let data: unknown;
  if (request.body !== undefined) {
    if (request.body.length === 0) return refused(validationFailed([{ path: "(body)", message: EMPTY_BODY_MESSAGE }]));
    try {
      // Prototype poisoning is refused, as Fastify's own JSON parser is configured to.
      data = secureJson.parse(
        Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength).toString("utf8"),
        undefined,
        {
          protoAction: "error",
          constructorAction: "error",
        },
      );
    } catch {
      return refused(validationFailed([{ path: "(body)", message: INVALID_JSON }], MALFORMED_REQUEST_MESSAGE));
    }
  }
  const schemaErrors = intake.validate(data) ? [] : fieldErrorsOf(intake.validate.errors ?? []);
  try {
    return { ok: true, batch: toNewBatch(request.contract, request.batchId, data as BatchBody, intake.rules, request.nowMs, schemaErrors) };
  } catch (error) {
    if (error instanceof ApiError) return refused(error);
    throw error;
  }
}

/** An accepted batch as it crosses threads: the transfers packed into one string and two typed arrays. */
interface PackedBatch {
  batch: Omit<NewBatch, "transfers">;
  /** Every recipient's 42-character AddressKey, one after another. */
  addresses: string;
  /** Each amount's bits 64 and up, and its low 64 bits (amounts reach 10^30 units). */
  amountsHigh: BigUint64Array;
  amountsLow: BigUint64Array;
}

export type WireAnswer = { ok: true; packed: PackedBatch } | Extract<IntakeAnswer, { ok: false }>;

const ADDRESS_KEY_LENGTH = 42;
const LOW_64_BITS = (1n << 64n) - 1n;

/**
 * The worker's answer for postMessage, with the buffers to move rather than copy. 2,000 transfer
 * objects took the main thread 1.8 ms to deserialize per batch (and their garbage after); packed,
 * receiving and unpacking takes 0.16 ms (docs/performance.md, change 3).
 */
export function packAnswer(answer: IntakeAnswer): { wire: WireAnswer; transfer: ArrayBuffer[] } {
  if (!answer.ok) return { wire: answer, transfer: [] };
  const { transfers, ...batch } = answer.batch;
  const amountsHigh = new BigUint64Array(transfers.length);
  const amountsLow = new BigUint64Array(transfers.length);
  let addresses = "";
  for (let i = 0; i < transfers.length; i++) {
    const { toAddress, amount } = transfers[i]!;
    assertInvariant(toAddress.length === ADDRESS_KEY_LENGTH, `recipient ${i} is not an address key`);
    addresses += toAddress;
    amountsHigh[i] = amount >> 64n;
    amountsLow[i] = amount & LOW_64_BITS;
  }
  return {
    wire: { ok: true, packed: { batch, addresses, amountsHigh, amountsLow } },
    transfer: [amountsHigh.buffer as ArrayBuffer, amountsLow.buffer as ArrayBuffer],
  };
}

/** The IntakeAnswer a worker packed (packAnswer), on the receiving thread. */
export function unpackAnswer(wire: WireAnswer): IntakeAnswer {
  if (!wire.ok) return wire;
  const { batch, addresses, amountsHigh, amountsLow } = wire.packed;
  const transfers: Transfer[] = new Array(amountsLow.length);
  for (let i = 0; i < transfers.length; i++) {
    const high = amountsHigh[i]!;
    transfers[i] = {
      toAddress: addresses.slice(i * ADDRESS_KEY_LENGTH, (i + 1) * ADDRESS_KEY_LENGTH) as AddressKey,
      amount: high === 0n ? amountsLow[i]! : (high << 64n) | amountsLow[i]!,
    };
  }
  return { ok: true, batch: { ...batch, transfers } };
}

interface Pending {
  resolve(answer: IntakeAnswer): void;
  reject(error: Error): void;
}

/**
 * Runs intakeBatch in `threads` worker threads (inline when 0). Each request goes to the worker
 * with the fewest in flight; the body's bytes are moved, not copied, when they own their buffer.
 * A worker that dies fails what it held (500, never a wrong answer) and is replaced.
 */
export class IntakePool {
  private inline: Intake | null;
  private readonly workers: { worker: Worker; pending: Map<number, Pending> }[] = [];
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly config: Config,
    threads: number,
  ) {
    // The worker is compiled JavaScript (dist/); run from the TypeScript sources (tests), the
    // intake runs inline — the same function, so the same answers.
    const usable = threads > 0 && existsSync(fileURLToPath(WORKER_URL));
    this.inline = usable ? null : createIntake(config);
    if (usable) for (let i = 0; i < threads; i++) this.workers.push(this.spawn());
  }

  async run(request: IntakeRequest): Promise<IntakeAnswer> {
    if (this.inline) return intakeBatch(this.inline, request);
    if (this.workers.length === 0) this.inline = createIntake(this.config);
    if (this.inline) return intakeBatch(this.inline, request);
    let slot = this.workers[0]!;
    for (const candidate of this.workers) if (candidate.pending.size < slot.pending.size) slot = candidate;
    const id = this.nextId++;
    const body = request.body && ownsBuffer(request.body) ? request.body : request.body && Uint8Array.from(request.body);
    return new Promise<IntakeAnswer>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, request: { ...request, body } }, body ? [body.buffer as ArrayBuffer] : []);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map(({ worker }) => worker.terminate()));
  }

  private spawn(): { worker: Worker; pending: Map<number, Pending> } {
    const worker = new Worker(WORKER_URL, { workerData: { config: this.config }, resourceLimits: intakeWorkerLimits(this.config) });
    const startedMs = Date.now();
    const slot = { worker, pending: new Map<number, Pending>() };
    worker.on("message", ({ id, answer }: { id: number; answer: WireAnswer }) => {
      slot.pending.get(id)?.resolve(unpackAnswer(answer));
      slot.pending.delete(id);
    });
    const fail = (error: Error) => {
      for (const pending of slot.pending.values()) pending.reject(error);
      slot.pending.clear();
      const index = this.workers.indexOf(slot);
      if (this.closed || index === -1) return;
      // A worker that dies at once would die again: run inline from then on instead of looping.
      if (Date.now() - startedMs < RESPAWN_MIN_LIFETIME_MS) this.workers.splice(index, 1);
      else this.workers[index] = this.spawn();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`batch intake worker exited with code ${code}`)));
    worker.unref();
    return slot;
  }
}

/** A worker holds one body's parse tree at a time: its heap is sized for that, not for the process (limits.ts). */
function intakeWorkerLimits(config: Config): ResourceLimits {
  const bodyMb = Math.ceil(config.bodyLimitBytes / 1_048_576);
  return {
    maxOldGenerationSizeMb: INTAKE_WORKER_HEAP_BASE_MB + INTAKE_WORKER_HEAP_PER_BODY_MB * bodyMb,
    maxYoungGenerationSizeMb: INTAKE_WORKER_YOUNG_GENERATION_MB,
  };
}

/** A Uint8Array that is its whole ArrayBuffer can be transferred without taking others' bytes with it. */
function ownsBuffer(bytes: Uint8Array): boolean {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
}
