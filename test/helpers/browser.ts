import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext } from "playwright-core";
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
