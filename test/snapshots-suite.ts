/**
 * Snapshots, transfers and exports through the real app, one suite for both adapters
 * (snapshots-sqlite.test.ts, snapshots-postgres.test.ts). Roots, proofs and the tree dump are
 * compared with @openzeppelin/merkle-tree's StandardMerkleTree computed here from the same
 * values, and every proof is checked with its `verify`.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { ADMIN_ACTOR } from "../src/domain/actors.js";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { getAddress } from "viem";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { snapshotCreated } from "../src/domain/events.js";
import { formatPoints, parsePoints } from "../src/domain/points.js";
import { createMetrics } from "../src/metrics.js";
import { snapshotJson, type Snapshot } from "../src/domain/snapshot.js";
import { buildSnapshot, SNAPSHOT_BUILD_ABANDONED_AFTER_MS, storeSnapshot } from "../src/snapshots/snapshots.js";
import { SnapshotBuildAbandonedError, type LedgerStore, type NewSnapshot } from "../src/store/store.js";
import { purgeAbandonedSnapshotBuilds, PurgeJob } from "../src/worker/purge.js";
import { buildAppOverStore, type StoreApp } from "./helpers/app-over-store.js";
import { expectError } from "./helpers/http.js";

export interface SnapshotFixture {
  store: LedgerStore;
  databaseUrl: string;
  /** Inserts `count` accounts of the point type straight into the table (earned only), for background volume. */
  insertAccounts(pointType: string, count: number): Promise<void>;
  /** The rows a build has in each table, read on a connection of its own. */
  buildRows(buildId: string): Promise<BuildRows>;
  /** Runs SQL (several statements) on a connection of its own. */
  exec(sql: string): Promise<void>;
  /** The adapter's migrations, in order. */
  migrations: readonly { version: number; name: string; sql: string }[];
  close(): Promise<void>;
}

export interface BuildRows {
  leafChunks: number;
  nodeChunks: number;
  /** Its snapshot_builds row: 1 until it publishes or the purge is done with it. */
  builds: number;
}

const ENCODING = ["address", "uint256"];
const POINT_TYPES = "PHASE2_POINTS,PHASE2_GOLD,S1,S2,S3,S1000,EMPTY,RACE";
const SIZES = [1, 2, 3, 1000] as const;
const FINALIZATION_PACE_MS = 5;

function randomKey(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}

/** Random points with 12 fractional digits (never a whole number), up to 10^6. */
function randomPoints(): string {
  const whole = BigInt(`0x${randomBytes(3).toString("hex")}`) % 1_000_000n;
  const fraction = (BigInt(`0x${randomBytes(6).toString("hex")}`) % 999_999_999_999n) + 1n;
  return `${whole}.${fraction.toString().padStart(12, "0")}`;
}

interface Holding {
  address: AddressKey;
  points: string;
}

/** The library's tree of the holdings at `decimals`, values in address order (the service's order). */
function referenceTree(holdings: readonly Holding[], decimals: number) {
  const sorted = [...holdings].sort((a, b) => (a.address < b.address ? -1 : 1));
  const values = sorted.map((holding) => [
    getAddress(holding.address),
    (parsePoints(holding.points)! * 10n ** BigInt(decimals - 12)).toString(),
  ]);
  return StandardMerkleTree.of(values, ENCODING);
}

