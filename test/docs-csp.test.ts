/**
 * /docs (Swagger UI) under a Content-Security-Policy (issue 19, item 11): no site may frame it
 * (frame-ancestors 'none' and X-Frame-Options: DENY, as the console), it loads and calls this
 * origin only, and Swagger UI still works under the policy: a real headless Chromium renders the
 * routes with no CSP violation. Without /usr/bin/chromium the browser test is skipped.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAVE_CHROMIUM, launchChromium, warnWithoutChromium } from "./helpers/browser.js";
import { createTestApp, listen, type TestApp } from "./helpers/http.js";

warnWithoutChromium("the /docs browser test");
const WAIT_MS = 20_000;

let api: TestApp;
let baseUrl: string;

beforeAll(async () => {
  api = await createTestApp();
  baseUrl = await listen(api.app);
});
afterAll(async () => {
  await api.close();
});

function directives(policy: string): Map<string, string> {
  return new Map(
    policy
      .split(";")
      .map((part) => part.trim())
      .filter((part) => part !== "")
      .map((part) => [part.split(" ", 1)[0]!, part.slice(part.indexOf(" ") + 1)]),
  );
}

describe("/docs security headers", () => {
  it.each(["/docs", "/docs/", "/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-initializer.js", "/docs/json"])(
    "%s has a CSP with frame-ancestors 'none' and X-Frame-Options DENY",
    async (path) => {
      const response = await fetch(baseUrl + path, { redirect: "manual" });
      await response.arrayBuffer();
      expect(response.status).toBeLessThan(400);
      const policy = response.headers.get("content-security-policy");
      expect(policy, path).not.toBeNull();
      const parsed = directives(policy!);
      expect(parsed.get("frame-ancestors")).toBe("'none'");
      expect(parsed.get("default-src")).toBe("'none'");
      expect(parsed.get("script-src")).toBe("'self'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    },
  );
});

describe.skipIf(!HAVE_CHROMIUM)("/docs in a real browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("Swagger UI renders every tag's routes with no CSP violation or console error", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    await page.goto(`${baseUrl}/docs/`);
    await page.locator(".opblock-summary-path", { hasText: "/v1/dapp-auth/challenge" }).first().waitFor({ timeout: WAIT_MS });
    // Expanding an operation renders its schemas and examples (more of Swagger UI's code paths).
    await page.locator(".opblock-summary", { hasText: "/v1/dapp-auth/challenge" }).first().click();
    await page.locator(".opblock-body").first().waitFor({ timeout: WAIT_MS });
    expect(await page.locator(".opblock").count()).toBeGreaterThan(20);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a page of another origin cannot frame /docs", async () => {
    const page = await browser.newPage();
    const blocked: string[] = [];
    page.on("console", (message) => blocked.push(message.text()));
    await page.setContent(`<iframe id="docs" src="${baseUrl}/docs/"></iframe>`);
    const frame = await (await page.locator("#docs").elementHandle())!.contentFrame();
    // Chromium refuses the frame (it reports it on the console) instead of rendering Swagger UI in it.
    await expect.poll(() => blocked.some((text) => /frame-ancestors|X-Frame-Options|refused/i.test(text)), { timeout: WAIT_MS }).toBe(true);
    expect(
      await frame
        ?.locator(".swagger-ui")
        .count()
        .catch(() => 0),
    ).toBe(0);
    await page.close();
  });
});
