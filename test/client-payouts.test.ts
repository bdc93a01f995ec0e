import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PointsAdminClient,
  PointsApiError,
  PointsClient,
  PublicClient,
  type ListedTransfer,
  type TextDownload,
} from "../src/client/index.js";
import { createTestApp, listen, randomAddress, type TestApp } from "./helpers/http.js";

/**
 * The client's payout methods (snapshots, proofs, the tree dump, address balances, CSV exports)
 * against the real app on a socket: proofs checked with @openzeppelin/merkle-tree, CSVs against
 * the credits and batches made here.
 */

const TYPES = ["address", "uint256"];
const BALANCES_HEADER = "address,pointType,available,pendingSent,earnedCumulative,receivedCumulative,finalizedSentCumulative";
const TRANSFERS_HEADER = "batchId,toAddress,pointType,points,status,createdAt,finalizeAt,finalizedAt";

/** PHASE2_GOLD credited to each holder; one amount past 2^53 token units at any decimals, one at the smallest unit. */
const holdings: [string, string][] = [
  [randomAddress(), "1"],
  [randomAddress(), "2.5"],
  [randomAddress(), "0.000001"],
  [randomAddress(), "123456789.123456789012"],
  [randomAddress(), "7.000000000001"],
  [randomAddress(), "40"],
];

let testApp: TestApp;
let publicApp: TestApp;
let baseUrl: string;
let publicBaseUrl: string;
let admin: PointsAdminClient;
let client: PointsClient;
const contract = randomAddress();
const recipients = [randomAddress(), randomAddress()];

beforeAll(async () => {
  testApp = await createTestApp();
  baseUrl = await listen(testApp.app);
  publicApp = await createTestApp({ env: { PUBLIC_READS: "true" } });
  publicBaseUrl = await listen(publicApp.app);
  admin = new PointsAdminClient({ baseUrl, adminToken: testApp.adminToken });
  const operatorKey = generatePrivateKey();
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  await admin.credit(contract, "contract-points", "PHASE2_POINTS", "1000");
  for (const [index, [address, points]] of holdings.entries()) await admin.credit(address, `gold-${index}`, "PHASE2_GOLD", points);
  client = new PointsClient({ baseUrl, contractAddress: contract, operator: operatorKey });
  await client.submitBatch("payout-a", {
    pointType: "PHASE2_POINTS",
    transfers: [
      { toAddress: recipients[0]!, points: "10" },
      { toAddress: recipients[1]!, points: "2.25" },
    ],
  });
  await client.submitBatch("payout-b", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: recipients[0]!, points: "0.5" }] });
});
afterAll(async () => {
  await testApp?.close();
  await publicApp?.close();
});

/** points × 10^decimals by string arithmetic: an independent check of the service's amounts. */
function tokenAmount(points: string, decimals: number): string {
  const [whole, fraction = ""] = points.split(".");
  return BigInt(`${whole}${fraction.padEnd(decimals, "0")}`).toString();
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a rejection"),
    (error: unknown) => error,
  );
}

function expectApiError(error: unknown, code: string, status: number): void {
  expect(error).toBeInstanceOf(PointsApiError);
  expect((error as PointsApiError).code).toBe(code);
  expect((error as PointsApiError).status).toBe(status);
}

async function csvLines(download: TextDownload): Promise<string[]> {
  const chunks: string[] = [];
  for await (const chunk of download) chunks.push(chunk);
  expect(chunks.length).toBeGreaterThan(0);
  const text = chunks.join("");
  expect(text.endsWith("\n")).toBe(true);
  return text.slice(0, -1).split("\n");
}

