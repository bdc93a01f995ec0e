/**
 * The console's overview says where the contract's operator comes from (API.md, Operators on
 * chain; the console speaks through points-ledger/client's getChain): named on chain, with the
 * chain, the registry and the block read at, for a service under CHAIN_RPC_URL (anvil); registered
 * by the administrator otherwise. In a real headless Chromium, signed in with a wallet stand-in
 * holding the operator's key; screenshots at 1280 px and 390 px go to console-screenshots/ (not
 * committed), and the overview keeps inside a phone's width. Skipped without Chromium or anvil.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsAdminClient } from "../src/client/index.js";
import { loadConfig } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import { ANVIL_PATH, ANVIL_SKIP_REASON, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import {
  HAVE_CHROMIUM,
  SCREENSHOTS,
  accessibilityProblems,
  collectErrors,
  installTestWallet,
  launchChromium,
  layoutProblems,
  prepareConsoleRun,
  warnWithoutChromium,
} from "./helpers/browser.js";
import { anvilSigner, deployDapp } from "./helpers/chain-registry.js";
import { NO_LOAD_SHEDDING, newAdminToken, randomAddress } from "./helpers/process.js";

warnWithoutChromium("console chain browser tests");

const WAIT_MS = 20_000;
const WIDTHS = [1280, 390] as const;
const TIMEOUT_MS = 120_000;
const skip = !HAVE_CHROMIUM ? "no Chromium" : ANVIL_PATH === null ? ANVIL_SKIP_REASON : null;

describe.skipIf(skip !== null)(`the console's operator source${skip === null ? "" : ` (skipped: ${skip})`}`, () => {
  let anvil: Anvil;
  let browser: Browser;
  const dirs: string[] = [];
  const servers: RunningServer[] = [];
  const owner = anvilSigner(0);
  const operator = anvilSigner(1);
  const adminToken = newAdminToken();

  async function serve(extra: Record<string, string>): Promise<RunningServer> {
    const dir = mkdtempSync(join(tmpdir(), "points-ledger-console-chain-"));
    dirs.push(dir);
    const server = await startServer(
      loadConfig({
        DATABASE_URL: `sqlite:${join(dir, "ledger.db")}`,
        ...NO_LOAD_SHEDDING,
        PORT: "0",
        ADMIN_TOKEN: adminToken,
        LOG_LEVEL: "silent",
        ...extra,
      }),
    );
    servers.push(server);
    return server;
  }

  async function signedInOverview(server: RunningServer, contract: string): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await installTestWallet(context, operator);
    const page = await context.newPage();
    const errors = collectErrors(page);
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Contract address").fill(contract);
    await page.getByRole("button", { name: "Sign in with Test Wallet" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: WAIT_MS });
    await page.locator('[data-testid="operator-source"][data-source]:not([data-source=""])').waitFor({ timeout: WAIT_MS });
    return { page, errors };
  }

  beforeAll(async () => {
    if (skip !== null) return;
    prepareConsoleRun();
    anvil = await startAnvil();
    browser = await launchChromium();
  }, TIMEOUT_MS);
  afterAll(async () => {
    await browser?.close();
    await Promise.all(servers.map((server) => server.stop()));
    await anvil?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("shows an operator named on chain with its chain, registry and block, within a phone's width", { timeout: TIMEOUT_MS }, async () => {
    const registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
    const dapp = await deployDapp(anvil, owner, registry, operator.address);
    const server = await serve({ CHAIN_RPC_URL: anvil.rpcUrl, OPERATOR_REGISTRY_ADDRESS: registry, CHAIN_BLOCK_TAG: "latest" });
    const { page, errors } = await signedInOverview(server, dapp);
    const source = page.getByTestId("operator-source");
    expect(await source.getAttribute("data-source")).toBe("chain");
    const text = await source.innerText();
    expect(text).toContain(operator.address);
    expect(text).toContain(`named on chain ${anvil.chainId} in the operator registry ${registry}`);
    expect(text).toMatch(/read at latest block \d+/);
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(SCREENSHOTS, `overview-operator-chain-${width}.png`), fullPage: true });
      expect(await layoutProblems(page, '[data-testid="operator-source"], h1, dd'), `at ${width} px`).toEqual([]);
      expect(await accessibilityProblems(page), `at ${width} px: axe-core`).toEqual([]);
    }
    expect(errors).toEqual([]);
  });

  it("shows an operator registered by the administrator, and the 404 of GET /v1/chain is no error", { timeout: TIMEOUT_MS }, async () => {
    const server = await serve({});
    const contract = randomAddress();
    const admin = new PointsAdminClient({ baseUrl: server.url, adminToken });
    await admin.setOperator(contract, operator.address);
    const { page, errors } = await signedInOverview(server, contract);
    const source = page.getByTestId("operator-source");
    expect(await source.getAttribute("data-source")).toBe("admin");
    expect(await source.innerText()).toContain("registered by the administrator");
    await page.setViewportSize({ width: 390, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, "overview-operator-admin-390.png"), fullPage: true });
    expect(errors).toEqual([]);
  });
});
