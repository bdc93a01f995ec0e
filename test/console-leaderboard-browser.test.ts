/**
 * The console's Leaderboard screen and the recipient lookup's "As of", end to end in a real
 * headless Chromium (Debian's `chromium`, driven by playwright-core) against the built service
 * running as its own process, with batches that really finalize (MINIMUM_FINALIZE_SECONDS 1):
 * ranks with a tie (1, 2, 2, 4), 55 participants over two pages, a pending batch that is not on the
 * board, a window with nothing in it, an address's rank (and "not ranked"), a batch that finalizes
 * while the board is open, and a recipient's balances as they stood before that batch.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * Screenshots at 1280 and 390 px go to console-screenshots/ (not committed).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsClient, type Transfer } from "../src/client/index.js";
import {
  assertBuilt,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import {
  HAVE_CHROMIUM,
  SCREENSHOTS,
  installTestWallet,
  launchChromium,
  prepareConsoleRun,
  recipient,
  warnWithoutChromium,
  collectErrors,
  layoutProblems,
  accessibilityProblems,
} from "./helpers/browser.js";

/** What the layout check looks at on these screens (helpers/browser.ts layoutProblems). */
const LAYOUT_SELECTORS = "td, th, button, input, select, dd, h1, h2, h3, p, nav a, .table-wrap, .card";

warnWithoutChromium("console leaderboard browser tests");

/** Every wait in the page is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;
/** The screen's page size (src/console/src/screens/leaderboard.tsx). */
const PAGE_SIZE = 50;
/** Points of the top four: a tie for second, and an amount a JavaScript number would round. */
const TOP = [
  { address: recipient(0), points: "123456789.000000000001", shown: "123,456,789.000000000001" },
  { address: recipient(1), points: "50", shown: "50" },
  { address: recipient(2), points: "50", shown: "50" },
  { address: recipient(3), points: "10.5", shown: "10.5" },
];
/** 51 more, 0.51 down to 0.01 points: 55 participants, so a second page of 5. */
const REST = Array.from({ length: 51 }, (_, i) => ({ address: recipient(10 + i), points: `0.${String(51 - i).padStart(2, "0")}` }));
const PARTICIPANTS = TOP.length + REST.length;
/** Sent in a batch that stays pending: never on the board. */
const PENDING_RECIPIENT = recipient(99);
const LATE_POINTS = "1";
const A_AFTER_LATE = "123,456,790.000000000001";

let dir: string;
let server: ServerProcess;
let browser: Browser;
let client: PointsClient;
const adminToken = newAdminToken();
const operatorKey = generatePrivateKey();
const operator = privateKeyToAccount(operatorKey);
const contract = randomAddress();

async function finalized(batchId: string): Promise<string> {
  return pollUntil(`batch ${batchId} FINALIZED`, WAIT_MS, async () => {
    const batch = await client.getBatch(batchId);
    return batch.status === "FINALIZED" ? batch.finalizedAt! : undefined;
  });
}