describe("client snapshots and proofs", () => {
  it("takes a snapshot whose every proof, fetched through the client, verifies against its root", async () => {
    const taken = await admin.takeSnapshot("season-1", { pointType: "PHASE2_GOLD", decimals: 18 });
    expect(taken.created).toBe(true);
    const { snapshot } = taken;
    expect(snapshot).toMatchObject({ id: "season-1", pointType: "PHASE2_GOLD", measure: "available", decimals: 18, asOf: null });
    expect(snapshot.leafCount).toBe(holdings.length);
    expect(snapshot.total).toBe("123456839.623457789013");
    expect(await admin.getSnapshot("season-1")).toEqual(snapshot);

    // The root the library computes itself from the credits made here.
    const expectedTree = StandardMerkleTree.of(
      holdings.map(([address, points]) => [getAddress(address), tokenAmount(points, 18)]),
      TYPES,
    );
    expect(snapshot.root).toBe(expectedTree.root);

    for (const [address, points] of holdings) {
      const proof = await admin.getProof("season-1", address.toLowerCase());
      expect(proof.address).toBe(getAddress(address));
      expect(proof.points).toBe(points);
      expect(proof.amount).toBe(tokenAmount(points, 18));
      expect(proof.proof.every((hash) => /^0x[0-9a-f]{64}$/.test(hash))).toBe(true);
      expect(StandardMerkleTree.verify(snapshot.root, TYPES, [proof.address, proof.amount], proof.proof)).toBe(true);
      // The same proof for one unit more must fail: the check above can fail.
      expect(StandardMerkleTree.verify(snapshot.root, TYPES, [proof.address, (BigInt(proof.amount) + 1n).toString()], proof.proof)).toBe(
        false,
      );
    }
  });

  it("getSnapshotTree returns a dump that StandardMerkleTree.load accepts, with the snapshot's root and leaves", async () => {
    const snapshot = await admin.getSnapshot("season-1");
    const dump = await admin.getSnapshotTree("season-1");
    expect(dump.format).toBe("standard-v1");
    const tree = StandardMerkleTree.load(dump);
    expect(tree.root).toBe(snapshot.root);
    const leaves = new Map([...tree.entries()].map(([, [address, amount]]) => [address, amount]));
    expect(leaves).toEqual(new Map(holdings.map(([address, points]) => [getAddress(address), tokenAmount(points, 18)])));
  });

  it("downloadSnapshotTree streams the same dump; an absent snapshot is 404 before any chunk", async () => {
    const download = await admin.downloadSnapshotTree("season-1");
    let text = "";
    for await (const chunk of download) text += chunk;
    expect(StandardMerkleTree.load(JSON.parse(text)).root).toBe((await admin.getSnapshot("season-1")).root);
    expect(JSON.parse(text)).toEqual(await admin.getSnapshotTree("season-1"));
    expectApiError(await rejectionOf(admin.downloadSnapshotTree("no-such-season")), "NOT_FOUND", 404);
  });

  it("reusing a snapshotId with other values is 409 SNAPSHOT_ID_EXISTS; with the same values it returns the stored snapshot", async () => {
    const stored = await admin.getSnapshot("season-1");
    const conflict = await rejectionOf(admin.takeSnapshot("season-1", { pointType: "PHASE2_GOLD", decimals: 19 }));
    expectApiError(conflict, "SNAPSHOT_ID_EXISTS", 409);
    expect((conflict as PointsApiError<"SNAPSHOT_ID_EXISTS">).details).toEqual({ snapshotId: "season-1", matchesRequest: false });

    // What a retry after a lost answer meets: the snapshot exists as asked.
    const again = await admin.takeSnapshot("season-1", { pointType: "PHASE2_GOLD", measure: "available" });
    expect(again).toEqual({ snapshot: stored, created: false });
  });

  it("sends asOf (a Date or an ISO string): too recent is refused naming asOf, and as of before any credit nobody holds anything", async () => {
    const recent = await rejectionOf(admin.takeSnapshot("recent", { pointType: "PHASE2_GOLD", asOf: new Date(Date.now() - 10_000) }));
    expectApiError(recent, "VALIDATION_FAILED", 400);
    expect((recent as PointsApiError).details).toEqual([expect.objectContaining({ path: "asOf" })]);
    // Before any credit nobody held anything: the same refusal as a point type nobody holds.
    const before = await rejectionOf(admin.takeSnapshot("before", { pointType: "PHASE2_GOLD", asOf: "2020-01-01T00:00:00+01:00" }));
    expectApiError(before, "VALIDATION_FAILED", 400);
    expect((before as PointsApiError).details).toEqual([expect.objectContaining({ path: "pointType" })]);
  });

  it("a proof of an address that is not in the snapshot, and an absent snapshot, are 404 NOT_FOUND", async () => {
    expectApiError(await rejectionOf(admin.getProof("season-1", randomAddress())), "NOT_FOUND", 404);
    expectApiError(await rejectionOf(admin.getProof("no-such-season", holdings[0]![0])), "NOT_FOUND", 404);
    expectApiError(await rejectionOf(admin.getSnapshot("no-such-season")), "NOT_FOUND", 404);
    expectApiError(await rejectionOf(admin.getSnapshotTree("no-such-season")), "NOT_FOUND", 404);
  });

  it("a point type nobody holds is refused with VALIDATION_FAILED, and nothing is stored", async () => {
    const refused = await rejectionOf(admin.takeSnapshot("empty", { pointType: "PHASE2_GOLD", measure: "receivedCumulative" }));
    expectApiError(refused, "VALIDATION_FAILED", 400);
    expectApiError(await rejectionOf(admin.getSnapshot("empty")), "NOT_FOUND", 404);
  });

  it("getAddressBalances reads any address's balances with the admin token", async () => {
    const [address, points] = holdings[1]!;
    const balances = await admin.getAddressBalances(address);
    expect(balances.PHASE2_GOLD).toMatchObject({ available: points, earnedCumulative: points, pendingSent: "0" });
    expect(balances.PHASE2_POINTS).toMatchObject({ available: "0", earnedCumulative: "0" });
    const contractBalances = await admin.getAddressBalances(contract);
    expect(contractBalances.PHASE2_POINTS).toMatchObject({ available: "987.25", pendingSent: "12.75", earnedCumulative: "1000" });
  });
});

