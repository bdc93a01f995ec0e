import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { getAddress } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";

/**
 * Debian's Chromium, driven by playwright-core (which never downloads a browser). Without it the
 * browser tests are skipped with a message saying how to run them.
 */
export const CHROMIUM = "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

/** Warns once per test file that `what` is skipped, and how to run it. */
export function warnWithoutChromium(what: string): void {
  if (!HAVE_CHROMIUM) {
    console.warn(`${what} skipped: ${CHROMIUM} is missing. Install Debian's Chromium (apt-get install -y chromium) to run them.`);
  }
}

/**
 * The flags this machine needs: no sandbox (root), no GPU, and none of Chromium's own network
 * traffic (it would be refused here, many connections at a time). Playwright gives each launch a
 * fresh profile directory.
 */
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

/**
 * Installs a wallet stand-in in every page of `context`: it announces itself through EIP-6963
 * and answers EIP-1193 eth_requestAccounts and personal_sign, signing with `operator`.
 */
export async function installTestWallet(context: BrowserContext, operator: PrivateKeyAccount): Promise<void> {
  await context.exposeFunction("__testWalletSign", (message: string) => operator.signMessage({ message }));
  await context.addInitScript((address: string) => {
    const w = window as unknown as { __testWalletSign(message: string): Promise<string> };
    const provider = {
      request: async ({ method, params }: { method: string; params?: unknown[] }) => {
        if (method === "eth_requestAccounts" || method === "eth_accounts") return [address];
        if (method === "personal_sign") {
          const hex = String(params![0]).slice(2);
          const bytes = new Uint8Array(hex.match(/../g)!.map((pair) => parseInt(pair, 16)));
          return w.__testWalletSign(new TextDecoder().decode(bytes));
        }
        throw new Error(`unsupported method ${method}`);
      },
    };
    const info = {
      uuid: "3f1c2a57-0000-4000-8000-000000000001",
      name: "Test Wallet",
      icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
      rdns: "test.wallet",
    };
    const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
  }, operator.address);
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Where the browser tests write each screen at 1280 and 390 px (git-ignored). */
export const SCREENSHOTS = join(REPO_ROOT, "console-screenshots");

/** The browser tests serve the built console: say how to build it rather than fail obscurely. */
export function prepareConsoleRun(): void {
  if (!existsSync(join(REPO_ROOT, "dist/console/index.html"))) throw new Error("dist/console is missing: run `npm run build` first");
  mkdirSync(SCREENSHOTS, { recursive: true });
}

/** The i-th of a run of distinct, readable recipient addresses (0x…01, 0x…02, …), EIP-55. */
export function recipient(i: number): string {
  return getAddress(`0x${(i + 1).toString(16).padStart(40, "0")}`);
}

/**
 * The overview asks GET /v1/chain where the operator comes from; without CHAIN_RPC_URL the
 * answer is 404 by the API's design (operators set by an administrator), not a failure.
 */
export function isChainNotConfigured(url: string, text: string): boolean {
  return new URL(url, "http://x").pathname === "/v1/chain" && text.includes("404");
}

/** Console errors, uncaught page errors and failed requests, collected from the page's start. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && !isChainNotConfigured(message.location().url, message.text())) {
      errors.push(`console: ${message.text()} (${message.location().url})`);
    }
  });
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  // Chromium's console line for a failed request does not say which: this names it.
  page.on("response", (response) => {
    if (response.status() >= 400 && !isChainNotConfigured(response.url(), String(response.status()))) {
      errors.push(`response: ${response.status()} ${response.request().method()} ${response.url()}`);
    }
  });
  return errors;
}

/**
 * What is wrong with the page's layout at its window's width: the page wider than the window, a
 * shown element of `selectors` whose content is cut or that lies outside the window, and with
 * `amounts`, an `.amount` broken over lines. Hidden table heads (cards at 390 px), closed dialogs,
 * visually hidden text and the skip link are not looked at.
 */
export async function layoutProblems(page: Page, selectors: string, options: { amounts?: boolean } = {}): Promise<string[]> {
  return page.evaluate(
    ({ selectors, amounts }) => {
      const problems: string[] = [];
      const width = window.innerWidth;
      if (document.documentElement.scrollWidth > width) {
        problems.push(`page ${document.documentElement.scrollWidth} px wide in a ${width} px window`);
      }
      const hiddenHead = (el: Element) => {
        const head = el.closest("thead");
        return head !== null && getComputedStyle(head).position === "absolute";
      };
      const shown = (el: Element) =>
        el.checkVisibility({ checkVisibilityCSS: true }) &&
        el.closest("dialog:not([open]), .visually-hidden, .skip") === null &&
        !hiddenHead(el);
      const name = (el: Element) => `${el.tagName.toLowerCase()} "${(el.textContent ?? "").trim().slice(0, 40)}"`;
      for (const el of Array.from(document.querySelectorAll(selectors))) {
        if (!shown(el)) continue;
        const box = el.getBoundingClientRect();
        if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== "INPUT" && el.tagName !== "SELECT") {
          problems.push(`${name(el)} clipped: content ${el.scrollWidth} px in ${el.clientWidth} px`);
        }
        if (box.left < -0.5 || box.right > width + 0.5) problems.push(`${name(el)} outside the window: ${box.left}–${box.right} px`);
      }
      if (amounts) {
        for (const amount of Array.from(document.querySelectorAll(".amount"))) {
          if (!amount.checkVisibility()) continue;
          if (amount.getClientRects().length > 1) problems.push(`amount "${amount.textContent}" broken over lines`);
        }
      }
      return problems;
    },
    { selectors, amounts: options.amounts ?? false },
  );
}

/** axe-core's own source, injected into the page under test (it runs there, against the live DOM). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
/** The rules run: WCAG 2.0 and 2.1, levels A and AA. */
const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/**
 * axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A/AA), one line
 * per rule with the elements it found; an empty list is a pass. Minor and moderate findings are
 * advisory and not returned.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated rather than added as a <script>: the console's CSP refuses inline scripts, as it should.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async (tags) => {
    const axe = (window as unknown as { axe: { run(context: unknown, options: unknown): Promise<AxeResults> } }).axe;
    const results = await axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
    return results.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(" ")) }));
  }, AXE_TAGS);
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.targets.slice(0, 5).join(", ")}${v.targets.length > 5 ? ` (+${v.targets.length - 5})` : ""}`);
}

interface AxeResults {
  violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[];
}
