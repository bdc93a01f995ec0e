/**
 * The console end to end in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), against the real service with a one-second minimum finalize delay. A wallet
 * stand-in is injected into the page: an EIP-1193 provider announced through EIP-6963 whose
 * personal_sign is a viem local account's signMessage.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * Screenshots of every screen at 1280 px and 390 px go to console-screenshots/ (not committed).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient } from "../src/client/index.js";
import { loadConfig, type Config } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { startReceiver } from "./helpers/webhook-receiver.js";
import { displayPoints, sumPoints } from "../src/console/src/lib/amounts.js";
import { MAX_TRANSFERS_SCANNED_PER_PAGE } from "../src/domain/limits.js";
import { addressMessage } from "../src/domain/messages.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";
import {
  HAVE_CHROMIUM,
  SCREENSHOTS,
  accessibilityProblems,
  installTestWallet,
  launchChromium,
  prepareConsoleRun,
  recipient,
  warnWithoutChromium,
} from "./helpers/browser.js";

warnWithoutChromium("console browser tests");

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(REPO_ROOT, "dist/src/cli/main.js");
/** Every wait in the page is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;
const run = promisify(execFile);

let dir: string;
let config: Config;
let server: RunningServer;
let browser: Browser;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");
const operatorKey = generatePrivateKey();
const operator = privateKeyToAccount(operatorKey);
const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  prepareConsoleRun();
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-browser-"));
  config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    LOG_LEVEL: "silent",
  });
  server = await startServer(config);
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
  await admin.setOperator(contract, operator.address);
  await admin.credit(contract, "seed", "PHASE2_POINTS", "1000000");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A page with the wallet stand-in: EIP-6963 announce, EIP-1193 eth_requestAccounts and personal_sign. */
async function walletPage(context: BrowserContext): Promise<Page> {
  await installTestWallet(context, operator);
  return context.newPage();
}