export function describeSnapshots(name: string, open: () => Promise<SnapshotFixture>, skip = false): void {
  describe.skipIf(skip)(`snapshots (${name})`, () => {
    let fixture: SnapshotFixture;
    let api: StoreApp;
    let publicApi: StoreApp;
    const holdingsBySize = new Map<number, Holding[]>();

    beforeAll(async () => {
      fixture = await open();
      api = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: { POINT_TYPES } });
      publicApi = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: { POINT_TYPES, PUBLIC_READS: "true" } });
      for (const size of SIZES) {
        const holdings = Array.from({ length: size }, () => ({ address: randomKey(), points: randomPoints() }));
        for (const holding of holdings) {
          const result = await fixture.store.credit({
            address: holding.address,
            creditId: randomUUID(),
            pointType: `S${size}`,
            amount: parsePoints(holding.points)!,
            createdAtMs: Date.now(),
          });
          expect(result.kind).toBe("credited");
        }
        holdingsBySize.set(size, holdings);
      }
    }, 120_000);

    afterAll(async () => {
      await api?.close();
      await publicApi?.close();
      await fixture?.close();
    });

    const admin = () => api.adminToken;

    for (const size of SIZES) {
      for (const decimals of [12, 18]) {
        it(`builds the root, the tree dump and every proof of ${size} leaves at decimals ${decimals} exactly as StandardMerkleTree does`, async () => {
          const holdings = holdingsBySize.get(size)!;
          const reference = referenceTree(holdings, decimals);
          const id = `s${size}-d${decimals}`;
          const taken = await api.send({
            method: "PUT",
            url: `/v1/admin/snapshots/${id}`,
            token: admin(),
            body: { pointType: `S${size}`, decimals },
          });
          expect(taken.status, taken.text).toBe(200);
          const total = holdings.reduce((sum, holding) => sum + parsePoints(holding.points)!, 0n);
          expect(taken.json).toMatchObject({
            success: true,
            snapshot: {
              id,
              pointType: `S${size}`,
              measure: "available",
              decimals,
              root: reference.root,
              leafCount: size,
              total: formatPoints(total),
            },
          });

          const tree = await api.send({ method: "GET", url: `/v1/snapshots/${id}/tree`, token: admin() });
          expect(tree.status).toBe(200);
          expect(tree.headers["content-type"]).toMatch(/^application\/json/);
          expect(tree.text).toBe(JSON.stringify(reference.dump()));
          expect(StandardMerkleTree.load(JSON.parse(tree.text) as never).root).toBe(reference.root);

          for (const [, value] of reference.entries()) {
            const [address, amount] = value as [string, string];
            // Any spelling of the address finds it.
            const proof = await api.send({ method: "GET", url: `/v1/snapshots/${id}/proofs/${address.toLowerCase()}`, token: admin() });
            expect(proof.status, proof.text).toBe(200);
            const body = proof.json as { address: string; amount: string; points: string; proof: string[] };
            expect(body.address).toBe(address);
            expect(body.amount).toBe(amount);
            expect(parsePoints(body.points)! * 10n ** BigInt(decimals - 12)).toBe(BigInt(amount));
            expect(body.proof).toEqual(reference.getProof([address, amount]));
            expect(StandardMerkleTree.verify(reference.root, ENCODING, [address, amount], body.proof)).toBe(true);
          }
        }, 120_000);
      }
    }

    it("answers 409 SNAPSHOT_ID_EXISTS to a reused snapshotId, with matchesRequest, and keeps the first", async () => {
      const first = await api.send({ method: "PUT", url: "/v1/admin/snapshots/reuse-1", token: admin(), body: { pointType: "S3" } });
      expect(first.status).toBe(200);
      const same = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/reuse-1",
        token: admin(),
        body: { pointType: "S3", measure: "available", decimals: 18 },
      });
      expect(expectError(same, 409, "SNAPSHOT_ID_EXISTS").details).toEqual({ snapshotId: "reuse-1", matchesRequest: true });
      const other = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/reuse-1",
        token: admin(),
        body: { pointType: "S3", decimals: 12 },
      });
      expect(expectError(other, 409, "SNAPSHOT_ID_EXISTS").details).toEqual({ snapshotId: "reuse-1", matchesRequest: false });
      const stored = await api.send({ method: "GET", url: "/v1/snapshots/reuse-1", token: admin() });
      expect(stored.json).toEqual(first.json);
    });

    it("appends snapshot.created to the admin stream only, with the snapshot", async () => {
      const taken = await api.send({ method: "PUT", url: "/v1/admin/snapshots/evented", token: admin(), body: { pointType: "S2" } });
      // On PostgreSQL an event is listed once every transaction older than its own has ended
      // (postgres/events.ts), and other test files write to the same server meanwhile.
      const event = await vi.waitFor(
        async () => {
          const page = await fixture.store.listEvents({ stream: null, after: null, types: ["snapshot.created"], limit: 1000 });
          const events = page.kind === "page" ? page.events.map((stored) => stored.event) : [];
          const found = events.find((candidate) => (candidate.data as { snapshot: { id: string } }).snapshot.id === "evented");
          expect(found).toBeDefined();
          return found;
        },
        { timeout: 10_000 },
      );
      expect(event).toMatchObject({
        type: "snapshot.created",
        stream: null,
        data: { snapshot: (taken.json as { snapshot: unknown }).snapshot },
      });
    });

    it("answers 404 for an unknown snapshot and for an address that is not in it, and 400 for a point type nobody holds", async () => {
      expectError(await api.send({ method: "GET", url: "/v1/snapshots/nope", token: admin() }), 404, "NOT_FOUND");
      expectError(await api.send({ method: "GET", url: "/v1/snapshots/nope/tree", token: admin() }), 404, "NOT_FOUND");
      expectError(await api.send({ method: "GET", url: `/v1/snapshots/nope/proofs/${randomKey()}`, token: admin() }), 404, "NOT_FOUND");
      await api.send({ method: "PUT", url: "/v1/admin/snapshots/for-404", token: admin(), body: { pointType: "S1000" } });
      expectError(await api.send({ method: "GET", url: `/v1/snapshots/for-404/proofs/${randomKey()}`, token: admin() }), 404, "NOT_FOUND");
      // A holder of another point type is not in it either.
      const other = holdingsBySize.get(3)![0]!.address;
      expectError(await api.send({ method: "GET", url: `/v1/snapshots/for-404/proofs/${other}`, token: admin() }), 404, "NOT_FOUND");
      const empty = await api.send({ method: "PUT", url: "/v1/admin/snapshots/empty", token: admin(), body: { pointType: "EMPTY" } });
      expect(expectError(empty, 400, "VALIDATION_FAILED").details).toEqual([expect.objectContaining({ path: "pointType" })]);
      const decimals = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/bad",
        token: admin(),
        body: { pointType: "S1", decimals: 11 },
      });
      expectError(decimals, 400, "VALIDATION_FAILED");
    });

    it("leaves zero amounts out and measures receivedCumulative when asked", async () => {
      const store = fixture.store;
      const sender = randomKey();
      const recipient = randomKey();
      await store.credit({ address: sender, creditId: "z", pointType: "PHASE2_GOLD", amount: parsePoints("5")!, createdAtMs: Date.now() });
      const submitted = await store.submitBatch({
        contract: sender,
        batchId: "all-of-it",
        pointType: "PHASE2_GOLD",
        transfers: [{ toAddress: recipient, amount: parsePoints("5")! }],
        total: parsePoints("5")!,
        secondsToFinalize: 0,
        createdAtMs: Date.now() - 10_000,
      });
      expect(submitted.kind).toBe("accepted");
      // Pending: the sender's available is 0 and the recipient holds nothing yet.
      expectError(
        await api.send({ method: "PUT", url: "/v1/admin/snapshots/zero", token: admin(), body: { pointType: "PHASE2_GOLD" } }),
        400,
        "VALIDATION_FAILED",
      );
      expect(await store.finalizeDue(Date.now(), 10)).toHaveLength(1);
      const taken = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/zero",
        token: admin(),
        body: { pointType: "PHASE2_GOLD", measure: "receivedCumulative", decimals: 12 },
      });
      const root = StandardMerkleTree.of([[getAddress(recipient), "5000000000000"]], ENCODING).root;
      expect(taken.json).toMatchObject({ snapshot: { leafCount: 1, total: "5", root, measure: "receivedCumulative" } });
    });

    it("takes a snapshot as of a past time, echoes its asOf, and refuses an asOf less than 60 s ago, in the future or without a zone", async () => {
      const early = randomKey();
      const hourAgoMs = Date.now() - 3_600_000;
      await fixture.store.credit({
        address: early,
        creditId: "early",
        pointType: "PHASE2_POINTS",
        amount: 7n,
        createdAtMs: hourAgoMs - 60_000,
      });
      await fixture.store.credit({
        address: randomKey(),
        creditId: "late",
        pointType: "PHASE2_POINTS",
        amount: 9n,
        createdAtMs: hourAgoMs + 60_000,
      });
      // The same moment written with an offset: answered in UTC.
      const offset = new Date(hourAgoMs + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
      const body = { pointType: "PHASE2_POINTS", decimals: 12, asOf: offset };
      const taken = await api.send({ method: "PUT", url: "/v1/admin/snapshots/as-of", token: admin(), body });
      expect(taken.status, taken.text).toBe(200);
      const root = StandardMerkleTree.of([[getAddress(early), "7"]], ENCODING).root;
      const asOf = new Date(hourAgoMs).toISOString();
      expect(taken.json).toMatchObject({ snapshot: { asOf, leafCount: 1, total: "0.000000000007", root } });
      expect((await api.send({ method: "GET", url: "/v1/snapshots/as-of", token: admin() })).json).toEqual(taken.json);
      const again = await api.send({ method: "PUT", url: "/v1/admin/snapshots/as-of", token: admin(), body: { ...body, asOf: undefined } });
      expect(expectError(again, 409, "SNAPSHOT_ID_EXISTS").details).toMatchObject({ matchesRequest: false });
      const live = await api.send({ method: "PUT", url: "/v1/admin/snapshots/live", token: admin(), body: { pointType: "S1" } });
      expect(live.json).toMatchObject({ snapshot: { asOf: null } });
      for (const refused of [
        new Date(Date.now() - 30_000).toISOString(),
        new Date(Date.now() + 3_600_000).toISOString(),
        "2026-01-01T00:00:00",
      ]) {
        const response = await api.send({
          method: "PUT",
          url: "/v1/admin/snapshots/refused",
          token: admin(),
          body: { ...body, asOf: refused },
        });
        expect(expectError(response, 400, "VALIDATION_FAILED").details).toEqual([expect.objectContaining({ path: "asOf" })]);
      }
    });

    it("serves snapshot reads and address balances only with the admin token unless PUBLIC_READS=true", async () => {
      await api.send({ method: "PUT", url: "/v1/admin/snapshots/public", token: admin(), body: { pointType: "S2" } });
      const holder = holdingsBySize.get(2)![0]!;
      const urls = [
        "/v1/snapshots/public",
        `/v1/snapshots/public/proofs/${holder.address}`,
        "/v1/snapshots/public/tree",
        `/v1/addresses/${holder.address}/point-balances`,
      ];
      for (const url of urls) {
        expectError(await api.send({ method: "GET", url }), 403, "FORBIDDEN");
        expectError(await api.send({ method: "GET", url, token: "wrong" }), 403, "FORBIDDEN");
        expect((await api.send({ method: "GET", url, token: admin() })).status).toBe(200);
        expect((await publicApi.send({ method: "GET", url })).status).toBe(200);
      }
      // Taking one stays admin-only with PUBLIC_READS.
      expectError(await publicApi.send({ method: "PUT", url: "/v1/admin/snapshots/x", body: { pointType: "S2" } }), 403, "FORBIDDEN");
      const balances = await publicApi.send({
        method: "GET",
        url: `/v1/addresses/${holder.address.toUpperCase().replace("0X", "0x")}/point-balances`,
      });
      expect(balances.json).toMatchObject({
        success: true,
        address: getAddress(holder.address),
        balancesByPointType: {
          // The service prints points without trailing fractional zeros.
          S2: { available: canonical(holder.points), earnedCumulative: canonical(holder.points), pendingSent: "0" },
          PHASE2_POINTS: { available: "0" },
        },
      });
    });

    it("takes a snapshot equal to one consistent state while batches finalize concurrently", async () => {
      // Background holders, so the read spans several pages and finalizations land between them.
      await fixture.insertAccounts("RACE", 45_000);
      const store = fixture.store;
      const sender = randomKey();
      const batchCount = 12;
      const perBatch = 40;
      await store.credit({
        address: sender,
        creditId: "race",
        pointType: "RACE",
        amount: parsePoints("1000000")!,
        createdAtMs: Date.now(),
      });
      const batches = new Map<string, Holding[]>();
      for (let b = 0; b < batchCount; b++) {
        const transfers = Array.from({ length: perBatch }, () => ({ toAddress: randomKey(), amount: parsePoints("1.5")! }));
        const batchId = `race-${b}`;
        const result = await store.submitBatch({
          contract: sender,
          batchId,
          pointType: "RACE",
          transfers,
          total: parsePoints(String(1.5 * perBatch))!,
          secondsToFinalize: 0,
          createdAtMs: Date.now() - 60_000 + b,
        });
        expect(result.kind).toBe("accepted");
        batches.set(
          batchId,
          transfers.map((transfer) => ({ address: transfer.toAddress, points: "1.5" })),
        );
      }
      const before = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/race-before",
        token: admin(),
        body: { pointType: "RACE", decimals: 12 },
      });
      const base = (before.json as { snapshot: { leafCount: number; total: string } }).snapshot;

      const order: string[] = [];
      const finalizing = (async () => {
        for (;;) {
          const done = await store.finalizeDue(Date.now(), 1);
          if (done.length === 0) return;
          order.push(...done.map((batch) => batch.batchId));
          // Paced, so finalizations land between the pages of the snapshot's read (on SQLite the
          // read and the finalizations share one event loop; unpaced, all finish before it starts).
          await new Promise((resolve) => setTimeout(resolve, FINALIZATION_PACE_MS));
        }
      })();
      const taken = await api.send({
        method: "PUT",
        url: "/v1/admin/snapshots/race",
        token: admin(),
        body: { pointType: "RACE", decimals: 12 },
      });
      const finalizedWhenTaken = order.length;
      await finalizing;
      expect(taken.status, taken.text).toBe(200);
      expect(order).toHaveLength(batchCount);

      const snapshot = (taken.json as { snapshot: { leafCount: number; total: string } }).snapshot;
      const finalized = (snapshot.leafCount - base.leafCount) / perBatch;
      expect(Number.isInteger(finalized)).toBe(true);
      // Finalizations committed while the snapshot was being taken, and it left them out whole.
      expect(finalizedWhenTaken).toBeGreaterThan(finalized);
      expect(parsePoints(snapshot.total)! - parsePoints(base.total)!).toBe(BigInt(finalized) * parsePoints(String(1.5 * perBatch))!);
      // The leaves are exactly the state after the first `finalized` finalizations: no batch half in.
      const tree = await api.send({ method: "GET", url: "/v1/snapshots/race/tree", token: admin() });
      const inTree = new Set(
        (JSON.parse(tree.text) as { values: { value: [string, string] }[] }).values.map((entry) => entry.value[0].toLowerCase()),
      );
      order.forEach((batchId, position) => {
        const present = batches.get(batchId)!.map((holding) => inTree.has(holding.address));
        expect(present.every((isIn) => isIn === position < finalized)).toBe(true);
      });
    }, 120_000);
  });
}