/** The board as the API answers it (the operator's token), read raw so the test checks the screen against the service. */
async function boardParticipants(query = ""): Promise<number> {
  const session = await client.signIn();
  const body = await callOk(
    server.url,
    "GET",
    `/v1/contracts/${contract}/leaderboard?pointType=PHASE2_POINTS${query}`,
    session.bearerToken,
  );
  return body.participants as number;
}

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  assertBuilt();
  prepareConsoleRun();
  dir = tempDir("console-leaderboard");
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
    // The recipient lookup reads any address's balances: with the admin token or, as here, PUBLIC_READS.
    PUBLIC_READS: "true",
    LOG_LEVEL: "silent",
  });
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "seed", "PHASE2_POINTS", "1000000000");
  client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
  const transfers: Transfer[] = [...TOP, ...REST].map(({ address, points }) => ({ toAddress: address, points }));
  await client.submitBatch("lb-1", { pointType: "PHASE2_POINTS", secondsToFinalize: 1, transfers });
  await client.submitBatch("lb-pending", {
    pointType: "PHASE2_POINTS",
    secondsToFinalize: 3600,
    transfers: [{ toAddress: PENDING_RECIPIENT, points: "999" }],
  });
  await finalized("lb-1");
  // The contract: on the board within 1 s of finalizedAt.
  await pollUntil("lb-1 on the board", WAIT_MS, async () => ((await boardParticipants()) === PARTICIPANTS ? true : undefined));
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Checks the screen at both widths and takes its screenshots. */
async function checkScreen(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    // The screenshot first: when the layout check fails, it shows what went wrong.
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    expect(await layoutProblems(page, LAYOUT_SELECTORS), `${name} at ${width} px`).toEqual([]);
    expect(await accessibilityProblems(page), `${name} at ${width} px: axe-core`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The shown rows: [rank, address, points] as the cells read. */
async function rows(page: Page): Promise<string[][]> {
  return page
    .getByTestId("leaderboard")
    .locator("tbody tr")
    .evaluateAll((trs) =>
      trs.map((tr) => ["rank", "address", "points"].map((field) => tr.querySelector(`[data-field=${field}]`)!.textContent!.trim())),
    );
}

/** The text without its closing "as of 12:00:03 UTC" (the board's through, API.md), which it must end with. */
function withoutThrough(text: string, wrapped = false): string {
  const through = String.raw`as of (?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2} UTC`;
  const match = new RegExp(`^(.*) ${wrapped ? `\\(${through}\\)` : through}$`).exec(text);
  expect(match, `"${text}" ends with the board's through`).not.toBeNull();
  return match![1]!;
}

async function summary(page: Page): Promise<string> {
  return withoutThrough(await page.getByTestId("leaderboard-summary").innerText());
}

describe.skipIf(!HAVE_CHROMIUM)("the console's leaderboard in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let beforeLate: string;

  beforeAll(async () => {
    if (!HAVE_CHROMIUM) return;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await installTestWallet(context, operator);
    page = await context.newPage();
    errors = collectErrors(page);
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Contract address").fill(contract.toLowerCase());
    await page.getByRole("button", { name: "Sign in with Test Wallet" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
  });

  afterAll(async () => {
    await context?.close();
  });

  it("ranks the finalized recipients, ties sharing a rank, with the participants count", async () => {
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Leaderboard" }).click();
    await page.getByRole("heading", { level: 1, name: "Leaderboard" }).waitFor({ timeout: WAIT_MS });
    await page.getByTestId("leaderboard").waitFor({ timeout: WAIT_MS });
    expect(await summary(page)).toBe(`${PARTICIPANTS} participants in PHASE2_POINTS, all time.`);
    const shown = await rows(page);
    expect(shown).toHaveLength(PAGE_SIZE);
    expect(shown.slice(0, 5)).toEqual([
      ["1", TOP[0]!.address, TOP[0]!.shown],
      ["2", TOP[1]!.address, "50"],
      ["2", TOP[2]!.address, "50"],
      ["4", TOP[3]!.address, "10.5"],
      ["5", REST[0]!.address, "0.51"],
    ]);
    // The pending batch's recipient is not on the board.
    expect(shown.some(([, address]) => address === PENDING_RECIPIENT)).toBe(false);
    await checkScreen(page, "leaderboard");
  });

  it("pages on by cursor and back", async () => {
    await page.getByRole("button", { name: "Next page" }).click();
    await page.locator(`tr[data-address="${REST.at(-1)!.address}"]`).waitFor({ timeout: WAIT_MS });
    expect(await rows(page)).toEqual(REST.slice(-5).map((r, i) => [String(51 + i), r.address, r.points]));
    expect(await summary(page)).toBe(`${PARTICIPANTS} participants in PHASE2_POINTS, all time · this page from rank 51.`);
    expect(await page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);
    await checkScreen(page, "leaderboard-page-2");
    await page.getByRole("button", { name: "Previous page" }).click();
    await page.locator(`tr[data-address="${TOP[0]!.address}"]`).waitFor({ timeout: WAIT_MS });
    expect(await rows(page)).toHaveLength(PAGE_SIZE);
  });

  it("shows the same board for today and the last 7 and 30 days, and an empty window says so", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel("Window").selectOption("today");
    await page
      .getByTestId("leaderboard-summary")
      .filter({ hasText: `from ${today} 00:00 UTC to ${tomorrow} 00:00 UTC` })
      .waitFor({ timeout: WAIT_MS });
    expect(await summary(page)).toContain(`${PARTICIPANTS} participants`);
    await page.getByLabel("Window").selectOption("30d");
    const thirtyAgo = new Date(Date.parse(`${today}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
    await page
      .getByTestId("leaderboard-summary")
      .filter({ hasText: `from ${thirtyAgo} 00:00 UTC` })
      .waitFor({ timeout: WAIT_MS });
    expect((await rows(page))[0]).toEqual(["1", TOP[0]!.address, TOP[0]!.shown]);

    await page.getByLabel("Window").selectOption("custom");
    await page.getByLabel("First day (UTC)").fill("2020-01-01");
    await page.getByLabel("Last day (UTC)").fill("2020-01-31");
    await page.getByTestId("leaderboard-empty").waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("leaderboard-empty").innerText()).toBe("No finalized transfers in this window.");
    expect(await summary(page)).toBe("0 participants in PHASE2_POINTS, from 2020-01-01 00:00 UTC to 2020-02-01 00:00 UTC.");
    expect(await boardParticipants("&from=2020-01-01&to=2020-02-01")).toBe(0);
    await checkScreen(page, "leaderboard-empty");

    // A window that ends before it starts is refused on the page, before any request.
    await page.getByLabel("Last day (UTC)").fill("2019-12-31");
    await page.getByRole("alert").filter({ hasText: "The first day is after the last day" }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Window").selectOption("all");
    await page.getByTestId("leaderboard").waitFor({ timeout: WAIT_MS });
  });

  it("finds an address's rank, and says when it is not ranked", async () => {
    await page.getByLabel("Find an address on this board").fill(TOP[2]!.address.toLowerCase());
    await page.getByRole("button", { name: "Find rank" }).click();
    const result = page.getByTestId("rank-result");
    await result.filter({ hasText: TOP[2]!.address }).waitFor({ timeout: WAIT_MS });
    expect(withoutThrough(await result.innerText(), true)).toBe(`${TOP[2]!.address} is rank 2 of ${PARTICIPANTS}, with 50 points.`);

    await page.getByLabel("Find an address on this board").fill(PENDING_RECIPIENT);
    await page.getByRole("button", { name: "Find rank" }).click();
    await result.filter({ hasText: PENDING_RECIPIENT }).waitFor({ timeout: WAIT_MS });
    expect(withoutThrough(await result.innerText(), true)).toBe(
      `${PENDING_RECIPIENT} is not ranked in this window: no finalized transfer from this contract reached it.`,
    );
    expect(await result.getAttribute("data-rank")).toBe("none");

    await page.getByLabel("Find an address on this board").fill("0x1234");
    await page.getByRole("button", { name: "Find rank" }).click();
    await page.getByRole("alert").filter({ hasText: "Address:" }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Find an address on this board").fill(TOP[0]!.address);
    await page.getByRole("button", { name: "Find rank" }).click();
    await result.filter({ hasText: "rank 1 of" }).waitFor({ timeout: WAIT_MS });
    await checkScreen(page, "leaderboard-rank");
  });

  it("follows a batch that finalizes while the board is open", async () => {
    const lb1 = await client.getBatch("lb-1");
    // The second after lb-1 finalized: a time the as-of input can hold (whole seconds), before lb-2 exists.
    beforeLate = new Date(Math.ceil(Date.parse(lb1.finalizedAt!) / 1000) * 1000).toISOString();
    await pollUntil("the clock past lb-1's finalization second", WAIT_MS, async () =>
      Date.now() > Date.parse(beforeLate) ? true : undefined,
    );
    await client.submitBatch("lb-2", {
      pointType: "PHASE2_POINTS",
      secondsToFinalize: 1,
      transfers: [{ toAddress: TOP[0]!.address, points: LATE_POINTS }],
    });
    await finalized("lb-2");
    const first = page.locator(`tr[data-address="${TOP[0]!.address}"] [data-field=points]`);
    await first.filter({ hasText: A_AFTER_LATE }).waitFor({ timeout: WAIT_MS });
    await page.getByTestId("rank-result").filter({ hasText: A_AFTER_LATE }).waitFor({ timeout: WAIT_MS });
  });

  it("shows a recipient's balances as they stood at an As of time, and now", async () => {
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Recipients" }).click();
    await page.getByRole("heading", { level: 1, name: "Recipients" }).waitFor({ timeout: WAIT_MS });
    // Without the admin token, balances are read only once asked for with As of (or once public reads are known to work).
    expect(await page.getByTestId("recipient-balances-hint").isVisible()).toBe(true);
    await page.getByLabel("Recipient address").fill(TOP[0]!.address);
    await page.getByLabel("As of (UTC, optional)").fill(beforeLate.slice(0, 19));
    await page.getByRole("button", { name: "Look up" }).click();
    const balances = page.getByTestId("recipient-balances");
    await balances.filter({ hasText: "Balances as of" }).waitFor({ timeout: WAIT_MS });
    expect(await balances.getByRole("heading", { level: 2 }).innerText()).toBe(
      `Balances as of ${beforeLate.slice(0, 19).replace("T", " ")} UTC`,
    );
    const received = balances.locator('[data-point-type="PHASE2_POINTS"] [data-field=received]');
    expect(await received.innerText()).toBe(TOP[0]!.shown);
    // Both batches to it are listed: the transfers are not limited by As of.
    await page.locator('tr[data-batch-id="lb-2"]').waitFor({ timeout: WAIT_MS });
    await checkScreen(page, "recipients-as-of");

    await page.getByLabel("As of (UTC, optional)").fill("");
    await page.getByRole("button", { name: "Look up" }).click();
    await balances.filter({ hasText: "Balances now" }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("recipient-balances-hint").count()).toBe(0);
    expect(await received.innerText()).toBe(A_AFTER_LATE);

    // A time to come is refused on the page.
    await page.getByLabel("As of (UTC, optional)").fill("2099-01-01T00:00:00");
    await page.getByRole("button", { name: "Look up" }).click();
    await page.getByRole("alert").filter({ hasText: "As of is in the future" }).waitFor({ timeout: WAIT_MS });
    expect(errors).toEqual([]);
  });
});
