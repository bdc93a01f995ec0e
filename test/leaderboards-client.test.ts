import { randomUUID } from "node:crypto";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsApiError, PointsClient, PublicClient, type LeaderboardEntry } from "../src/client/index.js";
import { newAdminToken, pollUntil, randomAddress, runCli, startOperatedServer, type ServerProcess } from "./helpers/process.js";

/**
 * Leaderboards and `asOf` from the client and the CLI (issue 22), against a real server process:
 * `client.leaderboardPage`, the `client.leaderboard` iterator, `client.rank`, `asOf` on the balance
 * reads, and `points-ledger leaderboard | rank | balances --as-of`.
 */

const FINALIZED_WITHIN_MS = 15_000;

let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;
let client: PointsClient;
const adminToken = newAdminToken();
const operatorKey = generatePrivateKey();
const contract = randomAddress();
/** Seven recipients with ties (ranks 1, 2, 3, 3, 3, 6, 7), and a moment before any of them was paid. */
const amounts = ["9", "8", "7", "7", "7", "3", "0.5"];
const recipients = amounts.map(() => randomAddress());
let beforePayment: Date;
let today: string;

beforeAll(async () => {
  ({ server, stop } = await startOperatedServer("points-ledger-lb-client-", { adminToken, operatorKey, contract, points: "100" }));
  client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
  beforePayment = new Date();
  const batchId = randomUUID();
  await client.submitBatch(batchId, {
    pointType: "PHASE2_POINTS",
    transfers: recipients.map((toAddress, i) => ({ toAddress, points: amounts[i]! })),
    secondsToFinalize: 1,
  });
  // The server's finalizer moves it within about a second of finalizeAt; nothing to await but its status.
  const finalizedAt = await pollUntil("the batch to finalize", FINALIZED_WITHIN_MS, async () => {
    const batch = await client.getBatch(batchId);
    return batch.status === "FINALIZED" ? Date.parse(batch.finalizedAt!) : undefined;
  });
  // Then the board counts it: its through is at or past the batch's finalizedAt (API.md).
  await pollUntil("the leaderboards to count the batch", FINALIZED_WITHIN_MS, async () =>
    Date.parse((await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 1 })).through) >= finalizedAt ? true : undefined,
  );
  today = new Date().toISOString().slice(0, 10);
});

afterAll(async () => {
  await stop?.();
});

