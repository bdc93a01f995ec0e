/**
 * The console's API keys screen end to end in a real headless Chromium (Debian's `chromium`,
 * driven by playwright-core) against the built service running as its own process: the operator
 * creates a key with two scopes, sees its secret once (copy button, then gone from the page),
 * finds it listed by its prefix, the secret works against the API within its scopes only, revoking
 * asks first and names the key, the revoked key is refused, the live feed shows both events, and
 * the screen keeps inside the window at 1280 and 390 px.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * Screenshots at both widths go to console-screenshots/ (not committed).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  call,
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
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
const LAYOUT_SELECTORS = "td, th, button, input, code, h1, h2, p, dialog, nav a, .table-wrap, .secret-once";

warnWithoutChromium("console API keys browser tests");

/** Every wait in the page is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;
const KEY_NAME = "nightly payouts job";
/** The longest name the contract allows, without spaces: it must wrap, not widen the table. */
const LONG_NAME = "k".repeat(64);
const EXPIRY_DAY = "2099-12-31";

let dir: string;
let server: ServerProcess;
let browser: Browser;
const adminToken = newAdminToken();
const operator = privateKeyToAccount(generatePrivateKey());
const contract = randomAddress();

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  assertBuilt();
  prepareConsoleRun();
  dir = tempDir("console-api-keys");
  server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" });
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "seed", "PHASE2_POINTS", "1000");
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

function contractPath(rest: string): string {
  return `/v1/contracts/${contract}${rest}`;
}

