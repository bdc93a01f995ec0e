/**
 * The console's transparency-log panel (src/console/src/log-checkpoint.tsx) in a real headless
 * Chromium against the real service: the live feed (operator) and the admin console show the
 * current checkpoint (its size, root hash and signing time, the signature checked in the page) and
 * the `points-ledger-witness` line that witnesses it; Refresh shows a newer checkpoint.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * With CONSOLE_SCREENSHOTS=1, screenshots at 1280 px and 390 px go to console-screenshots/ (not committed).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page } from "playwright-core";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient, type Checkpoint } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";
import {
  HAVE_CHROMIUM,
  SCREENSHOTS,
  accessibilityProblems,
  launchChromium,
  prepareConsoleRun,
  recipient,
  warnWithoutChromium,
} from "./helpers/browser.js";

warnWithoutChromium("console transparency log browser tests");

const TAKE_SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === "1";
/** Every wait is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;

let dir: string;
let server: RunningServer;
let browser: Browser;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");
const operatorKey = generatePrivateKey();
const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  prepareConsoleRun();
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-log-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: "silent",
  });
  server = await startServer(config);
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
  await admin.setOperator(contract, privateKeyToAccount(operatorKey).address);
  await admin.credit(contract, "seed", "PHASE2_POINTS", "100");
  for (let i = 0; i < 3; i++) await admin.credit(recipient(i), `log-${i}`, "PHASE2_POINTS", "10");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The service's checkpoint once it holds at least `size` events (the log signs about a second after a commit; bounded). */
async function checkpointOf(size: number): Promise<Checkpoint> {
  const key = await admin.log.key();
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const checkpoint = await admin.log.checkpoint(key).catch(() => null);
    if (checkpoint !== null && checkpoint.size >= size) return checkpoint;
    if (Date.now() > deadline) throw new Error(`no checkpoint of ${size} events within ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The panel's facts, once it shows a checkpoint of `size` events. */
async function panel(page: Page, size: number) {
  const log = page.getByTestId("log-checkpoint");
  await log.locator('[data-field="size"]', { hasText: size.toLocaleString("en") }).waitFor({ timeout: WAIT_MS });
  const field = (name: string) => log.locator(`[data-field="${name}"]`).innerText();
  return {
    origin: await field("origin"),
    root: await field("root"),
    signedAt: await field("signed-at"),
    lag: await field("lag"),
    key: await field("key"),
    command: await log.getByTestId("witness-command").innerText(),
  };
}

/** At both widths: nothing of the panel outside the viewport, the page never scrolls sideways. */
async function checkLayout(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const problems = await page.evaluate(() => {
      const found: string[] = [];
      if (document.documentElement.scrollWidth > window.innerWidth) found.push(`page scrolls: ${document.documentElement.scrollWidth}`);
      for (const element of Array.from(document.querySelectorAll<HTMLElement>("[data-testid=log-checkpoint] *"))) {
        const box = element.getBoundingClientRect();
        if (box.width > 0 && (box.right > window.innerWidth + 0.5 || box.left < -0.5)) {
          found.push(`${element.tagName} "${(element.textContent ?? "").slice(0, 30)}" outside (${box.left}–${box.right})`);
        }
      }
      return found;
    });
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    expect(problems, `${name} at ${width} px`).toEqual([]);
    expect(await accessibilityProblems(page), `${name} at ${width} px: axe-core`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

describe.skipIf(!HAVE_CHROMIUM)("the transparency log in the console", () => {
  it("the live feed shows the signed checkpoint the service serves and the witness command; Refresh shows a newer one", async () => {
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    const before = await checkpointOf(5);
    const { bearerToken } = await client.signIn();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Contract address").fill(contract.toLowerCase());
    await page.getByRole("textbox", { name: "Token" }).fill(bearerToken);
    await page.getByRole("button", { name: "Sign in with token" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
    await page.evaluate(() => (location.hash = "#/events"));
    await page.getByRole("heading", { level: 2, name: "Transparency log" }).waitFor({ timeout: WAIT_MS });

    const shown = await panel(page, before.size);
    expect(shown.origin).toBe(before.origin);
    expect(shown.root).toBe(before.rootHash);
    expect(shown.key).toBe(await admin.log.key());
    // Every committed event is in the tree: nothing waits (GET /v1/log/status's lag).
    expect(shown.lag).toBe("nothing: every committed event is logged");
    // Signed a moment ago, to the second (Last-Modified), shown in UTC.
    const signedMs = Date.parse(shown.signedAt.replace(" UTC", "Z").replace(" ", "T"));
    expect(Math.abs(Date.now() - signedMs)).toBeLessThan(60_000);
    expect(shown.command).toBe(`npx points-ledger-witness --url ${server.url} --state witness.json`);
    await checkLayout(page, "log-live-feed");

    // A new event: after Refresh the panel shows the checkpoint that holds it.
    await client.submitBatch("log-panel", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: recipient(9), points: "1" }] });
    const after = await checkpointOf(before.size + 1);
    await page.getByTestId("log-checkpoint").getByRole("button", { name: "Refresh" }).click();
    expect((await panel(page, after.size)).root).toBe(after.rootHash);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("the admin console shows the same checkpoint below its forms", async () => {
    const current = await checkpointOf(6);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Contract address").fill("");
    await page.getByRole("textbox", { name: "Token" }).fill(adminToken);
    await page.getByRole("button", { name: "Sign in with token" }).click();
    await page.getByRole("heading", { level: 1, name: "Operators & credits" }).waitFor({ timeout: WAIT_MS });
    const latest = await checkpointOf(current.size);
    const shown = await panel(page, latest.size);
    expect(shown.root).toBe(latest.rootHash);
    await checkLayout(page, "log-admin");
    await context.close();
  });
});
