/**
 * The console's admin entry, payouts screens and login links in a real headless Chromium
 * (Debian's `chromium`, driven by playwright-core), against the real service.
 *
 * Without /usr/bin/chromium these tests are skipped: `apt-get install -y chromium` to run them.
 * With CONSOLE_SCREENSHOTS=1, screenshots at 1280 px and 390 px go to console-screenshots/ (not committed).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { decodeFunctionData, getAddress, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient, PointsClient, type SnapshotTreeDump } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { addressMessage, pointsMessage } from "../src/domain/messages.js";
import { startServer, type RunningServer } from "../src/server.js";
import { displayPoints } from "../src/console/src/lib/amounts.js";
import { NO_LOAD_SHEDDING } from "./helpers/process.js";
import {
  HAVE_CHROMIUM,
  SCREENSHOTS,
  accessibilityProblems,
  isChainNotConfigured,
  launchChromium,
  prepareConsoleRun,
  recipient,
  warnWithoutChromium,
} from "./helpers/browser.js";

warnWithoutChromium("console admin browser tests");

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const TAKE_SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === "1";
const CLI = join(REPO_ROOT, "dist/src/cli/main.js");
/** Every wait in the page is bounded by this; it waits for a real condition, never a fixed time. */
const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;
const SESSION_KEY = "points-ledger.console.session";
const run = promisify(execFile);

let dir: string;
let server: RunningServer;
let browser: Browser;
let admin: PointsAdminClient;
const adminToken = randomBytes(24).toString("base64url");
const operatorKey = generatePrivateKey();
const operator = privateKeyToAccount(operatorKey);
const contract = getAddress(`0x${randomBytes(20).toString("hex")}`);
const otherKey = generatePrivateKey();
const otherContract = getAddress(`0x${randomBytes(20).toString("hex")}`);

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  prepareConsoleRun();
  dir = mkdtempSync(join(tmpdir(), "points-ledger-console-admin-"));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
    ...NO_LOAD_SHEDDING,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
    LOG_LEVEL: "silent",
  });
  server = await startServer(config);
  admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
  await admin.setOperator(contract, operator.address);
  await admin.setOperator(otherContract, privateKeyToAccount(otherKey).address);
  await admin.credit(contract, "seed", "PHASE2_POINTS", "1000000");
  // Holders with exact fractional balances: a snapshot of them has leaves to prove.
  for (let i = 0; i < 5; i++) await admin.credit(recipient(i), `holder-${i}`, "PHASE2_POINTS", `${i + 1}.000000000001`);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Errors the page logs or throws. A refused token's 401/403 is logged by Chromium itself as a failed resource: `allowRefusals` lets those pass. */
function watchErrors(page: Page): { errors: string[]; check(allowRefusals?: boolean): void } {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && !isChainNotConfigured(message.location().url, message.text())) errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  return {
    errors,
    check(allowRefusals = false) {
      const refusal = /^Failed to load resource: the server responded with a status of 40[13]/;
      expect(errors.filter((text) => !(allowRefusals && refusal.test(text)))).toEqual([]);
    },
  };
}

