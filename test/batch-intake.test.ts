import { rmSync } from "node:fs";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewBatch } from "../src/domain/batch.js";
import { formatPoints, parsePoints } from "../src/domain/points.js";
import { packAnswer, unpackAnswer, type IntakeAnswer } from "../src/http/batch-intake.js";
import {
  assertBuilt,
  creditPoints,
  newAdminToken,
  randomAddress,
  setOperator,
  signIn,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";

/**
 * Submitted batch bodies are parsed and validated in a worker thread beside the writer
 * (src/http/batch-intake.ts). Two real server processes, one with BATCH_INTAKE_THREADS=1 and one
 * with 0 (inline, as the in-process tests run): every body, good or bad, gets the same answer
 * from both, and the threaded one stores what it accepts exactly.
 */

const dir = tempDir("intake");
const checksummed = randomAddress();
const bodies: { name: string; body: string | undefined; contentType?: string }[] = [
  { name: "a valid batch", body: JSON.stringify({ pointType: "PHASE2_POINTS", transfers: [{ toAddress: checksummed, points: "1.5" }] }) },
  { name: "an empty body", body: "" },
  { name: "malformed JSON", body: '{"pointType": "PHASE2_POINTS", "transfers": [' },
  { name: "a __proto__ key", body: '{"__proto__": {"x": 1}, "pointType": "PHASE2_POINTS", "transfers": []}' },
  { name: "JSON null", body: "null" },
  {
    name: "schema and rule errors together",
    body: JSON.stringify({
      pointType: "PHASE2_POINTS",
      transfers: [
        { toAddress: checksummed.toLowerCase(), points: "abc" },
        { toAddress: `0x${"0".repeat(40)}`, points: "1" },
        { toAddress: checksummed, points: "0.001" },
      ],
      secondsToFinalize: 5,
      extra: true,
    }),
  },
  {
    name: "2,500 empty transfers",
    body: JSON.stringify({ pointType: "PHASE2_POINTS", transfers: Array.from({ length: 2500 }, () => ({})) }),
  },
  {
    name: "300 transfers with extra keys",
    body: JSON.stringify({
      pointType: "PHASE2_POINTS",
      transfers: Array.from({ length: 300 }, () => ({ toAddress: checksummed, points: "1", x: 1 })),
    }),
  },
  {
    name: "a bad checksum",
    body: JSON.stringify({ pointType: "PHASE2_POINTS", transfers: [{ toAddress: breakChecksum(checksummed), points: "1" }] }),
  },
];

function breakChecksum(address: string): string {
  const letter = [...address].findIndex((c, i) => i >= 2 && /[a-fA-F]/.test(c));
  const c = address[letter]!;
  return address.slice(0, letter) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + address.slice(letter + 1);
}

interface Deployment {
  server: ServerProcess;
  contract: string;
  token: string;
}

async function deploy(name: string, threads: string): Promise<Deployment> {
  const adminToken = newAdminToken();
  const server = await startServerProcess({
    DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`,
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    DEFAULT_FINALIZE_SECONDS: "60",
    BATCH_INTAKE_THREADS: threads,
  });
  const contract = randomAddress();
  const operator = privateKeyToAccount(generatePrivateKey());
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "seed", "PHASE2_POINTS", "1000");
  return { server, contract, token: await signIn(server.url, contract, operator) };
}

async function put(deployment: Deployment, batchId: string, body: string | undefined): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${deployment.server.url}/v1/contracts/${deployment.contract}/batches/${batchId}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${deployment.token}`, "content-type": "application/json" },
    body,
  });
  return { status: response.status, json: await response.json() };
}

describe("the answer as it crosses threads (packAnswer / unpackAnswer)", () => {
  it("gives back every field, recipient and exact amount, also past 64 bits, and moves its buffers", () => {
    const amounts = [1n, (1n << 64n) - 1n, 1n << 64n, 10n ** 30n, 10n ** 18n * 10n ** 12n - 1n, 123_456_789_012_345_678_901n];
    const batch = {
      contract: randomAddress().toLowerCase(),
      batchId: "packed-1",
      pointType: "PHASE2_POINTS",
      transfers: amounts.map((amount) => ({ toAddress: randomAddress().toLowerCase(), amount })),
      total: amounts.reduce((a, b) => a + b),
      secondsToFinalize: 3600,
      createdAtMs: 1_795_000_000_123,
    } as NewBatch;
    const { wire, transfer } = packAnswer({ ok: true, batch });
    expect(transfer).toHaveLength(2);
    const received = structuredClone(wire, { transfer });
    expect(transfer.every((buffer) => buffer.byteLength === 0)).toBe(true);
    expect(unpackAnswer(received)).toEqual({ ok: true, batch });
  });

  it("passes a refusal through unchanged, with nothing to move", () => {
    const refusal: IntakeAnswer = { ok: false, message: "validation failed", details: [{ path: "transfers/0/points", message: "bad" }] };
    const { wire, transfer } = packAnswer(refusal);
    expect(transfer).toEqual([]);
    expect(unpackAnswer(structuredClone(wire))).toEqual(refusal);
  });
});

describe("batch intake in a worker thread", () => {
  let threaded: Deployment;
  let inline: Deployment;

  beforeAll(async () => {
    assertBuilt();
    [threaded, inline] = await Promise.all([deploy("threaded", "1"), deploy("inline", "0")]);
  });
  afterAll(async () => {
    await Promise.all([threaded, inline].filter(Boolean).map((d) => d.server.kill("SIGTERM")));
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(bodies)("answers $name exactly as the inline intake does", async ({ name, body }) => {
    const batchId = `b-${name.replace(/[^a-z0-9]/gi, "")}`;
    const [fromThread, fromInline] = await Promise.all([put(threaded, batchId, body), put(inline, batchId, body)]);
    expect(fromThread).toEqual(fromInline);
    if (name === "a valid batch") expect(fromThread.status).toBe(200);
    else expect(fromThread.status).toBe(400);
  });

  it("stores a full batch from the thread exactly: 2,000 transfers, exact amounts, checksummed recipients", async () => {
    const transfers = Array.from({ length: 2000 }, (_, i) => ({
      toAddress: randomAddress(),
      points: `0.01${String(i + 1).padStart(10, "0")}`,
    }));
    const answer = await put(threaded, "full", JSON.stringify({ pointType: "PHASE2_POINTS", transfers }));
    expect(answer).toEqual({ status: 200, json: { success: true, batchId: "full" } });
    const read = await fetch(`${threaded.server.url}/v1/contracts/${threaded.contract}/batches/full`, {
      headers: { authorization: `Bearer ${threaded.token}` },
    });
    const stored = (await read.json()) as { batch: { transfers: { toAddress: string; points: string }[]; points: string } };
    // Printed without trailing fractional zeros.
    expect(stored.batch.transfers).toEqual(transfers.map((t) => ({ ...t, points: formatPoints(parsePoints(t.points)!) })));
    // 2000 × 0.01 points, and (1 + 2 + … + 2000) × 10^-12.
    expect(stored.batch.points).toBe("20.000002001");
  });
});