describe("PointsClient leaderboards", () => {
  it("leaderboardPage answers one page; leaderboard iterates every entry across pages; rank answers one address", async () => {
    const whole = await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 1000 });
    expect(Object.keys(whole).sort()).toEqual(["cursor", "entries", "from", "participants", "pointType", "through", "to"]);
    expect(whole).toMatchObject({ pointType: "PHASE2_POINTS", from: null, to: null, participants: 7, cursor: null });
    expect(whole.entries.map((entry) => [entry.rank, entry.points])).toEqual([
      [1, "9"],
      [2, "8"],
      [3, "7"],
      [3, "7"],
      [3, "7"],
      [6, "3"],
      [7, "0.5"],
    ]);
    const first = await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 3 });
    expect(first.entries).toEqual(whole.entries.slice(0, 3));
    expect(first.cursor).not.toBeNull();
    const second = await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 3, cursor: first.cursor! });
    expect(second.entries).toEqual(whole.entries.slice(3, 6));

    const iterated: LeaderboardEntry[] = [];
    for await (const entry of client.leaderboard({ pointType: "PHASE2_POINTS", limit: 2 })) iterated.push(entry);
    expect(iterated).toEqual(whole.entries);

    const top = whole.entries[0]!;
    expect(await client.rank(top.address.toLowerCase(), { pointType: "PHASE2_POINTS" })).toEqual({
      address: top.address,
      rank: 1,
      points: "9",
      participants: 7,
      through: expect.any(String),
    });
    const stranger = randomAddress();
    expect(await client.rank(stranger, { pointType: "PHASE2_POINTS" })).toEqual({
      address: stranger,
      rank: null,
      points: "0",
      participants: 7,
      through: expect.any(String),
    });
  });

  it("the admin client reads any contract's board with leaderboardPageOf, leaderboardOf and rankOf; without a token it is 401 here (no PUBLIC_READS)", async () => {
    const whole = await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 1000 });
    const admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
    expect(await admin.leaderboardPageOf(contract.toLowerCase(), { pointType: "PHASE2_POINTS", limit: 1000 })).toEqual({
      ...whole,
      through: expect.any(String),
    });
    const iterated: LeaderboardEntry[] = [];
    for await (const entry of admin.leaderboardOf(contract, { pointType: "PHASE2_POINTS", limit: 3 })) iterated.push(entry);
    expect(iterated).toEqual(whole.entries);
    const last = whole.entries.at(-1)!;
    expect(await admin.rankOf(contract, last.address, { pointType: "PHASE2_POINTS" })).toEqual({
      ...last,
      participants: 7,
      through: expect.any(String),
    });
    const anonymous = await new PublicClient({ baseUrl: server.url })
      .leaderboardPageOf(contract, { pointType: "PHASE2_POINTS" })
      .catch((error: unknown) => error);
    expect(PointsApiError.is(anonymous, "UNAUTHORIZED")).toBe(true);
  });

  it("from and to take days or Dates (their UTC day); a bad query is a PointsApiError naming the field", async () => {
    const window = await client.leaderboardPage({ pointType: "PHASE2_POINTS", from: new Date(), to: "2099-01-01" });
    expect(window).toMatchObject({ from: today, to: "2099-01-01", participants: 7 });
    const past = await client.leaderboardPage({ pointType: "PHASE2_POINTS", to: "2000-01-01" });
    expect(past).toEqual({
      pointType: "PHASE2_POINTS",
      from: null,
      to: "2000-01-01",
      participants: 0,
      through: expect.any(String),
      entries: [],
      cursor: null,
    });
    const refused = await client.leaderboardPage({ pointType: "PHASE2_POINTS", from: "2026-02-30" }).catch((error: unknown) => error);
    expect(PointsApiError.is(refused, "VALIDATION_FAILED") && refused.details?.map((detail) => detail.path)).toEqual(["from"]);
  });

  it("asOf on the contract's and any address's balances answers them as they stood, without byAsset", async () => {
    const now = await client.getBalances();
    expect(now.PHASE2_POINTS?.finalizedSentCumulative).toBe("41.5");
    expect(now.PHASE2_POINTS?.byAsset).toBeDefined();
    const then = await client.getBalances({ asOf: beforePayment });
    expect(then.PHASE2_POINTS).toEqual({
      available: "100",
      pendingSent: "0",
      earnedCumulative: "100",
      receivedCumulative: "0",
      finalizedSentCumulative: "0",
    });
    const admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
    const recipientThen = await admin.getAddressBalances(recipients[0]!, { asOf: beforePayment.toISOString() });
    expect(recipientThen.PHASE2_POINTS).toEqual({
      available: "0",
      pendingSent: "0",
      earnedCumulative: "0",
      receivedCumulative: "0",
      finalizedSentCumulative: "0",
    });
    expect((await admin.getAddressBalances(recipients[0]!, { asOf: new Date() })).PHASE2_POINTS?.receivedCumulative).toBe("9");
    const future = await client.getBalances({ asOf: new Date(Date.now() + 3_600_000) }).catch((error: unknown) => error);
    expect(PointsApiError.is(future, "VALIDATION_FAILED") && future.details?.map((detail) => detail.path)).toEqual(["asOf"]);
  });
});