describe.skipIf(!HAVE_CHROMIUM)("the console's API keys screen in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let secret: string;
  let keyId: string;

  beforeAll(async () => {
    if (!HAVE_CHROMIUM) return;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
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

  it("is reached from the navigation and refuses a key without a scope", async () => {
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor({ timeout: WAIT_MS });
    await page.getByText("No API keys yet.").waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Name").fill(KEY_NAME);
    await page.getByRole("button", { name: "Create key" }).click();
    expect(await page.getByTestId("api-key-message").innerText()).toBe("Choose at least one scope.");
    // A name of spaces only passes the field's `required` but not the service: its 400 is shown in the console's words.
    await page.getByLabel("Name").fill("   ");
    await page.getByRole("checkbox", { name: /^read/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("alert").filter({ hasText: "VALIDATION_FAILED" }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("api-key-message").innerText()).toMatch(/^VALIDATION_FAILED: .* — name: /);
    // Chromium logs the refused request too: both lines name this 400 and nothing else went wrong.
    expect(errors.length).toBeGreaterThan(0);
    for (const line of errors) expect(line).toMatch(/400.*\/api-keys\)?$/);
    errors.length = 0;
    await page.getByRole("checkbox", { name: /^read/ }).uncheck();
    await page.getByLabel("Name").fill(KEY_NAME);
  });

  it("creates a key with two scopes and shows its secret once, with a copy button", async () => {
    await page.getByRole("checkbox", { name: /^read/ }).check();
    await page.getByRole("checkbox", { name: /^cancel/ }).check();
    await page.getByLabel(/^Expires on/).fill(EXPIRY_DAY);
    await page.getByRole("button", { name: "Create key" }).click();
    const panel = page.getByTestId("api-key-secret");
    await panel.waitFor({ timeout: WAIT_MS });
    expect(await panel.innerText()).toContain("it will not be shown again");
    secret = await page.getByTestId("api-key-secret-value").innerText();
    expect(secret).toMatch(/^plk_[A-Za-z0-9_-]{40,}$/);

    await panel.getByRole("button", { name: "Copy secret" }).click();
    await panel.getByText("Copied.").waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    // Listed by its prefix, with what the form asked for; the API agrees.
    const row = page.locator("tr[data-api-key-id]", { hasText: KEY_NAME });
    await row.waitFor({ timeout: WAIT_MS });
    keyId = (await row.getAttribute("data-api-key-id"))!;
    expect(await row.locator("[data-field=prefix]").innerText()).toBe(`${secret.slice(0, 12)}…`);
    expect(await row.locator("[data-field=scopes]").innerText()).toBe("read, cancel");
    expect(await row.locator("[data-field=last-used]").innerText()).toBe("never");
    expect(await row.locator("[data-field=status]").innerText()).toBe("active");
    expect(await row.innerText()).toContain("(operator)");
    const operatorToken = await signIn(server.url, contract, operator);
    const stored = await callOk(server.url, "GET", contractPath(`/api-keys/${keyId}`), operatorToken);
    expect(stored.apiKey).toMatchObject({ name: KEY_NAME, scopes: ["read", "cancel"], expiresAt: `${EXPIRY_DAY}T23:59:59.000Z` });

    // A second key with the longest name, so the table is checked with a name that must wrap.
    await page.getByLabel("Name").fill(LONG_NAME);
    for (const scope of ["read", "submit", "cancel", "webhooks"])
      await page.getByRole("checkbox", { name: new RegExp(`^${scope}`) }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("tr[data-api-key-id]", { hasText: LONG_NAME }).waitFor({ timeout: WAIT_MS });
    // The second secret replaces the first in the panel: one secret on screen at a time.
    expect(await page.getByTestId("api-key-secret-value").innerText()).not.toBe(secret);
    await checkScreen(page, "api-keys-secret");
  });

  it("the secret reads within its scopes and is refused a submit with 403 naming the scope", async () => {
    const read = await call(server.url, "GET", contractPath("/point-balances"), secret);
    expect(read.status).toBe(200);
    const submit = await call(server.url, "POST", contractPath("/batches"), secret, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: recipient(0), points: "1" }],
    });
    expect(submit.status).toBe(403);
    expect((submit.body.error as { details: { requiredScope: string } }).details.requiredScope).toBe("submit");
  });

  it("forgets the secret once dismissed", async () => {
    const panel = page.getByTestId("api-key-secret");
    await panel.getByRole("button", { name: "I have saved it" }).click();
    expect(await panel.count()).toBe(0);
    const html = await page.content();
    expect(html).not.toContain(secret);
    expect(html).not.toContain(secret.slice(12));
  });

  it("revokes only after a confirmation that names the key, and the key is then refused", async () => {
    const row = page.locator(`tr[data-api-key-id="${keyId}"]`);
    await row.getByRole("button", { name: "Revoke…" }).click();
    const dialog = page.getByRole("dialog", { name: `Revoke key “${KEY_NAME}”?` });
    await dialog.waitFor({ timeout: WAIT_MS });
    expect(await dialog.innerText()).toContain(secret.slice(0, 12));
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(SCREENSHOTS, `api-keys-revoke-dialog-${width}.png`) });
      expect(await layoutProblems(page, LAYOUT_SELECTORS), `revoke dialog at ${width} px`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await dialog.getByRole("button", { name: "Keep it" }).click();
    expect(await dialog.isVisible()).toBe(false);
    expect((await call(server.url, "GET", contractPath("/point-balances"), secret)).status).toBe(200);

    await row.getByRole("button", { name: "Revoke…" }).click();
    await dialog.getByRole("button", { name: "Yes, revoke the key" }).click();
    await row.locator("[data-field=status]", { hasText: "revoked" }).waitFor({ timeout: WAIT_MS });
    expect(await row.locator("[data-field=status]").innerText()).toBe("revoked");
    expect(await row.locator("[data-field=revoked-reason]").innerText()).toBe("by the operator");
    expect(await page.getByTestId("api-key-message").innerText()).toBe(`Key “${KEY_NAME}” revoked.`);
    // A single instance refuses it at once; the bound is the contract's 1 s, polled, never slept.
    await pollUntil("the revoked key refused", 1000, async () => {
      const answer = await call(server.url, "GET", contractPath("/point-balances"), secret);
      return answer.status === 401 ? true : undefined;
    });
    await checkScreen(page, "api-keys");
  });

  it("shows the key's creation and revocation readably in the live feed", async () => {
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Live feed" }).click();
    const created = page.locator("li[data-event-type='api_key.created']", { hasText: KEY_NAME });
    const revoked = page.locator("li[data-event-type='api_key.revoked']", { hasText: KEY_NAME });
    await revoked.waitFor({ timeout: WAIT_MS });
    expect(await created.locator(".what").innerText()).toBe(
      `key “${KEY_NAME}” ${secret.slice(0, 12)}… for read, cancel, expires ${EXPIRY_DAY} 23:59:59 UTC`,
    );
    expect(await revoked.locator(".what").innerText()).toBe(`key “${KEY_NAME}” ${secret.slice(0, 12)}… revoked`);
    expect(await revoked.locator(".by").innerText()).toMatch(/^by 0x[0-9a-fA-F]{4}…[0-9a-fA-F]{4} \(operator\)$/);
    await checkScreen(page, "api-keys-feed");
  });

  it("is reached from the 390 px menu and fits the phone's width", async () => {
    await page.setViewportSize({ width: 390, height: 900 });
    await page.getByRole("button", { name: /^Menu/ }).click();
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor({ timeout: WAIT_MS });
    await page.locator(`tr[data-api-key-id="${keyId}"]`).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    expect(await layoutProblems(page, LAYOUT_SELECTORS)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(errors).toEqual([]);
  });
});
