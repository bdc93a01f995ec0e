/**
 * A filtered transfers listing examines at most `scanLimit` transfers a page
 * (MAX_TRANSFERS_SCANNED_PER_PAGE; docs/limits.md): pages may come back short, even empty, with a
 * cursor where the scan stopped, and following the cursors still visits every match once, newest
 * first. Store level with a small bound on SQLite and PostgreSQL, then through the HTTP routes
 * (JSON pages and transfers.csv) with the real bound.
 */
import { randomBytes } from "node:crypto";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { MAX_TRANSFERS_SCANNED_PER_PAGE } from "../src/domain/limits.js";
import type { LedgerStore, TransferPage, TransferPosition, TransferQuery, TransferRow } from "../src/store/store.js";
import { buildAppOverStore, temporarySqliteStore, type StoreApp } from "./helpers/app-over-store.js";
import { signIn } from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

interface Fixture {
  store: LedgerStore;
  databaseUrl: string;
  close(): Promise<void>;
}

const openSqlite = async (): Promise<Fixture> => {
  const { store, databaseUrl, remove } = temporarySqliteStore();
  await store.migrate();
  return { store, databaseUrl, close: remove };
};

const openPostgres = async (): Promise<Fixture> => {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  const store = schema.openStore();
  await store.migrate();
  return { store, databaseUrl: schema.connectionString, close: () => schema.drop() };
};

const SCAN_LIMIT = 7;
const POINT_TYPES = "PHASE2_POINTS,PHASE2_GOLD";
const UNIT = 10n ** 12n;

function randomKey(): AddressKey {
  return `0x${randomBytes(20).toString("hex")}` as AddressKey;
}

/** Every amount is unique (n units): it names the transfer. */
function amountKey(transfer: TransferRow): string {
  return transfer.amount.toString();
}

async function credit(store: LedgerStore, contract: AddressKey): Promise<void> {
  for (const pointType of ["PHASE2_POINTS", "PHASE2_GOLD"]) {
    await store.credit({ address: contract, creditId: pointType, pointType, amount: 10n ** 9n * UNIT, createdAtMs: Date.now() });
  }
}

/** Follows `next` from the start; every page and the `after` it was read with. */
async function pagesOf(store: LedgerStore, contract: AddressKey, query: Omit<TransferQuery, "after">) {
  const pages: { after: TransferPosition | undefined; page: TransferPage }[] = [];
  let after: TransferPosition | undefined;
  do {
    const page = await store.listTransfers(contract, { ...query, after });
    pages.push({ after, page });
    after = page.next ?? undefined;
    expect(pages.length).toBeLessThan(1000);
  } while (after !== undefined);
  return pages;
}

function positionKey(position: TransferPosition): string {
  return `${position.createdAtMs}.${position.seq}.${position.index}`;
}

