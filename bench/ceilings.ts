import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { batchLoad } from "./load.js";
import type { StorageCeilingResult, StorageCeilingSpec } from "./storage-ceiling.js";
import { freePort, startChild } from "./server-process.js";

const HTTP_CEILING_SCRIPT = fileURLToPath(new URL("./http-ceiling.js", import.meta.url));
const STORAGE_CEILING_SCRIPT = fileURLToPath(new URL("./storage-ceiling.js", import.meta.url));
/** Bound on the storage ceiling child beyond its own duration (set-up, stage timings, exit). */
const STORAGE_CEILING_SLACK_MS = 60_000;

/**
 * HTTP ceiling: the same PUTs, same connections and duration, against a bare Fastify route that
 * only parses and validates. A short warm-up first so both sides are compiled by the JIT.
 */
export async function measureHttpCeiling(options: {
  env: Record<string, string>;
  bodies: Buffer[];
  contract: string;
  connections: number;
  durationSec: number;
  warmupSec: number;
  transfersPerBatch: number;
  nodeArgs: string[];
}): Promise<number> {
  const port = await freePort();
  const child = await startChild({
    name: "http-ceiling",
    script: HTTP_CEILING_SCRIPT,
    env: { ...options.env, PORT: String(port) },
    port,
    readyPath: "/readyz",
    nodeArgs: options.nodeArgs,
  });
  try {
    const load = (durationSec: number, prefix: string) =>
      batchLoad({
        targets: [child.url],
        token: "not-checked",
        contract: options.contract,
        bodies: options.bodies,
        batchIdPrefix: prefix,
        connections: options.connections,
        durationSec,
      });
    await load(options.warmupSec, "warmup");
    const result = await load(options.durationSec, "ceiling");
    if (result.non2xx > 0) throw new Error(`http ceiling answered non-2xx: ${result.firstFailure}`);
    return (result.ok * options.transfersPerBatch) / result.durationSec;
  } finally {
    await child.stop();
  }
}

/** Storage ceiling: a child process that writes the same batches through the store, no HTTP. */
export function measureStorageCeiling(
  spec: StorageCeilingSpec,
  env: Record<string, string>,
  nodeArgs: string[],
): Promise<StorageCeilingResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, STORAGE_CEILING_SCRIPT, JSON.stringify(spec)], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
    const timer = setTimeout(() => child.kill("SIGKILL"), spec.durationSec * 1000 + STORAGE_CEILING_SLACK_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      const line = stdout.trim().split("\n").pop() ?? "";
      if (code !== 0 || line === "") return reject(new Error(`storage ceiling failed (exit ${code}):\n${stderr}`));
      resolve(JSON.parse(line) as StorageCeilingResult);
    });
  });
}
