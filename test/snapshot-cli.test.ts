import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePoints } from "../src/domain/points.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { assertBuilt, CLI_PATH } from "./helpers/process.js";
import { randomAddress } from "./helpers/postgres.js";

/** `points-ledger snapshot take|show|proof|export`: the built CLI on a SQLite file, checked against StandardMerkleTree. */

const run = promisify(execFile);
let dir: string;
let env: NodeJS.ProcessEnv;
const early = randomAddress();
const holders = [
  { address: randomAddress(), points: "12.5" },
  { address: randomAddress(), points: "0.000000000001" },
  { address: randomAddress(), points: "7" },
];

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI_PATH, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), "points-ledger-snapshot-cli-"));
  env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`, LOG_LEVEL: "silent" };
  const store = createSqliteStore({ path: join(dir, "ledger.db"), synchronous: "NORMAL" });
  await store.migrate();
  for (const [i, holder] of holders.entries()) {
    await store.credit({
      address: holder.address,
      creditId: `c${i}`,
      pointType: "PHASE2_POINTS",
      amount: parsePoints(holder.points)!,
      createdAtMs: Date.now(),
    });
  }
  // PHASE2_GOLD: one holder credited two hours ago, one just now (for --as-of).
  await store.credit({ address: early, creditId: "early", pointType: "PHASE2_GOLD", amount: 5n, createdAtMs: Date.now() - 7_200_000 });
  await store.credit({ address: randomAddress(), creditId: "late", pointType: "PHASE2_GOLD", amount: 6n, createdAtMs: Date.now() });
  await store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("points-ledger snapshot", () => {
  const values = [...holders]
    .sort((a, b) => (a.address < b.address ? -1 : 1))
    .map((holder) => [getAddress(holder.address), (parsePoints(holder.points)! * 10n ** 6n).toString()]);
  const reference = StandardMerkleTree.of(values, ["address", "uint256"]);

  it("takes, shows, proves and exports a snapshot identical to StandardMerkleTree's", async () => {
    const taken = await cli("snapshot", "take", "season-1", "--point-type", "PHASE2_POINTS");
    expect(taken.code, taken.stderr).toBe(0);
    expect(JSON.parse(taken.stdout)).toMatchObject({
      id: "season-1",
      root: reference.root,
      leafCount: 3,
      total: "19.500000000001",
      decimals: 18,
    });
    const shown = await cli("snapshot", "show", "season-1");
    expect(JSON.parse(shown.stdout)).toEqual(JSON.parse(taken.stdout));
    const [address, amount] = values[1]!;
    const proof = await cli("snapshot", "proof", "season-1", address!.toLowerCase());
    expect(JSON.parse(proof.stdout)).toEqual({
      address,
      amount,
      points: holders.find((h) => h.address === address!.toLowerCase())!.points,
      proof: reference.getProof([address!, amount!]),
    });
    const out = join(dir, "tree.json");
    expect((await cli("snapshot", "export", "season-1", "--out", out)).code).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(JSON.stringify(reference.dump()));
  });

  it("takes a snapshot as of a past time with --as-of, and refuses one less than 60 s ago (exit 2)", async () => {
    const asOf = new Date(Date.now() - 3_600_000).toISOString();
    const taken = await cli("snapshot", "take", "as-of", "--point-type", "PHASE2_GOLD", "--decimals", "12", "--as-of", asOf);
    expect(taken.code, taken.stderr).toBe(0);
    const root = StandardMerkleTree.of([[getAddress(early), "5"]], ["address", "uint256"]).root;
    expect(JSON.parse(taken.stdout)).toMatchObject({ id: "as-of", asOf, leafCount: 1, total: "0.000000000005", root });
    const recent = await cli("snapshot", "take", "too-recent", "--point-type", "PHASE2_GOLD", "--as-of", new Date().toISOString());
    expect(recent.code).toBe(2);
    expect(recent.stderr).toContain("--as-of");
  });

  it("refuses a reused id with other parameters and usage errors with exit 2", async () => {
    const again = await cli("snapshot", "take", "season-1", "--point-type", "PHASE2_POINTS", "--decimals", "12");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("matches this request: false");
    expect((await cli("snapshot", "take", "s2", "--point-type", "NOPE")).code).toBe(2);
    expect((await cli("snapshot", "proof", "season-1", randomAddress())).code).toBe(1);
    expect((await cli("snapshot", "show", "missing")).code).toBe(1);
  });
});