/** GET …/transfers (pages, filters, cursor) and …/transfers.csv, and /v1/admin/balances.csv, on both adapters. */
export function describeTransfers(name: string, open: () => Promise<SnapshotFixture>, skip = false): void {
  describe.skipIf(skip)(`transfers and exports (${name})`, () => {
    let fixture: SnapshotFixture;
    let api: StoreApp;
    const contract = randomKey();
    const recipients = Array.from({ length: 7 }, () => randomKey());
    let token = "";

    beforeAll(async () => {
      fixture = await open();
      api = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: { POINT_TYPES } });
      const store = fixture.store;
      await store.credit({
        address: contract,
        creditId: "t",
        pointType: "PHASE2_POINTS",
        amount: parsePoints("1000")!,
        createdAtMs: Date.now(),
      });
      await store.credit({
        address: contract,
        creditId: "g",
        pointType: "PHASE2_GOLD",
        amount: parsePoints("1000")!,
        createdAtMs: Date.now(),
      });
      // 9 batches of 1-7 transfers, two point types; the first 4 become due and are finalized.
      for (let b = 0; b < 9; b++) {
        const transfers = recipients.slice(0, 1 + (b % 7)).map((toAddress, i) => ({ toAddress, amount: parsePoints(`${b}.${i + 1}`)! }));
        const result = await store.submitBatch({
          contract,
          batchId: `t-${b}`,
          pointType: b % 3 === 0 ? "PHASE2_GOLD" : "PHASE2_POINTS",
          transfers,
          total: transfers.reduce((sum, transfer) => sum + transfer.amount, 0n),
          secondsToFinalize: b < 4 ? 0 : 3600,
          createdAtMs: Date.now() - 100_000 + b * 1000,
        });
        expect(result.kind).toBe("accepted");
      }
      await store.finalizeDue(Date.now(), 100);
      token = await operatorToken(api, store, contract);
    });

    afterAll(async () => {
      await api?.close();
      await fixture?.close();
    });

    interface TransferJson {
      batchId: string;
      toAddress: string;
      pointType: string;
      points: string;
      status: string;
      createdAt: string;
      finalizeAt: string;
      finalizedAt: string | null;
    }

    async function allPages(query: string, limit: number): Promise<TransferJson[]> {
      const seen: TransferJson[] = [];
      let cursor: string | null = null;
      do {
        const url = `/v1/contracts/${contract}/transfers?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`;
        const page = await api.send({ method: "GET", url, token });
        expect(page.status, page.text).toBe(200);
        const body = page.json as { transfers: TransferJson[]; cursor: string | null };
        seen.push(...body.transfers);
        cursor = body.cursor;
      } while (cursor !== null);
      return seen;
    }

    it("pages through every transfer once, newest first, with each filter", async () => {
      const all = await allPages("", 4);
      expect(all).toHaveLength([1, 2, 3, 4, 5, 6, 7, 1, 2].reduce((a, b) => a + b, 0));
      expect(new Set(all.map((t) => `${t.batchId}/${t.toAddress}`)).size).toBe(all.length);
      expect(all[0]).toMatchObject({
        batchId: "t-8",
        toAddress: getAddress(recipients[1]!),
        points: "8.2",
        status: "PENDING",
        finalizedAt: null,
      });
      expect(all.at(-1)).toMatchObject({
        batchId: "t-0",
        toAddress: getAddress(recipients[0]!),
        points: "0.1",
        status: "FINALIZED",
        pointType: "PHASE2_GOLD",
      });
      expect(all.at(-1)!.finalizedAt).not.toBeNull();
      const createdAt = all.map((t) => Date.parse(t.createdAt));
      expect(createdAt).toEqual([...createdAt].sort((a, b) => b - a));
      expect(await allPages("", 1000)).toEqual(all);

      const toOne = await allPages(`&toAddress=${recipients[2]!.toUpperCase().replace("0X", "0x")}`, 2);
      expect(toOne).toEqual(all.filter((t) => t.toAddress === getAddress(recipients[2]!)));
      expect(toOne.length).toBeGreaterThan(0);
      expect(await allPages("&pointType=PHASE2_GOLD", 3)).toEqual(all.filter((t) => t.pointType === "PHASE2_GOLD"));
      expect(await allPages("&status=FINALIZED", 5)).toEqual(all.filter((t) => t.status === "FINALIZED"));

      const csv = await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers.csv?status=PENDING`, token });
      expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
      const lines = csv.text.trimEnd().split("\n");
      expect(lines[0]).toBe("batchId,toAddress,pointType,points,status,createdAt,finalizeAt,finalizedAt");
      expect(lines.slice(1)).toEqual(
        all
          .filter((t) => t.status === "PENDING")
          .map((t) => [t.batchId, t.toAddress, t.pointType, t.points, t.status, t.createdAt, t.finalizeAt, ""].join(",")),
      );
    });

    it("refuses a malformed cursor or filter with 400 and another contract's token with 403", async () => {
      expectError(
        await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers?cursor=bm9wZQ`, token }),
        400,
        "VALIDATION_FAILED",
      );
      expectError(
        await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers?toAddress=0x12`, token }),
        400,
        "VALIDATION_FAILED",
      );
      expectError(
        await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers?status=DONE`, token }),
        400,
        "VALIDATION_FAILED",
      );
      expectError(await api.send({ method: "GET", url: `/v1/contracts/${randomKey()}/transfers.csv`, token }), 403, "FORBIDDEN");
      expectError(await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers` }), 401, "UNAUTHORIZED");
    });

    it("exports every balance as CSV for the admin, filtered by point type", async () => {
      expectError(await api.send({ method: "GET", url: "/v1/admin/balances.csv" }), 403, "FORBIDDEN");
      const csv = await api.send({ method: "GET", url: "/v1/admin/balances.csv?pointType=PHASE2_GOLD", token: api.adminToken });
      const lines = csv.text.trimEnd().split("\n");
      expect(lines[0]).toBe("address,pointType,available,pendingSent,earnedCumulative,receivedCumulative,finalizedSentCumulative");
      const rows = lines.slice(1).map((line) => line.split(","));
      expect(rows.every((row) => row[1] === "PHASE2_GOLD")).toBe(true);
      const sender = rows.find((row) => row[0] === getAddress(contract))!;
      // Gold batches: t-0 (finalized, 0.1), t-3 (finalized, 3.1 + … + 3.4 = 13) and t-6 (pending, 6.1 + … + 6.7 = 44.8).
      expect(sender).toEqual([getAddress(contract), "PHASE2_GOLD", "942.1", "44.8", "1000", "0", "13.1"]);
      const addresses = rows.map((row) => row[0]!.toLowerCase());
      expect(addresses).toEqual([...addresses].sort());
    });
  });
}

/** A bearer token for `contract`: an operator registered through the store, signed in through the API. */
async function operatorToken(api: StoreApp, store: LedgerStore, contract: AddressKey): Promise<string> {
  const { privateKeyToAccount, generatePrivateKey } = await import("viem/accounts");
  const operator = privateKeyToAccount(generatePrivateKey());
  await store.setOperator(contract, operator.address.toLowerCase() as AddressKey, Date.now());
  const { signIn } = await import("./helpers/http.js");
  return signIn(api.send, contract, operator);
}

function canonical(points: string): string {
  return formatPoints(parsePoints(points)!);
}

/**
 * A snapshot build that never publishes (its process killed mid-build, a failure, a lost race)
 * leaves nothing behind: the purge job deletes its chunks in bounded steps, and leaves alone
 * a build still writing (here or in another process) and every published snapshot.
 */
export function describeSnapshotBuildCleanup(
  name: string,
  open: () => Promise<SnapshotFixture>,
  openUnmigrated: () => Promise<SnapshotFixture>,
  skip = false,
): void {
  describe.skipIf(skip)(`abandoned snapshot builds (${name})`, () => {
    let fixture: SnapshotFixture;
    let api: StoreApp;
    const holdings = Array.from({ length: 40 }, () => ({ address: randomKey(), points: randomPoints() }));
    const quietPurge = (nowMs: number) =>
      new PurgeJob(fixture.store, { now: () => nowMs }, { eventRetentionDays: 3650 }, null, pino({ enabled: false }));

    beforeAll(async () => {
      fixture = await open();
      api = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: { POINT_TYPES } });
      for (const holding of holdings) {
        const amount = parsePoints(holding.points)!;
        await fixture.store.credit({ address: holding.address, creditId: "c", pointType: "S3", amount, createdAtMs: Date.now() });
      }
    });

    afterAll(async () => {
      await api?.close();
      await fixture?.close();
    });

    /** A build of snapshot `id` over the S3 holdings, as takeSnapshot makes it (in memory, nothing stored). */
    async function realBuild(id: string, atMs: number): Promise<NewSnapshot> {
      const read = await fixture.store.readSnapshotHoldings("S3", "available");
      return buildSnapshot(
        { id, pointType: "S3", measure: "available", decimals: 18, asOfMs: null },
        atMs,
        read.addresses,
        read.units,
        () => atMs,
        ADMIN_ACTOR,
      );
    }

    async function expectProofServed(id: string): Promise<void> {
      const reference = referenceTree(holdings, 18);
      for (const [, value] of [...reference.entries()].slice(0, 3)) {
        const [address, amount] = value as [string, string];
        const proof = await api.send({ method: "GET", url: `/v1/snapshots/${id}/proofs/${address}`, token: api.adminToken });
        expect(proof.status, proof.text).toBe(200);
        expect(StandardMerkleTree.verify(reference.root, ENCODING, [address, amount], (proof.json as { proof: string[] }).proof)).toBe(
          true,
        );
      }
    }

    it("purges a build killed mid-write once silent past the bound, in bounded steps, sparing a build in progress and published snapshots", async () => {
      const taken = await api.send({ method: "PUT", url: "/v1/admin/snapshots/kept", token: api.adminToken, body: { pointType: "S3" } });
      expect(taken.status, taken.text).toBe(200);
      const keptTree = await api.send({ method: "GET", url: "/v1/snapshots/kept/tree", token: api.adminToken });
      const startMs = Date.now();

      // Killed after 3 of its 5 writes (32 + 8 leaf chunks, then 32 + 32 + 6 node chunks).
      const killed = syntheticBuild("killed", 40, 70, startMs);
      await expect(storeSnapshot(killedAfterWrites(fixture.store, 3), killed, () => startMs)).rejects.toThrow("the process died");
      expect(await fixture.buildRows(killed.buildId)).toEqual({ leafChunks: 40, nodeChunks: 32, builds: 1 });

      // Another build whose last write was a minute before the purge runs: in progress, not abandoned.
      const purgeAtMs = startMs + SNAPSHOT_BUILD_ABANDONED_AFTER_MS + 1;
      const inProgress = await realBuild("in-progress", purgeAtMs - 60_000);
      await expect(storeSnapshot(killedAfterWrites(fixture.store, Infinity), inProgress, () => purgeAtMs - 60_000)).rejects.toThrow();
      const inProgressRows = await fixture.buildRows(inProgress.buildId);
      expect(inProgressRows).toEqual({ leafChunks: 1, nodeChunks: 1, builds: 1 });

      // Before the bound nothing is purged; past it, one step deletes at most its limit.
      expect(await purgeAbandonedSnapshotBuilds(fixture.store, purgeAtMs - 1)).toBe(0);
      expect(await fixture.store.purgeSnapshotBuilds(purgeAtMs - SNAPSHOT_BUILD_ABANDONED_AFTER_MS, 5)).toBe(5);
      expect(await fixture.buildRows(killed.buildId)).toEqual({ leafChunks: 35, nodeChunks: 32, builds: 1 });
      const metrics = createMetrics();
      const counted = new PurgeJob(
        fixture.store,
        { now: () => purgeAtMs },
        { eventRetentionDays: 3650 },
        metrics,
        pino({ enabled: false }),
      );
      expect(await counted.runOnce()).toEqual({ events: 0, snapshotChunks: 67 });
      expect((await metrics.purged.get()).values.find((v) => v.labels.kind === "snapshot_chunks")?.value).toBe(67);
      expect(await fixture.buildRows(killed.buildId)).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });

      expect(await fixture.buildRows(inProgress.buildId)).toEqual(inProgressRows);
      const keptTreeAfter = await api.send({ method: "GET", url: "/v1/snapshots/kept/tree", token: api.adminToken });
      expect(keptTreeAfter.text).toBe(keptTree.text);
      await expectProofServed("kept");

      // The build in progress goes on and publishes; purged again, its snapshot stays whole.
      expect(await fixture.store.publishSnapshot(inProgress)).toEqual({ kind: "created" });
      expect(await quietPurge(purgeAtMs + SNAPSHOT_BUILD_ABANDONED_AFTER_MS).runOnce()).toEqual({ events: 0, snapshotChunks: 0 });
      expect(await fixture.buildRows(inProgress.buildId)).toEqual({ leafChunks: 1, nodeChunks: 1, builds: 0 });
      await expectProofServed("in-progress");
    });

    it("refuses further writes and the publication of a build the purge gave up on, while and after its chunks are deleted", async () => {
      const startMs = Date.now();
      const stalled = syntheticBuild("stalled", 2, 2, startMs);
      await fixture.store.beginSnapshotBuild(stalled.buildId, "stalled", startMs);
      await fixture.store.writeSnapshotLeafChunks(stalled.buildId, 0, stalled.leafChunks, startMs);
      // The purge gives up on it and deletes one chunk; then the build wakes up.
      expect(await fixture.store.purgeSnapshotBuilds(startMs + 1, 1)).toBe(1);
      const resumedMs = startMs + SNAPSHOT_BUILD_ABANDONED_AFTER_MS + 2;
      const write = () => fixture.store.writeSnapshotNodeChunks(stalled.buildId, 0, stalled.nodeChunks, resumedMs);
      await expect(write()).rejects.toThrow(SnapshotBuildAbandonedError);
      await expect(fixture.store.publishSnapshot(stalled)).rejects.toThrow(SnapshotBuildAbandonedError);
      expect(await fixture.buildRows(stalled.buildId)).toEqual({ leafChunks: 1, nodeChunks: 0, builds: 1 });
      expect(await purgeAbandonedSnapshotBuilds(fixture.store, startMs)).toBe(1);
      expect(await fixture.buildRows(stalled.buildId)).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });
      await expect(write()).rejects.toThrow(SnapshotBuildAbandonedError);
      await expect(fixture.store.publishSnapshot(stalled)).rejects.toThrow(SnapshotBuildAbandonedError);
      expect(await fixture.store.getSnapshot("stalled")).toBeNull();
      expect(await fixture.buildRows(stalled.buildId)).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });
    });

    it("purges a build that failed or lost the race for its id at the next run, without waiting for the bound", async () => {
      const first = await realBuild("raced", Date.now());
      const second = await realBuild("raced", Date.now());
      expect(await storeSnapshot(fixture.store, first, Date.now)).toEqual({ kind: "created" });
      expect((await storeSnapshot(fixture.store, second, Date.now)).kind).toBe("exists");
      expect(await fixture.buildRows(second.buildId)).toEqual({ leafChunks: 1, nodeChunks: 1, builds: 1 });

      const failed = syntheticBuild("failed", 3, 3, Date.now());
      const failing = { ...fixture.store, publishSnapshot: () => Promise.reject(new Error("publish failed")) };
      await expect(storeSnapshot(failing, failed, Date.now)).rejects.toThrow("publish failed");
      expect(await fixture.buildRows(failed.buildId)).toEqual({ leafChunks: 3, nodeChunks: 3, builds: 1 });

      expect(await purgeAbandonedSnapshotBuilds(fixture.store, Date.now())).toBe(8);
      expect(await fixture.buildRows(second.buildId)).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });
      expect(await fixture.buildRows(failed.buildId)).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });
      expect(await fixture.buildRows(first.buildId)).toEqual({ leafChunks: 1, nodeChunks: 1, builds: 0 });
      await expectProofServed("raced");
    });

    it("registers the unpublished chunks an older version left behind when migrating, and purges them past the bound", async () => {
      const older = await openUnmigrated();
      try {
        const beforeBuilds = older.migrations.filter((migration) => migration.name !== "snapshot_builds");
        expect(beforeBuilds).toHaveLength(older.migrations.length - 1);
        await older.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)");
        for (const migration of beforeBuilds) {
          await older.exec(migration.sql);
          await older.exec(`INSERT INTO schema_migrations VALUES (${migration.version}, '${migration.name}', 0)`);
        }
        const address = randomKey();
        await older.exec(`
          INSERT INTO snapshots (id, build_id, point_type, measure, decimals, taken_at_ms, root, leaf_count, total_units)
            VALUES ('old', 'published', 'S1', 'available', 18, 0, '0x00', 1, '1');
          INSERT INTO snapshot_leaf_chunks (build_id, chunk_no, first_address, data)
            VALUES ('published', 0, '${address}', '${getAddress(address)},1000000,0'), ('crashed', 0, '${address}', 'x'), ('crashed', 1, '${address}', 'x');
        `);
        const migratedMs = Date.now();
        await older.store.migrate();
        expect(await older.buildRows("crashed")).toEqual({ leafChunks: 2, nodeChunks: 0, builds: 1 });
        expect(await older.buildRows("published")).toEqual({ leafChunks: 1, nodeChunks: 0, builds: 0 });
        // Registered as of the migration: an older instance may still be writing them for a while.
        expect(await purgeAbandonedSnapshotBuilds(older.store, migratedMs)).toBe(0);
        expect(await purgeAbandonedSnapshotBuilds(older.store, Date.now() + SNAPSHOT_BUILD_ABANDONED_AFTER_MS + 1)).toBe(2);
        expect(await older.buildRows("crashed")).toEqual({ leafChunks: 0, nodeChunks: 0, builds: 0 });
        expect(await older.store.findSnapshotLeafChunk("old", address)).toBe(`${getAddress(address)},1000000,0`);
      } finally {
        await older.close();
      }
    });
  });
}

/** A build with `leafChunks` and `nodeChunks` chunks of filler (never published, so never read). */
function syntheticBuild(id: string, leafChunks: number, nodeChunks: number, atMs: number): NewSnapshot {
  const snapshot: Snapshot = {
    id,
    pointType: "S1",
    measure: "available",
    decimals: 18,
    asOfMs: null,
    takenAtMs: atMs,
    root: `0x${"00".repeat(32)}`,
    leafCount: leafChunks,
    totalUnits: 1n,
  };
  return {
    snapshot,
    buildId: randomUUID(),
    leafChunks: Array.from({ length: leafChunks }, (_, i) => ({
      firstAddress: `0x${i.toString(16).padStart(40, "0")}` as AddressKey,
      text: "x".repeat(1000),
    })),
    nodeChunks: Array.from({ length: nodeChunks }, () => randomBytes(1024)),
    event: snapshotCreated(snapshotJson(snapshot), atMs, ADMIN_ACTOR),
  };
}

/**
 * The store as a process killed after `writes` chunk writes sees it: nothing after them reaches
 * the database, not even the builder's own cleanup (abandonSnapshotBuild).
 */
function killedAfterWrites(store: LedgerStore, writes: number): LedgerStore {
  let left = writes;
  const killed = () => Promise.reject(new Error("the process died"));
  return {
    ...store,
    writeSnapshotLeafChunks: (...args) => (left-- > 0 ? store.writeSnapshotLeafChunks(...args) : killed()),
    writeSnapshotNodeChunks: (...args) => (left-- > 0 ? store.writeSnapshotNodeChunks(...args) : killed()),
    publishSnapshot: killed,
    abandonSnapshotBuild: killed,
  };
}
