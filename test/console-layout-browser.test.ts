/**
 * The console's layout and its overview, webhooks and menu in a real headless Chromium (Debian's
 * `chromium`, driven by playwright-core) against the real service: every operator screen at
 * 1280 px and 390 px keeps inside the page (no horizontal overflow, no clipped cell or button, no
 * amount broken over two lines) and logs no error; the menu works on a phone; the chart's day
 * totals are the exact sums of batches submitted over the API; the webhooks screen keeps a new
 * secret until dismissed, confirms deletes, stores the event types chosen and names
 * WEBHOOK_ALLOW_PRIVATE_URLS when a private URL is refused.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * With CONSOLE_SCREENSHOTS=1, screenshots of every screen at both widths go to console-screenshots/
 * (not committed).
 */
import { STREAM_EVENT_TYPES } from "../src/domain/events.js";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { displayPoints } from "../src/console/src/lib/amounts.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";
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
const LAYOUT_SELECTORS = "td, th, button, input, select, dd, h1, h2, nav a, figure, .table-wrap";

warnWithoutChromium("console layout browser tests");

const TAKE_SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === "1";
/** Every wait in the page is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;

/** Batches submitted today over the API, and the day totals the chart must show for them. */
const FINALIZED_TODAY = [
  { id: "chart-final-1", points: "1.5" },
  { id: "chart-final-2", points: "0.000000000001" },
  { id: "chart-final-3", points: "123456789.25" },
];
const PENDING_TODAY = [
  { id: "chart-pending-1", points: "2.25" },
  { id: "chart-pending-2", points: "1000000000.000000000009" },
];
const CANCELLED_TODAY = { id: "chart-cancelled", points: "77" };
const EXPECTED_FINALIZED = "123456790.750000000001";
const EXPECTED_PENDING = "1000000002.250000000009";

interface Shell {
  dir: string;
  server: RunningServer;
  admin: PointsAdminClient;
  contract: `0x${string}`;
}

let shell: Shell;
let refusing: Shell;
let browser: Browser;
let receiver: Receiver;
const adminToken = randomBytes(24).toString("base64url");
const operatorKey = generatePrivateKey();
const operator = privateKeyToAccount(operatorKey);

async function startShell(allowPrivateUrls: boolean): Promise<Shell> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-console-layout-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
    // One unit is a valid transfer here, so the exact sums are checked down to the last digit.
    MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.000000000001",
    WEBHOOK_ALLOW_PRIVATE_URLS: allowPrivateUrls ? "true" : "false",
    LOG_LEVEL: "silent",
  });
  const server = await startServer(config);
  const admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
  const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);
  await admin.setOperator(contract, operator.address);
  // A large balance: its long figures are what must not overflow a phone's width.
  await admin.credit(contract, "seed", "PHASE2_POINTS", "123456789012345.123456789012");
  return { dir, server, admin, contract };
}

function operatorClient(target: Shell): PointsClient {
  return new PointsClient({ baseUrl: target.server.url, contractAddress: target.contract, operator: operatorKey });
}

/** Submits the chart's batches, then waits (bounded polling) until the quick ones are finalized. */
async function submitChartBatches(client: PointsClient): Promise<void> {
  for (const [i, batch] of FINALIZED_TODAY.entries()) {
    await client.submitBatch(batch.id, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient(i), points: batch.points }],
      secondsToFinalize: 1,
    });
  }
  for (const [i, batch] of [...PENDING_TODAY, CANCELLED_TODAY].entries()) {
    await client.submitBatch(batch.id, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient(100 + i), points: batch.points }],
      secondsToFinalize: 3600,
    });
  }
  await client.cancelBatch(CANCELLED_TODAY.id);
  const deadline = Date.now() + WAIT_MS;
  for (const batch of FINALIZED_TODAY) {
    while ((await client.getBatch(batch.id)).status !== "FINALIZED") {
      if (Date.now() > deadline) throw new Error(`${batch.id} did not finalize`);
      await new Promise((done) => setTimeout(done, 50));
    }
  }
}

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  prepareConsoleRun();
  shell = await startShell(true);
  refusing = await startShell(false);
  receiver = await startReceiver();
  await submitChartBatches(operatorClient(shell));
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  for (const target of [shell, refusing]) {
    await target?.server.stop();
    if (target) rmSync(target.dir, { recursive: true, force: true });
  }
});