function describeBoundedScan(name: string, open: () => Promise<Fixture>, skip = false): void {
  describe.skipIf(skip)(`a filtered transfers page examines at most scanLimit transfers (${name})`, () => {
    let fixture: Fixture;
    const contract = randomKey();
    const recipient = randomKey();
    /** The whole listing, newest first, and each transfer's position in it. */
    const all: TransferRow[] = [];
    const positions: TransferPosition[] = [];
    const rankOf = new Map<string, number>();
    let counter = 0n;

    beforeAll(async () => {
      fixture = await open();
      const store = fixture.store;
      await credit(store, contract);
      // 30 batches of 1-5 transfers. The recipient is in batches 2 and 4 only (twice in 4); batch 3 is
      // the one PHASE2_GOLD batch; batches 0-3 are due and get finalized.
      const startMs = Date.now() - 1_000_000;
      for (let b = 0; b < 30; b++) {
        const transfers = Array.from({ length: 1 + (b % 5) }, () => ({ toAddress: randomKey(), amount: ++counter * UNIT }));
        if (b === 2) transfers[0]!.toAddress = recipient;
        if (b === 4) transfers[1]!.toAddress = transfers[4]!.toAddress = recipient;
        const result = await store.submitBatch({
          contract,
          batchId: `bounded-${b}`,
          pointType: b === 3 ? "PHASE2_GOLD" : "PHASE2_POINTS",
          transfers,
          total: transfers.reduce((sum, transfer) => sum + transfer.amount, 0n),
          secondsToFinalize: b < 4 ? 0 : 3600,
          createdAtMs: startMs + b * 1000,
        });
        expect(result.kind).toBe("accepted");
      }
      await store.finalizeDue(Date.now(), 100);
      // Pages of one unfiltered transfer: each page's `next` is that transfer's position.
      for (const { page } of await pagesOf(store, contract, { limit: 1, scanLimit: SCAN_LIMIT })) {
        if (!page.next) continue;
        rankOf.set(positionKey(page.next), all.length);
        positions.push(page.next);
        all.push(...page.transfers);
      }
      expect(all).toHaveLength([...Array(30).keys()].reduce((sum, b) => sum + 1 + (b % 5), 0));
    });

    afterAll(async () => {
      await fixture?.close();
    });

    /** Checks the pages of a filtered walk against the whole listing; returns the page sizes. */
    function checkWalk(
      pages: { after: TransferPosition | undefined; page: TransferPage }[],
      limit: number,
      matches: (t: TransferRow) => boolean,
    ) {
      const expected = all.filter(matches).map(amountKey);
      expect(expected.length).toBeGreaterThan(0);
      expect(pages.flatMap(({ page }) => page.transfers).map(amountKey)).toEqual(expected);
      for (const [n, { after, page }] of pages.entries()) {
        const from = after === undefined ? -1 : rankOf.get(positionKey(after))!;
        if (page.next === null) {
          // The last page examined everything that was left, within the bound.
          expect(n).toBe(pages.length - 1);
          expect(all.length - 1 - from).toBeLessThanOrEqual(SCAN_LIMIT);
          continue;
        }
        const to = rankOf.get(positionKey(page.next));
        expect(to, "a cursor is the position of a transfer of the listing").toBeDefined();
        // Transfers examined by this page: those after `after` up to and including `next`.
        expect(to! - from).toBeGreaterThan(0);
        expect(to! - from).toBeLessThanOrEqual(SCAN_LIMIT);
        if (page.transfers.length < limit) expect(to! - from, "a short page stops exactly at the bound").toBe(SCAN_LIMIT);
        else expect(positionKey(page.next)).toBe(positionKey(positionOfLast(page)));
      }
      return pages.map(({ page }) => page.transfers.length);
    }

    /** The position of a full page's last transfer, from the whole listing. */
    function positionOfLast(page: TransferPage): TransferPosition {
      return positions[all.findIndex((t) => amountKey(t) === amountKey(page.transfers.at(-1)!))]!;
    }

    it("a recipient only in old batches: short and empty pages with a cursor, then its 3 transfers once each, newest first", async () => {
      const pages = await pagesOf(fixture.store, contract, { toAddress: recipient, limit: 100, scanLimit: SCAN_LIMIT });
      const sizes = checkWalk(pages, 100, (t) => t.toAddress === recipient);
      expect(sizes[0]).toBe(0);
      expect(pages[0]!.page.next).not.toBeNull();
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(3);
      expect(pages.length).toBe(Math.ceil(all.length / SCAN_LIMIT));
    });

    it("with limit 1 a page that fills stops at its match, and the walk still finds every match once", async () => {
      const pages = await pagesOf(fixture.store, contract, { toAddress: recipient, limit: 1, scanLimit: SCAN_LIMIT });
      checkWalk(pages, 1, (t) => t.toAddress === recipient);
      expect(pages.filter(({ page }) => page.transfers.length === 1)).toHaveLength(3);
    });

    it("a rare pointType or status is bounded the same way", async () => {
      const gold = await pagesOf(fixture.store, contract, { pointType: "PHASE2_GOLD", limit: 100, scanLimit: SCAN_LIMIT });
      expect(checkWalk(gold, 100, (t) => t.pointType === "PHASE2_GOLD")[0]).toBe(0);
      const finalized = await pagesOf(fixture.store, contract, { status: "FINALIZED", limit: 4, scanLimit: SCAN_LIMIT });
      expect(checkWalk(finalized, 4, (t) => t.status === "FINALIZED")[0]).toBe(0);
      const both = await pagesOf(fixture.store, contract, { status: "FINALIZED", toAddress: recipient, limit: 100, scanLimit: SCAN_LIMIT });
      checkWalk(both, 100, (t) => t.status === "FINALIZED" && t.toAddress === recipient);
    });

    it("a page without a filter is unchanged: limit rows, whatever scanLimit, next at the last", async () => {
      const first = await fixture.store.listTransfers(contract, { limit: 20, scanLimit: 1 });
      expect(first.transfers.map(amountKey)).toEqual(all.slice(0, 20).map(amountKey));
      expect(rankOf.get(positionKey(first.next!))).toBe(19);
      const rest = await fixture.store.listTransfers(contract, { limit: 1000, scanLimit: 1, after: first.next! });
      expect(rest.transfers.map(amountKey)).toEqual(all.slice(20).map(amountKey));
      expect(rest.next).toBeNull();
    });

    it("resumes after any transfer's position, the only form a cursor had before the bound", async () => {
      const after = positions[4]!;
      const page = await fixture.store.listTransfers(contract, { toAddress: recipient, limit: 100, scanLimit: 1000, after });
      expect(page.transfers.map(amountKey)).toEqual(
        all
          .slice(5)
          .filter((t) => t.toAddress === recipient)
          .map(amountKey),
      );
      expect(page.next).toBeNull();
    });
  });
}