describe("public reads", () => {
  it("without PUBLIC_READS, a PublicClient without a token is refused with 403 FORBIDDEN", async () => {
    const anonymous = new PublicClient({ baseUrl });
    expectApiError(await rejectionOf(anonymous.getProof("season-1", holdings[0]![0])), "FORBIDDEN", 403);
    expectApiError(await rejectionOf(anonymous.getSnapshot("season-1")), "FORBIDDEN", 403);
    expectApiError(await rejectionOf(anonymous.getSnapshotTree("season-1")), "FORBIDDEN", 403);
    expectApiError(await rejectionOf(anonymous.getAddressBalances(holdings[0]![0])), "FORBIDDEN", 403);
  });

  it("with PUBLIC_READS=true, a PublicClient without a token reads the snapshot, a verifiable proof, the tree and balances", async () => {
    const publicAdmin = new PointsAdminClient({ baseUrl: publicBaseUrl, adminToken: publicApp.adminToken });
    const [holder, points] = holdings[3]!;
    await publicAdmin.credit(holder, "gold", "PHASE2_GOLD", points);
    await publicAdmin.credit(holdings[0]![0], "gold", "PHASE2_GOLD", holdings[0]![1]);
    const { snapshot } = await publicAdmin.takeSnapshot("claim-1", { pointType: "PHASE2_GOLD", decimals: 12 });

    const anonymous = new PublicClient({ baseUrl: publicBaseUrl });
    expect(await anonymous.getSnapshot("claim-1")).toEqual(snapshot);
    const proof = await anonymous.getProof("claim-1", holder);
    expect(proof).toMatchObject({ address: getAddress(holder), points, amount: tokenAmount(points, 12) });
    expect(StandardMerkleTree.verify(snapshot.root, TYPES, [proof.address, proof.amount], proof.proof)).toBe(true);
    expect(StandardMerkleTree.load(await anonymous.getSnapshotTree("claim-1")).root).toBe(snapshot.root);
    expect((await anonymous.getAddressBalances(holder)).PHASE2_GOLD?.available).toBe(points);
    expectApiError(await rejectionOf(anonymous.getProof("claim-1", randomAddress())), "NOT_FOUND", 404);
  });
});