/** A signed-in page: the wallet stand-in (EIP-6963 + EIP-1193 personal_sign) signs the challenge. */
async function signedInPage(context: BrowserContext, target: Shell): Promise<{ page: Page; errors: string[] }> {
  await installTestWallet(context, operator);
  const page = await context.newPage();
  const errors = collectErrors(page);
  await page.goto(`${target.server.url}/console/`);
  await page.getByLabel("Contract address").fill(target.contract.toLowerCase());
  await page.getByRole("button", { name: "Sign in with Test Wallet" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
  return { page, errors };
}

async function go(page: Page, hash: string, heading: string | RegExp): Promise<void> {
  await page.evaluate((h) => (location.hash = h), hash);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor({ timeout: WAIT_MS });
}

/** Checks the screen at both widths, and takes its screenshots when asked. */
async function checkScreen(page: Page, name: string, ready: () => Promise<unknown>): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await ready();
    expect(await layoutProblems(page, LAYOUT_SELECTORS, { amounts: true }), `${name} at ${width} px`).toEqual([]);
    expect(await accessibilityProblems(page), `${name} at ${width} px: axe-core`).toEqual([]);
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, `layout-${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

describe.skipIf(!HAVE_CHROMIUM)("the console's layout, overview and webhooks in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    if (!HAVE_CHROMIUM) return;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: shell.server.url });
    ({ page, errors } = await signedInPage(context, shell));
  });

  afterAll(async () => {
    await context?.close();
  });

  it("draws the chart from the exact day totals of the batches submitted over the API", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const row = page.locator(`figure.chart[data-point-type="PHASE2_POINTS"] tr[data-day="${today}"]`);
    await row.waitFor({ state: "attached", timeout: WAIT_MS });
    // Cancelled batches distribute nothing; the finalized and pending sums keep every digit.
    expect(await row.getAttribute("data-finalized")).toBe(EXPECTED_FINALIZED);
    expect(await row.getAttribute("data-pending")).toBe(EXPECTED_PENDING);
    expect(await row.locator('td[data-label="Finalized"]').textContent()).toBe(displayPoints(EXPECTED_FINALIZED));
    expect(await row.locator('td[data-label="Pending"]').textContent()).toBe(displayPoints(EXPECTED_PENDING));
    expect(await page.locator('figure.chart[data-point-type="PHASE2_POINTS"] tr[data-day]').count()).toBe(30);
    // The other 29 days had no batch.
    const others = await page
      .locator(`figure.chart[data-point-type="PHASE2_POINTS"] tr[data-day]:not([data-day="${today}"])`)
      .evaluateAll((rows) => rows.map((r) => `${r.getAttribute("data-finalized")}/${r.getAttribute("data-pending")}`));
    expect(new Set(others)).toEqual(new Set(["0/0"]));
    // The readout under the chart shows today (the last bar) from the exact strings.
    const readout = await page.getByTestId("chart-readout").first().innerText();
    expect(readout).toBe(`${today}: ${displayPoints(EXPECTED_FINALIZED)} finalized, ${displayPoints(EXPECTED_PENDING)} pending`);
    const canvas = page.locator('figure.chart[data-point-type="PHASE2_POINTS"] canvas');
    expect((await canvas.boundingBox())!.width).toBeGreaterThan(300);
    // The next finalizations list the pending batches, soonest first.
    const next = await page
      .locator("[data-testid=next-finalizations] li")
      .evaluateAll((items) => items.map((li) => li.getAttribute("data-batch-id")));
    expect(next).toEqual(PENDING_TODAY.map((b) => b.id));
    // Figures are labelled by what they are: earned (credits) and received are separate.
    const card = page.locator('[data-point-type="PHASE2_POINTS"].card');
    expect(await card.locator('[data-field="earned"]').innerText()).toBe("123,456,789,012,345.123456789012");
    expect(await card.locator('[data-field="received"]').innerText()).toBe("0");
  });

  it("folds the navigation into a menu at 390 px that opens and navigates", async () => {
    await page.setViewportSize({ width: 390, height: 900 });
    const nav = page.getByRole("navigation", { name: "Screens" });
    expect(await nav.isVisible()).toBe(false);
    const menu = page.getByRole("button", { name: /^Menu/ });
    expect(await menu.getAttribute("aria-expanded")).toBe("false");
    await menu.click();
    expect(await menu.getAttribute("aria-expanded")).toBe("true");
    expect(await layoutProblems(page, LAYOUT_SELECTORS, { amounts: true })).toEqual([]);
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "layout-menu-open-390.png") });
    await page.keyboard.press("Escape");
    expect(await nav.isVisible()).toBe(false);
    await menu.click();
    await nav.getByRole("link", { name: "Batches" }).click();
    await page.getByRole("heading", { level: 1, name: "Batches" }).waitFor({ timeout: WAIT_MS });
    expect(await nav.isVisible()).toBe(false);
    expect(await menu.innerText()).toBe("Menu: Batches");
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(await nav.isVisible()).toBe(true);
    expect(await menu.isVisible()).toBe(false);
  });

  it("creates an endpoint for the chosen event types, keeps its secret until dismissed, and deletes only after confirmation", async () => {
    const client = operatorClient(shell);
    await go(page, "#/webhooks", "Webhooks");
    await page.getByLabel("Endpoint URL").fill(`${receiver.url}/chosen`);
    const chosen = ["batch.cancelled", "batch.finalized"];
    for (const type of STREAM_EVENT_TYPES.filter((t) => !chosen.includes(t))) await page.getByLabel(type).uncheck();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const panel = page.getByTestId("webhook-secret");
    await panel.waitFor({ timeout: WAIT_MS });
    const secret = await page.getByTestId("webhook-secret-value").innerText();
    expect(secret).toMatch(/^whsec_/);
    const stored = (await client.listWebhookEndpoints()).find((e) => e.url === `${receiver.url}/chosen`);
    expect(stored?.types).toEqual(["batch.cancelled", "batch.finalized"]);
    expect(await page.locator(`article[data-endpoint-id="${stored!.id}"] [data-field="types"]`).innerText()).toBe(
      "batch.cancelled, batch.finalized",
    );

    await panel.getByRole("button", { name: "Copy secret" }).click();
    await panel.getByText("Copied.").waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    // Another action and its message: the secret stays.
    const article = page.locator(`article[data-endpoint-id="${stored!.id}"]`);
    await article.getByRole("button", { name: "Send test" }).click();
    await page.getByText(/Test delivery .* queued/).waitFor({ timeout: WAIT_MS });
    await receiver.waitFor(1);
    expect(await panel.isVisible()).toBe(true);
    await panel.getByRole("button", { name: "I have saved it" }).click();
    expect(await panel.count()).toBe(0);

    // Delete asks first; "Keep it" keeps the endpoint.
    await article.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this endpoint?" });
    await dialog.waitFor({ timeout: WAIT_MS });
    expect(await dialog.innerText()).toContain(`${receiver.url}/chosen`);
    await dialog.getByRole("button", { name: "Keep it" }).click();
    expect(await dialog.isVisible()).toBe(false);
    expect((await client.listWebhookEndpoints()).map((e) => e.id)).toContain(stored!.id);
    await article.getByRole("button", { name: "Delete…" }).click();
    await dialog.getByRole("button", { name: "Yes, delete the endpoint" }).click();
    await article.waitFor({ state: "detached", timeout: WAIT_MS });
    expect((await client.listWebhookEndpoints()).map((e) => e.id)).not.toContain(stored!.id);
  });

  it("keeps every operator screen inside the window at 1280 and 390 px, with no console error", async () => {
    const client = operatorClient(shell);
    // An endpoint with a delivered test event, so the webhooks screen and the overview's health have rows.
    const kept = await client.createWebhookEndpoint({ url: `${receiver.url}/kept`, description: "layout check" });
    await client.testWebhookEndpoint(kept.endpoint.id);
    await receiver.waitFor(2);

    await go(page, "#/overview", "Overview");
    await checkScreen(page, "overview", () =>
      page.locator(`[data-testid=webhook-health] li[data-endpoint-id="${kept.endpoint.id}"]`).waitFor(),
    );
    await go(page, "#/batches", "Batches");
    await checkScreen(page, "batches", () => page.locator("tr[data-batch-id]").nth(5).waitFor());
    await go(page, `#/batches/${PENDING_TODAY[1]!.id}`, PENDING_TODAY[1]!.id);
    await checkScreen(page, "batch-detail", () => page.getByTestId("countdown").waitFor());
    await go(page, "#/new", "New distribution");
    const lines = ["address,points", ...Array.from({ length: 20 }, (_, i) => `${recipient(200 + i)},1.000000000001`)];
    await page
      .locator('input[type="file"]')
      .setInputFiles({ name: "small.csv", mimeType: "text/csv", buffer: Buffer.from(lines.join("\n")) });
    await checkScreen(page, "new-distribution", () => page.getByTestId("preview").waitFor());
    await go(page, "#/recipients", "Recipients");
    await page.getByLabel("Recipient address").fill(recipient(1).toLowerCase());
    await page.getByRole("button", { name: "Look up" }).click();
    await checkScreen(page, "recipients", () => page.locator("tr[data-batch-id]").first().waitFor());
    await go(page, "#/events", "Live feed");
    await checkScreen(page, "live-feed", () => page.locator("li[data-event-type]").first().waitFor());
    await go(page, "#/webhooks", "Webhooks");
    await checkScreen(page, "webhooks", () =>
      page.locator(`article[data-endpoint-id="${kept.endpoint.id}"] tr[data-delivery-status]`).first().waitFor(),
    );
    const key = await client.apiKeys.create({ name: "layout check", scopes: ["read", "submit"] });
    await go(page, "#/api-keys", "API keys");
    await checkScreen(page, "api-keys", () => page.locator(`tr[data-api-key-id="${key.apiKey.id}"]`).waitFor());
    expect(errors).toEqual([]);
  });

  it("names WEBHOOK_ALLOW_PRIVATE_URLS when the service refuses a private URL", async () => {
    const refusingContext = await browser.newContext({ viewport: { width: 390, height: 900 } });
    try {
      const { page: other } = await signedInPage(refusingContext, refusing);
      await go(other, "#/webhooks", "Webhooks");
      await other.getByLabel("Endpoint URL").fill("http://127.0.0.1:9/hook");
      await other.getByRole("button", { name: "Add endpoint" }).click();
      const refusal = other.getByTestId("webhook-message");
      await refusal.waitFor({ timeout: WAIT_MS });
      const text = await refusal.innerText();
      expect(text).toContain("VALIDATION_FAILED");
      expect(text).toContain("WEBHOOK_ALLOW_PRIVATE_URLS");
      expect(await operatorClient(refusing).listWebhookEndpoints()).toEqual([]);
      expect(await layoutProblems(other, LAYOUT_SELECTORS, { amounts: true })).toEqual([]);
      if (TAKE_SCREENSHOTS) await other.screenshot({ path: join(SCREENSHOTS, "layout-webhooks-refused-390.png"), fullPage: true });
    } finally {
      await refusingContext.close();
    }
  });
});
