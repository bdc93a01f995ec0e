import { parentPort, workerData } from "node:worker_threads";
import type { Config } from "../config.js";
import { createIntake, intakeBatch, packAnswer, type IntakeRequest } from "./batch-intake.js";

/** A worker thread of IntakePool (batch-intake.ts): bytes in, a packed NewBatch or field errors out. */
const intake = createIntake((workerData as { config: Config }).config);

parentPort!.on("message", ({ id, request }: { id: number; request: IntakeRequest }) => {
  const { wire, transfer } = packAnswer(intakeBatch(intake, request));
  parentPort!.postMessage({ id, answer: wire }, transfer);
});