describe("points-ledger leaderboard, rank, balances --as-of", () => {
  const env = () => ({ OPERATOR_PRIVATE_KEY: operatorKey, POINTS_LEDGER_URL: server.url });

  it("leaderboard prints a table of one page, or every page with --all; --json prints one entry per line", async () => {
    const whole = await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 1000 });
    const page = await runCli(["leaderboard", "--contract", contract, "--point-type", "PHASE2_POINTS", "--limit", "3"], env());
    expect(page.code, page.stderr).toBe(0);
    const lines = page.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^leaderboard of 0x[0-9a-fA-F]{40}, PHASE2_POINTS, all time: 7 participant\(s\), as of (\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2} UTC$/,
    );
    expect(lines[1]).toMatch(/^\s*rank\s+address\s+points$/);
    expect(lines.slice(2).map((line) => line.trim().split(/\s+/))).toEqual(
      whole.entries.slice(0, 3).map((entry) => [String(entry.rank), entry.address, entry.points]),
    );
    expect(page.stderr).toContain("--all");

    const all = await runCli(["leaderboard", "--contract", contract, "--point-type", "PHASE2_POINTS", "--limit", "2", "--all"], env());
    expect(all.code, all.stderr).toBe(0);
    const rows = all.stdout.trim().split("\n").slice(2);
    expect(rows.map((line) => line.trim().split(/\s+/))).toEqual(
      whole.entries.map((entry) => [String(entry.rank), entry.address, entry.points]),
    );
    expect(all.stderr).toBe("");

    const json = await runCli(["leaderboard", "--contract", contract, "--point-type", "PHASE2_POINTS", "--all", "--json"], env());
    expect(json.code, json.stderr).toBe(0);
    expect(
      json.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as LeaderboardEntry),
    ).toEqual(whole.entries);

    const windowed = await runCli(
      ["leaderboard", "--contract", contract, "--point-type", "PHASE2_POINTS", "--from", "2000-01-01", "--to", "2000-02-01"],
      env(),
    );
    expect(windowed.code, windowed.stderr).toBe(0);
    expect(windowed.stdout).toContain("2000-01-01 to 2000-02-01 (exclusive): 0 participant(s)");
  });

  it("rank prints one address's place; an unknown point type or a missing --point-type is refused", async () => {
    const top = (await client.leaderboardPage({ pointType: "PHASE2_POINTS", limit: 1 })).entries[0]!;
    const ranked = await runCli(["rank", top.address, "--contract", contract, "--point-type", "PHASE2_POINTS"], env());
    expect(ranked.code, ranked.stderr).toBe(0);
    expect(ranked.stdout.trim()).toMatch(
      new RegExp(`^${top.address}: rank 1 of 7, 9 PHASE2_POINTS, as of (\\d{4}-\\d{2}-\\d{2} )?\\d{2}:\\d{2}:\\d{2} UTC$`),
    );
    const stranger = randomAddress();
    const unranked = await runCli(["rank", stranger, "--contract", contract, "--point-type", "PHASE2_POINTS", "--from", today], env());
    expect(unranked.stdout.trim()).toMatch(new RegExp(`^${stranger}: not ranked, 0 PHASE2_POINTS, as of `));

    const missing = await runCli(["leaderboard", "--contract", contract], env());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--point-type is required");
    const unknown = await runCli(["rank", top.address, "--contract", contract, "--point-type", "NOPE"], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/VALIDATION_FAILED/);
    expect(unknown.stderr).toContain("pointType");
  });

  it("balances --as-of prints the balances as they stood; usage lists the new commands", async () => {
    const asOf = beforePayment.toISOString();
    const result = await runCli(["balances", "--contract", contract, "--as-of", asOf], env());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`as of ${asOf}`);
    expect(result.stdout).toContain("PHASE2_POINTS: available 100, pendingSent 0, earned 100, received 0, finalizedSent 0");
    const noZone = await runCli(["balances", "--contract", contract, "--as-of", asOf.replace("Z", "")], env());
    expect(noZone.code).toBe(1);
    expect(noZone.stderr).toContain("asOf");

    const usage = await runCli(["--help"], {});
    for (const text of ["leaderboard --contract", "rank <address>", "--as-of <iso>"]) expect(usage.stdout).toContain(text);
  });
});