/** Each screen at both widths: its screenshots, and axe-core finds nothing serious or critical. */
async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    expect(await accessibilityProblems(page), `${name} at ${width} px: axe-core`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function go(page: Page, hash: string, heading: string): Promise<void> {
  await page.evaluate((h) => (location.hash = h), hash);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor({ timeout: WAIT_MS });
}

function csv(count: number, bad: Map<number, string> = new Map()): Buffer {
  const lines = ["address,points"];
  for (let i = 0; i < count; i++) lines.push(bad.get(lines.length + 1) ?? `${recipient(i)},1.5`);
  return Buffer.from(lines.join("\n"));
}

async function availableOnOverview(page: Page, field: string): Promise<string> {
  return page.locator(`[data-point-type="PHASE2_POINTS"] [data-field="${field}"]`).innerText();
}

describe.skipIf(!HAVE_CHROMIUM)("the console in Chromium", () => {
  let page: Page;
  let context: BrowserContext;

  it("signs in with the browser wallet and shows the balances", async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await walletPage(context);
    await page.goto(`${server.url}/console/`);
    await screenshots(page, "sign-in");
    // A bad contract address is refused in the words of the service's own message.
    await page.getByLabel("Contract address").fill("0x1234");
    await page.getByRole("button", { name: "Sign in with Test Wallet" }).click();
    await page.getByText(`Contract address: ${addressMessage("0x1234")}`, { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Contract address").fill(contract.toLowerCase());
    await page.getByRole("button", { name: "Sign in with Test Wallet" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
    await page.waitForFunction(
      () => document.querySelector('[data-point-type="PHASE2_POINTS"] [data-field="available"]')?.textContent === "1,000,000",
      null,
      {
        timeout: WAIT_MS,
      },
    );
    expect(await page.locator(".brand .contract").innerText()).toBe(contract);
    await screenshots(page, "overview");
  });

  it("lists exactly the 3 bad lines of a 5,000-line CSV, then sends the fixed file to 100 % in 3 batches", async () => {
    await go(page, "#/new", "New distribution");
    await page.getByLabel("Seconds to finalize").fill("3600");
    const bad = new Map([
      [18, "0xnot-an-address,1"],
      [2500, `${recipient(90_001)},1.1234567890123`],
      [4999, `${recipient(90_002)},0.001`],
    ]);
    await page.locator('input[type="file"]').setInputFiles({ name: "season.csv", mimeType: "text/csv", buffer: csv(5000, bad) });
    await page.getByTestId("bad-lines").waitFor({ timeout: WAIT_MS });
    const lines = await page.locator("[data-testid=bad-lines] li").evaluateAll((items) => items.map((li) => li.getAttribute("data-line")));
    expect(lines).toEqual(["18", "2500", "4999"]);
    expect(await page.getByRole("button", { name: /^Submit/ }).isDisabled()).toBe(true);
    await screenshots(page, "new-distribution-errors");

    await page.locator('input[type="file"]').setInputFiles({ name: "season-fixed.csv", mimeType: "text/csv", buffer: csv(5000) });
    await page.waitForFunction(() => document.querySelector("[data-testid=recipients]")?.textContent === "5000", null, {
      timeout: WAIT_MS,
    });
    expect(await page.getByTestId("total").innerText()).toBe("7,500");
    await page.getByRole("button", { name: "Submit 3 batches" }).click();
    await page.getByTestId("submit-summary").waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("progress-text").innerText()).toBe("100 %");
    expect(await page.locator("progress").getAttribute("value")).toBe("100");
    await screenshots(page, "new-distribution-sent");

    await go(page, "#/batches", "Batches");
    await page.locator("tr[data-batch-id]").nth(2).waitFor({ timeout: WAIT_MS });
    const ids = await page.locator("tr[data-batch-id]").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-batch-id")!));
    expect(ids).toHaveLength(3);
    expect(ids.every((id) => /^console-\d{8}-\d{6}-[0-9a-f]{8}-[0-2]$/.test(id))).toBe(true);
    await screenshots(page, "batches");
  });

  it("cancels a batch after a confirmation that says what it releases", async () => {
    const firstId = await page.locator("tr[data-batch-id]").first().getAttribute("data-batch-id");
    await page.locator("tr[data-batch-id] a").first().click();
    await page.getByTestId("countdown").waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("countdown").innerText()).toMatch(/in (59 min|1 h)/);
    await screenshots(page, "batch-detail");
    await page.getByRole("button", { name: "Cancel batch…" }).click();
    const releases = await page.getByTestId("cancel-releases").innerText();
    expect(releases).toMatch(/releases [\d,.]+ PHASE2_POINTS/);
    await page.getByRole("button", { name: "Yes, cancel the batch" }).click();
    await page.waitForFunction(() => document.querySelector("[data-testid=batch-status]")?.textContent === "CANCELLED", null, {
      timeout: WAIT_MS,
    });
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    expect((await client.getBatch(firstId!)).status).toBe("CANCELLED");
    // Who submitted and who cancelled: the signed-in operator, its address shortened.
    await page.getByTestId("cancelled-by").waitFor({ timeout: WAIT_MS });
    const byOperator = /^0x[0-9a-fA-F]{4}…[0-9a-fA-F]{4} \(operator\)$/;
    expect(await page.getByTestId("submitted-by").innerText()).toMatch(byOperator);
    expect(await page.getByTestId("cancelled-by").innerText()).toMatch(byOperator);
  });

  it("shows another batch finalize in the live feed, and the balances follow", async () => {
    await go(page, "#/events", "Live feed");
    await page.waitForFunction(() => document.querySelector("[data-testid=feed-status]")?.textContent?.startsWith("Live"), null, {
      timeout: WAIT_MS,
    });
    const distributedBefore = await (async () => {
      const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
      await client.submitBatch("quick-1", {
        pointType: "PHASE2_POINTS",
        transfers: [{ toAddress: recipient(7), points: "0.01" }],
        secondsToFinalize: 1,
      });
      return (await client.getBalances()).PHASE2_POINTS!.finalizedSentCumulative;
    })();
    expect(distributedBefore).toBe("0");
    await page.locator("li[data-event-type='batch.finalized']").first().waitFor({ timeout: WAIT_MS });
    expect(await page.locator("li[data-event-type='batch.finalized']").first().innerText()).toContain("quick-1");
    expect(await page.locator("li[data-event-type='batch.finalized']").first().innerText()).toContain("by the service");
    await screenshots(page, "live-feed");
    await go(page, "#/overview", "Overview");
    await page.waitForFunction(
      () => document.querySelector('[data-point-type="PHASE2_POINTS"] [data-field="distributed"]')?.textContent === "0.01",
      null,
      { timeout: WAIT_MS },
    );
    // The page shows the service's exact figures: 7,500 sent, one batch cancelled, 0.01 distributed.
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    const balance = (await client.getBalances()).PHASE2_POINTS!;
    expect(sumPoints([balance.available, balance.pendingSent, balance.finalizedSentCumulative])).toBe("1000000");
    expect(await availableOnOverview(page, "pending")).toBe(displayPoints(balance.pendingSent));
    expect(await availableOnOverview(page, "available")).toBe(displayPoints(balance.available));
    expect(balance.available).toMatch(/\.99$/);
  });

  it("shows the other screens at both widths", async () => {
    await go(page, "#/recipients", "Recipients");
    await page.getByLabel("Recipient address").fill("not an address");
    await page.getByRole("button", { name: "Look up" }).click();
    await page.getByText(`Recipient address: ${addressMessage("not an address")}`, { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Recipient address").fill(recipient(7).toLowerCase());
    await page.getByRole("button", { name: "Look up" }).click();
    await page.locator("tr[data-batch-id='quick-1']").waitFor({ timeout: WAIT_MS });
    // recipient(7) is also in the 5,000-line upload (1.5, pending or cancelled): only quick-1's 0.01 is delivered.
    expect(await page.getByTestId("recipient-summary").innerText()).toContain("0.01 points delivered");
    await screenshots(page, "recipients");
    await go(page, "#/admin", "Admin");
    await page.getByLabel("Admin token").fill(adminToken);
    await page.getByRole("button", { name: "Use admin token" }).click();
    // The registered contracts: the signed-in one is listed; one registered through the form appears.
    await page.locator(`tr[data-contract-address="${contract}"]`).waitFor({ timeout: WAIT_MS });
    const registered = getAddress(`0x${randomBytes(20).toString("hex")}`);
    const registeredOperator = privateKeyToAccount(generatePrivateKey()).address;
    await page.getByLabel("Contract", { exact: true }).fill(registered.toLowerCase());
    await page.getByLabel("Operator address").fill(registeredOperator.toLowerCase());
    await page.getByRole("button", { name: "Set operator" }).click();
    const row = page.locator(`tr[data-contract-address="${registered}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.locator('[data-field="operator"]').innerText()).toBe(registeredOperator);
    expect((await admin.listContracts()).contracts.map((c) => c.contractAddress)).toContain(registered);
    await screenshots(page, "admin");
    await page.getByRole("button", { name: "Forget admin token" }).click();
  });

  it("asks before searching past what one lookup examines, then finds a recipient of an older batch", async () => {
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    const older = getAddress(`0x${randomBytes(20).toString("hex")}`);
    await client.submitBatch("lookup-older", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: older, points: "0.02" }] });
    // Newer than it, more transfers than the screen's 5 empty pages examine (5 × the per-page scan bound).
    const perBatch = config.maxTransfersPerBatch;
    for (let b = 0; b * perBatch <= 5 * MAX_TRANSFERS_SCANNED_PER_PAGE; b++) {
      const transfers = Array.from({ length: perBatch }, (_, i) => ({ toAddress: recipient(10_000 + b * perBatch + i), points: "0.01" }));
      await client.submitBatch(`lookup-newer-${b}`, { pointType: "PHASE2_POINTS", transfers });
    }
    await go(page, "#/recipients", "Recipients");
    await page.getByLabel("Recipient address").fill(older.toLowerCase());
    await page.getByRole("button", { name: "Look up" }).click();
    const keepSearching = page.getByTestId("recipient-keep-searching");
    await keepSearching.waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("recipient-summary").innerText()).toContain("0 transfers on this page");
    expect(await page.locator("tr[data-batch-id]").count()).toBe(0);
    await keepSearching.getByRole("button", { name: "Keep searching" }).click();
    await page.locator("tr[data-batch-id='lookup-older']").waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("recipient-summary").innerText()).toContain("1 transfer on this page");
    expect(await keepSearching.count()).toBe(0);
  });

  it("adds a webhook endpoint and sees its test delivery succeed", async () => {
    const receiver = await startReceiver();
    try {
      await go(page, "#/webhooks", "Webhooks");
      await page.getByLabel("Endpoint URL").fill(receiver.url);
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page.getByText(/signing secret, shown only now: whsec_/).waitFor({ timeout: WAIT_MS });
      await page.locator("article[data-endpoint-id]").getByRole("button", { name: "Send test" }).click();
      await page.getByText(/Test delivery .* queued/).waitFor({ timeout: WAIT_MS });
      await receiver.waitFor(1);
      expect(JSON.parse(receiver.received[0]!.body).type).toBe("webhook.test");
      // The delivery is marked SUCCEEDED once the 200 is recorded: refresh until the row says so.
      const succeeded = page.locator("tr[data-event-type='webhook.test'][data-delivery-status='SUCCEEDED']");
      const deadline = Date.now() + WAIT_MS;
      while (!(await succeeded.isVisible())) {
        if (Date.now() > deadline) throw new Error("the test delivery never showed as SUCCEEDED");
        await page.getByRole("button", { name: "Refresh deliveries" }).click();
        await succeeded.waitFor({ timeout: 500 }).catch(() => undefined);
      }
      await screenshots(page, "webhooks");
    } finally {
      await receiver.close();
    }
  });

  it("returns to sign-in with a clear message when the token is revoked", async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    await admin.setOperator(contract, other.address);
    await page.evaluate(() => (location.hash = "#/batches"));
    await page.getByText("Your session has expired or was revoked. Sign in again.").waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await admin.setOperator(contract, operator.address);
    await context.close();
  });

  it("signs in once with a console-login link", async () => {
    const env = { PATH: process.env.PATH ?? "", OPERATOR_PRIVATE_KEY: operatorKey };
    const { stdout } = await run(process.execPath, [CLI, "console-login", "--contract", contract, "--url", server.url], { env });
    const link = stdout.trim();
    const linkContext = await browser.newContext({ viewport: { width: 390, height: 900 } });
    const linkPage = await linkContext.newPage();
    await linkPage.goto(link);
    await linkPage.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
    expect(linkPage.url()).not.toContain("login=");
    await linkPage.getByRole("button", { name: "Sign out" }).click();
    await linkPage.getByText("Signed out.").waitFor({ timeout: WAIT_MS });
    // The same link a second time: the challenge was solved already.
    await linkPage.goto("about:blank");
    await linkPage.goto(link);
    await linkPage.getByText(/This login link cannot be used/).waitFor({ timeout: WAIT_MS });
    await linkContext.close();
  });
});