/** At 1280 and 390 px: no horizontal scroll of the page, every visible button, field and text inside the viewport, no button clipping its label. */
async function checkLayout(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const problems = await page.evaluate(() => {
      const found: string[] = [];
      const viewport = window.innerWidth;
      const root = document.documentElement;
      const hiddenHead = (element: Element) => {
        const head = element.closest("thead");
        return head !== null && getComputedStyle(head).position === "absolute";
      };
      if (root.scrollWidth > viewport) {
        const widest = Array.from(document.querySelectorAll<HTMLElement>("body *"))
          .filter((element) => element.getBoundingClientRect().right > viewport + 0.5)
          .map((element) => `${element.tagName}.${element.className}`)
          .slice(0, 5);
        found.push(`page scrolls: ${root.scrollWidth} > ${viewport} (${widest.join(", ")})`);
      }
      for (const element of Array.from(document.querySelectorAll<HTMLElement>("button, input, select, th, td, dd, h1, h2, h3, p"))) {
        const box = element.getBoundingClientRect();
        // A closed dialog is not shown; a table's header row is not shown where its rows are cards.
        if (box.width === 0 || element.closest("dialog:not([open])") || hiddenHead(element)) continue;
        const label = `${element.tagName} "${(element.textContent ?? "").trim().slice(0, 30)}"`;
        if (box.right > viewport + 0.5 || box.left < -0.5) found.push(`${label} outside the viewport (${box.left}–${box.right})`);
        if (element.tagName === "BUTTON" && element.scrollWidth > element.clientWidth + 1) found.push(`${label} clipped`);
      }
      return found;
    });
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    expect(problems, `${name} at ${width} px`).toEqual([]);
    expect(await accessibilityProblems(page), `${name} at ${width} px: axe-core`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function consoleLoginLink(contractAddress: string, key: `0x${string}`): Promise<string> {
  const env = { PATH: process.env.PATH ?? "", OPERATOR_PRIVATE_KEY: key };
  const { stdout } = await run(process.execPath, [CLI, "console-login", "--contract", contractAddress, "--url", server.url], { env });
  return stdout.trim();
}

async function signInWithToken(page: Page, token: string, contractAddress = ""): Promise<void> {
  await page.goto(`${server.url}/console/`);
  await page.getByLabel("Contract address").fill(contractAddress);
  await page.getByRole("textbox", { name: "Token" }).fill(token);
  await page.getByRole("button", { name: "Sign in with token" }).click();
}

async function heading(page: Page, name: string): Promise<void> {
  await page.getByRole("heading", { level: 1, name }).waitFor({ timeout: WAIT_MS });
}

/** Clicks `button` and returns the text of the file the page offers for download. */
async function downloaded(page: Page, button: string): Promise<{ name: string; text: string }> {
  const [download] = await Promise.all([
    page.waitForEvent("download", { timeout: WAIT_MS }),
    page.getByRole("button", { name: button }).click(),
  ]);
  const path = await download.path();
  return { name: download.suggestedFilename(), text: readFileSync(path, "utf8") };
}

describe.skipIf(!HAVE_CHROMIUM)("the admin console and payouts in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let watch: ReturnType<typeof watchErrors>;

  it("refuses a wrong admin token at once with 'not a valid token', and no admin form shows", async () => {
    const refusedContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const refused = await refusedContext.newPage();
    const refusedWatch = watchErrors(refused);
    await signInWithToken(refused, "not-the-admin-token");
    const alert = refused.getByRole("alert");
    await alert.waitFor({ timeout: WAIT_MS });
    expect(await alert.innerText()).toMatch(/not a valid token/);
    expect(await alert.innerText()).not.toMatch(/expired|revoked/);
    expect(await refused.getByLabel("Operator address").count()).toBe(0);
    expect(await refused.getByRole("heading", { level: 1 }).innerText()).toBe("points-ledger console");
    await checkLayout(refused, "admin-token-refused");
    refusedWatch.check(true);
    await refusedContext.close();
  });

  it("refuses garbage and unknown operator tokens with 'not a valid token', not 'expired or revoked'", async () => {
    const refusedContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const refused = await refusedContext.newPage();
    const refusedWatch = watchErrors(refused);
    for (const garbage of ["plt_garbage", `plt_${randomBytes(32).toString("base64url")}`, "plk_🙂 spaces"]) {
      await signInWithToken(refused, garbage, contract);
      const alert = refused.getByRole("alert");
      await alert.waitFor({ timeout: WAIT_MS });
      expect(await alert.innerText(), garbage).toMatch(/not a valid token/);
      expect(await alert.innerText(), garbage).not.toMatch(/expired|revoked/);
      expect(await refused.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY)).toBeNull();
    }
    refusedWatch.check(true);
    await refusedContext.close();
  });

  it("opens the admin screens with the admin token and no operator session", async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch = watchErrors(page);
    await signInWithToken(page, adminToken);
    await heading(page, "Operators & credits");
    expect(await page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY)).toBeNull();
    expect(await page.getByTestId("session-subtitle").innerText()).toContain("no operator session");
    await page.locator(`tr[data-contract-address="${contract}"]`).waitFor({ timeout: WAIT_MS });
    // A bad address or amount is refused before sending, in the words of the service's own messages.
    const credited = recipient(40);
    await page.getByLabel("Address", { exact: true }).fill("0xabc");
    await page.getByLabel("Points", { exact: true }).fill("1.2.3");
    await page.getByRole("button", { name: "Credit points" }).click();
    await page.getByText(`Address: ${addressMessage("0xabc")}`, { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel("Address", { exact: true }).fill(credited.toLowerCase());
    await page.getByRole("button", { name: "Credit points" }).click();
    await page.getByText(`Points: ${pointsMessage("1.2.3")}`, { exact: true }).waitFor({ timeout: WAIT_MS });
    // A credit from the admin console reaches the ledger.
    await page.getByLabel("Address", { exact: true }).fill(credited.toLowerCase());
    await page.getByLabel("Points", { exact: true }).fill("2.5");
    await page.getByRole("button", { name: "Credit points" }).click();
    await page.getByText(/Credited 2.5 PHASE2_POINTS/).waitFor({ timeout: WAIT_MS });
    expect((await admin.getAddressBalances(credited)).PHASE2_POINTS!.available).toBe("2.5");
    await checkLayout(page, "admin-console");
    // At 390 px the admin console's screens fold into the same menu as the operator console's.
    await page.setViewportSize({ width: 390, height: 900 });
    const payoutsLink = page.getByRole("link", { name: "Payouts" });
    expect(await payoutsLink.isVisible()).toBe(false);
    await page.getByRole("button", { name: "Menu: Operators & credits" }).click();
    await payoutsLink.waitFor({ state: "visible", timeout: WAIT_MS });
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "admin-menu-open-390.png") });
    await page.keyboard.press("Escape");
    await payoutsLink.waitFor({ state: "hidden", timeout: WAIT_MS });
    await page.setViewportSize({ width: 1280, height: 900 });
    watch.check();
  });

  it("takes a snapshot after a confirmation, shows its root, total and a proof that verifies against the API's root", async () => {
    await page.getByRole("link", { name: "Payouts" }).click();
    await heading(page, "Payouts");
    const id = `console-test-${randomBytes(4).toString("hex")}`;
    await page.getByLabel("New snapshot id").fill(id);
    await page.getByLabel("Point type").first().selectOption("PHASE2_POINTS");
    await page.getByLabel("Measure").selectOption("available");
    await page.getByLabel(/Token decimals/).fill("18");
    await page.getByRole("button", { name: "Take snapshot…" }).click();
    const confirmation = page.getByTestId("take-confirmation");
    await confirmation.waitFor({ timeout: WAIT_MS });
    expect(await confirmation.innerText()).toMatch(/PHASE2_POINTS[\s\S]*available[\s\S]*18/);
    await checkLayout(page, "snapshot-confirmation");
    await page.getByRole("button", { name: "Yes, take the snapshot" }).click();
    await page.getByTestId("snapshot-root").waitFor({ timeout: WAIT_MS });

    const snapshot = await admin.getSnapshot(id);
    expect(await page.getByTestId("snapshot-root").innerText()).toBe(snapshot.root);
    expect(await page.getByTestId("snapshot-leaf-count").innerText()).toBe(String(snapshot.leafCount));
    expect(await page.getByTestId("snapshot-total").innerText()).toBe(`${displayPoints(snapshot.total)} PHASE2_POINTS`);
    expect(await page.locator(`[data-testid=known-snapshots] li[data-snapshot-id="${id}"]`).count()).toBe(1);

    const holder = recipient(2);
    await page.getByLabel("Address", { exact: true }).fill(holder.toLowerCase());
    await page.getByRole("button", { name: "Look up proof" }).click();
    await page.getByTestId("proof").waitFor({ timeout: WAIT_MS });
    const amount = await page.getByTestId("proof-amount").innerText();
    const hashes = await page.locator("[data-testid=proof-hashes] li").allInnerTexts();
    expect(await page.getByTestId("proof-points").innerText()).toBe("3.000000000001");
    expect(amount).toBe("3000000000001000000");
    expect(hashes).toEqual((await admin.getProof(id, holder)).proof);
    expect(StandardMerkleTree.verify(snapshot.root, ["address", "uint256"], [holder, amount], hashes)).toBe(true);

    // With the distributor entered (a malformed one refused in the service's words), the proof shows
    // the claim to send: its arguments, and calldata that decodes to the same call.
    expect(await page.getByTestId("claim-call").count()).toBe(0);
    await page.getByLabel("Distributor address").fill("0x1234");
    await page.getByRole("button", { name: "Save distributor" }).click();
    await page.getByText(`Distributor: ${addressMessage("0x1234")}`, { exact: true }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("claim-call").count()).toBe(0);
    const distributor = getAddress(`0x${randomBytes(20).toString("hex")}`);
    await page.getByLabel("Distributor address").fill(distributor.toLowerCase());
    await page.getByRole("button", { name: "Save distributor" }).click();
    const claim = page.getByTestId("claim-call");
    await claim.waitFor({ timeout: WAIT_MS });
    expect(await page.getByLabel("Distributor address").inputValue()).toBe(distributor);
    expect(await claim.innerText()).toContain(distributor);
    expect(JSON.parse(await page.getByTestId("claim-args").innerText())).toEqual([holder, amount, hashes]);
    const calldata = (await page.getByTestId("claim-calldata").innerText()) as `0x${string}`;
    const call = decodeFunctionData({
      abi: parseAbi(["function claim(address account, uint256 cumulativeAmount, bytes32[] proof)"]),
      data: calldata,
    });
    expect(call.args).toEqual([holder, BigInt(amount), hashes]);
    await claim.getByRole("button", { name: "Copy calldata" }).click();
    await claim.getByText(/^Copied\.$|^Copying is not allowed here: select the calldata/).waitFor({ timeout: WAIT_MS });
    await checkLayout(page, "payouts-claim");
    // Remembered for this snapshot across a reload.
    await page.reload();
    await page.locator(`[data-testid=known-snapshots] li[data-snapshot-id="${id}"] button`).click();
    await page.getByTestId("snapshot-root").waitFor({ timeout: WAIT_MS });
    expect(await page.getByLabel("Distributor address").inputValue()).toBe(distributor);

    const tree = await downloaded(page, "Download tree (JSON)");
    expect(tree.name).toBe(`snapshot-${id}-tree.json`);
    const loaded = StandardMerkleTree.load(JSON.parse(tree.text) as SnapshotTreeDump);
    expect(loaded.root).toBe(snapshot.root);
    expect(loaded.length).toBe(snapshot.leafCount);
    await checkLayout(page, "payouts-snapshot");
    watch.check();
  });

  it("downloads balances.csv in the admin console, streamed, with every holder", async () => {
    await page.getByLabel("Point type").nth(1).selectOption("PHASE2_POINTS");
    const file = await downloaded(page, "Download balances.csv");
    expect(file.name).toBe("balances.csv");
    const expected = await (await admin.exportBalancesCsv({ pointType: "PHASE2_POINTS" })).text();
    expect(file.text).toBe(expected);
    expect(file.text).toContain(`${recipient(4)},PHASE2_POINTS,5.000000000001`);
    watch.check();
  });

  it("asks before a login link replaces the admin console, and declining keeps it", async () => {
    const link = new URL(await consoleLoginLink(contract, operatorKey));
    await page.evaluate((hash) => (location.hash = hash), link.hash);
    const question = page.getByTestId("login-switch");
    await question.waitFor({ timeout: WAIT_MS });
    expect(await question.getByTestId("link-contract").innerText()).toBe(contract);
    expect(await question.innerText()).toContain("admin console");
    await question.getByRole("button", { name: "Keep the admin console" }).click();
    await question.waitFor({ state: "detached", timeout: WAIT_MS });
    await heading(page, "Payouts");
    expect(await page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY)).toBeNull();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("Signed out.").waitFor({ timeout: WAIT_MS });
    watch.check();
    await context.close();
  });

  it("signs in with an operator token, downloads transfers.csv with the filters applied, and refuses a wrong admin token on the Admin screen", async () => {
    const client = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    await client.submitBatch("export-a", {
      pointType: "PHASE2_POINTS",
      transfers: [
        { toAddress: recipient(20), points: "1.25" },
        { toAddress: recipient(21), points: "0.01" },
      ],
    });
    await client.submitBatch("export-b", { pointType: "PHASE2_POINTS", transfers: [{ toAddress: recipient(20), points: "7" }] });
    const { bearerToken } = await client.signIn();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch = watchErrors(page);
    await signInWithToken(page, bearerToken, contract.toLowerCase());
    await heading(page, "Overview");
    await page.evaluate(() => (location.hash = "#/payouts"));
    await heading(page, "Payouts");
    await page.getByLabel("Recipient (optional)").fill(recipient(20).toLowerCase());
    await page.getByLabel("Status").selectOption("PENDING");
    const file = await downloaded(page, "Download transfers.csv");
    expect(file.name).toBe(`transfers-${contract}.csv`);
    const expected = await (await client.exportTransfersCsv({ toAddress: recipient(20), status: "PENDING" })).text();
    expect(file.text).toBe(expected);
    const rows = file.text.trim().split("\n");
    expect(rows).toHaveLength(3);
    expect(rows.slice(1).every((row) => row.includes(recipient(20)))).toBe(true);
    await checkLayout(page, "payouts-operator");
    watch.check();
    // The operator console's Admin screen checks an admin token at once too.
    await page.evaluate(() => (location.hash = "#/admin"));
    await heading(page, "Admin");
    await page.getByLabel("Admin token").fill("not-the-admin-token");
    await page.getByRole("button", { name: "Use admin token" }).click();
    await page.getByRole("alert").waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole("alert").innerText()).toMatch(/not a valid token/);
    expect(await page.getByLabel("Operator address").count()).toBe(0);
    watch.check(true);
    await context.close();
  });

  it("signs in from a login link opened in a tab already on /console", async () => {
    context = await browser.newContext({ viewport: { width: 390, height: 900 } });
    page = await context.newPage();
    watch = watchErrors(page);
    await page.goto(`${server.url}/console/`);
    await page.getByRole("button", { name: "Sign in with token" }).waitFor({ timeout: WAIT_MS });
    const link = new URL(await consoleLoginLink(contract, operatorKey));
    await page.evaluate((hash) => (location.hash = hash), link.hash);
    await heading(page, "Overview");
    expect(await page.locator(".brand .contract").innerText()).toBe(contract);
    expect(page.url()).not.toContain("login=");
    watch.check();
  });

  it("asks before a login link replaces the open session, naming both contracts: decline keeps it, accept switches", async () => {
    await page.evaluate(() => (location.hash = "#/batches"));
    await heading(page, "Batches");
    const sessionBefore = await page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY);
    const declined = new URL(await consoleLoginLink(otherContract, otherKey));
    await page.evaluate((hash) => (location.hash = hash), declined.hash);
    const question = page.getByTestId("login-switch");
    await question.waitFor({ timeout: WAIT_MS });
    expect(await question.getByTestId("current-contract").innerText()).toBe(contract);
    expect(await question.getByTestId("link-contract").innerText()).toBe(otherContract);
    expect(page.url()).not.toContain("login=");
    await checkLayout(page, "login-switch");
    await question.getByRole("button", { name: /^Keep / }).click();
    await question.waitFor({ state: "detached", timeout: WAIT_MS });
    await heading(page, "Batches");
    expect(await page.locator(".brand .contract").innerText()).toBe(contract);
    expect(await page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY)).toBe(sessionBefore);

    const accepted = new URL(await consoleLoginLink(otherContract, otherKey));
    await page.evaluate((hash) => (location.hash = hash), accepted.hash);
    await question.waitFor({ timeout: WAIT_MS });
    await question.getByRole("button", { name: /^Switch to / }).click();
    await page.waitForFunction((address) => document.querySelector(".brand .contract")?.textContent === address, otherContract, {
      timeout: WAIT_MS,
    });
    expect(await question.count()).toBe(0);
    const stored = JSON.parse((await page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY))!) as { contractAddress: string };
    expect(stored.contractAddress).toBe(otherContract);
    watch.check();
    await context.close();
  });
});