describeBoundedScan("SQLite", openSqlite);
describeBoundedScan("PostgreSQL", openPostgres, !DATABASE_URL_TEST);

/** Through the routes, with the real bound: a recipient only in a batch older than the bound's reach. */
function describeRoutes(name: string, open: () => Promise<Fixture>, skip = false): void {
  describe.skipIf(skip)(`GET …/transfers and transfers.csv with a rare recipient (${name})`, () => {
    let fixture: Fixture;
    let api: StoreApp;
    let token = "";
    const contract = randomKey();
    const recipient = randomKey();
    const newerTransfers = MAX_TRANSFERS_SCANNED_PER_PAGE + 5;

    beforeAll(async () => {
      fixture = await open();
      api = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: { POINT_TYPES } });
      const store = fixture.store;
      await credit(store, contract);
      // The oldest batch pays the recipient twice; the newer ones, more than the bound, never do.
      const sizes = [3];
      for (let left = newerTransfers; left > 0; left -= 10_000) sizes.push(Math.min(10_000, left));
      const startMs = Date.now() - 100_000;
      for (const [b, size] of sizes.entries()) {
        const transfers = Array.from({ length: size }, (_, i) => ({
          toAddress: b === 0 && i !== 1 ? recipient : randomKey(),
          amount: BigInt(i + 1) * UNIT,
        }));
        const result = await store.submitBatch({
          contract,
          batchId: `route-${b}`,
          pointType: "PHASE2_POINTS",
          transfers,
          total: transfers.reduce((sum, transfer) => sum + transfer.amount, 0n),
          secondsToFinalize: 3600,
          createdAtMs: startMs + b * 1000,
        });
        expect(result.kind).toBe("accepted");
      }
      const { privateKeyToAccount, generatePrivateKey } = await import("viem/accounts");
      const operator = privateKeyToAccount(generatePrivateKey());
      await store.setOperator(contract, operator.address.toLowerCase() as AddressKey, Date.now());
      token = await signIn(api.send, contract, operator);
    }, 60_000);

    afterAll(async () => {
      await api?.close();
      await fixture?.close();
    });

    interface Page {
      transfers: { batchId: string; toAddress: string; points: string }[];
      cursor: string | null;
    }

    async function page(query: string): Promise<Page> {
      const response = await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers?${query}`, token });
      expect(response.status, response.text).toBe(200);
      return response.json as Page;
    }

    it("answers an empty page with a cursor first, then the recipient's transfers, then cursor null", async () => {
      const first = await page(`toAddress=${recipient}&limit=10`);
      expect(first.transfers).toEqual([]);
      expect(first.cursor).not.toBeNull();
      const second = await page(`toAddress=${recipient}&limit=10&cursor=${first.cursor}`);
      expect(second.transfers.map((t) => [t.batchId, t.toAddress, t.points])).toEqual([
        ["route-0", getAddress(recipient), "3"],
        ["route-0", getAddress(recipient), "1"],
      ]);
      expect(second.cursor).toBeNull();
    });

    it("takes a cursor of an unfiltered page (the form cursors always had) with the filter", async () => {
      const unfiltered = await page("limit=3");
      expect(unfiltered.transfers).toHaveLength(3);
      let cursor = unfiltered.cursor;
      const found: string[] = [];
      for (let n = 0; cursor !== null; n++) {
        expect(n).toBeLessThan(10);
        const next = await page(`toAddress=${recipient}&limit=1&cursor=${cursor}`);
        found.push(...next.transfers.map((t) => t.points));
        cursor = next.cursor;
      }
      expect(found).toEqual(["3", "1"]);
    });

    it("streams every matching row in transfers.csv through the short pages", async () => {
      const csv = await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers.csv?toAddress=${recipient}`, token });
      expect(csv.status, csv.text).toBe(200);
      const rows = csv.text
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((line) => line.split(",").slice(0, 4));
      expect(rows).toEqual([
        ["route-0", getAddress(recipient), "PHASE2_POINTS", "3"],
        ["route-0", getAddress(recipient), "PHASE2_POINTS", "1"],
      ]);
      const all = await api.send({ method: "GET", url: `/v1/contracts/${contract}/transfers.csv`, token });
      expect(all.text.trimEnd().split("\n")).toHaveLength(1 + 3 + newerTransfers);
    });
  });
}

describeRoutes("SQLite", openSqlite);
describeRoutes("PostgreSQL", openPostgres, !DATABASE_URL_TEST);