describe("client CSV exports", () => {
  it("exportBalancesCsv streams the header row and one row per account of the point type", async () => {
    const download = await admin.exportBalancesCsv({ pointType: "PHASE2_GOLD" });
    expect(download.contentType).toMatch(/^text\/csv/);
    const [header, ...rows] = await csvLines(download);
    expect(header).toBe(BALANCES_HEADER);
    const expected = holdings.map(([address, points]) => `${getAddress(address)},PHASE2_GOLD,${points},0,${points},0,0`);
    expect(rows.sort()).toEqual(expected.sort());

    const all = await (await admin.exportBalancesCsv()).text();
    expect(all).toContain(`${getAddress(contract)},PHASE2_POINTS,987.25,12.75,1000,0,0\n`);
    expect(all.split("\n").filter((line) => line.includes(",PHASE2_GOLD,"))).toHaveLength(holdings.length);
  });

  it("exportTransfersCsv streams the header row and the contract's transfers, with listTransfers' filters", async () => {
    const { transfers } = await client.listTransfers();
    expect(transfers).toHaveLength(3);
    const [header, ...rows] = await csvLines(await client.exportTransfersCsv());
    expect(header).toBe(TRANSFERS_HEADER);
    expect(rows).toEqual(transfers.map(csvRowOf));
    // Newest batch first; within a batch the order is the service's, so compared as a set.
    expect(rows[0]!.split(",").slice(0, 5).join(",")).toBe(`payout-b,${getAddress(recipients[0]!)},PHASE2_POINTS,0.5,PENDING`);
    expect(
      rows
        .slice(1)
        .map((row) => row.split(",").slice(0, 5).join(","))
        .sort(),
    ).toEqual(
      [
        `payout-a,${getAddress(recipients[0]!)},PHASE2_POINTS,10,PENDING`,
        `payout-a,${getAddress(recipients[1]!)},PHASE2_POINTS,2.25,PENDING`,
      ].sort(),
    );

    const toSecond = await csvLines(await client.exportTransfersCsv({ toAddress: recipients[1]!.toLowerCase() }));
    expect(toSecond).toEqual([TRANSFERS_HEADER, rows.find((row) => row.includes(getAddress(recipients[1]!)))]);
    expect(await csvLines(await client.exportTransfersCsv({ pointType: "PHASE2_GOLD" }))).toEqual([TRANSFERS_HEADER]);
    expect(await csvLines(await client.exportTransfersCsv({ status: "PENDING", pointType: "PHASE2_POINTS" }))).toEqual([header, ...rows]);
  });

  it("export errors come from the catalogue when the call resolves, before any row", async () => {
    const wrongToken = new PointsAdminClient({ baseUrl, adminToken: "not-the-admin-token", retry: { maxAttempts: 1 } });
    expectApiError(await rejectionOf(wrongToken.exportBalancesCsv()), "FORBIDDEN", 403);
    expectApiError(await rejectionOf(admin.exportBalancesCsv({ pointType: "NOT_A_TYPE" })), "VALIDATION_FAILED", 400);
    expectApiError(await rejectionOf(client.exportTransfersCsv({ toAddress: "0x1234" })), "VALIDATION_FAILED", 400);
  });

  it("a download stopped after its first chunk, or cancelled unread, does not disturb the next one", async () => {
    const download = await client.exportTransfersCsv();
    for await (const chunk of download) {
      expect(chunk.startsWith(TRANSFERS_HEADER)).toBe(true);
      break;
    }
    await expect(download.text()).rejects.toThrow(/already read/);
    await (await admin.exportBalancesCsv()).cancel();
    expect((await csvLines(await client.exportTransfersCsv()))[0]).toBe(TRANSFERS_HEADER);
  });
});

function csvRowOf(transfer: ListedTransfer): string {
  const { batchId, toAddress, pointType, points, status, createdAt, finalizeAt, finalizedAt } = transfer;
  return [batchId, toAddress, pointType, points, status, createdAt, finalizeAt, finalizedAt ?? ""].join(",");
}
