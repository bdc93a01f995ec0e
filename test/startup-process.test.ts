/**
 * Issue 18, "the service says where to go": the built `serve` process prints one human line per
 * URL (API, console, docs) on stderr, warns when ADMIN_TOKEN is not set, says it stopped on
 * SIGTERM, and keeps stdout a JSON log; GET / leads to the console and /favicon.ico is served.
 * Needs the build (`npm test` builds first). The favicon is also decoded by a real Chromium when
 * /usr/bin/chromium exists (skipped otherwise).
 */
import { rmSync } from "node:fs";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  newAdminToken,
  pollUntil,
  randomAddress,
  READY_TIMEOUT_MS,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { HAVE_CHROMIUM, launchChromium, warnWithoutChromium } from "./helpers/browser.js";

warnWithoutChromium("the favicon browser check");

const ADMIN_WARNING = "warning: ADMIN_TOKEN is not set: the admin API (/v1/admin) and the console's admin screens are off";

/** A child's stdout and stderr, apart (ServerProcess.output() joins them under two headings). */
function streams(server: ServerProcess): { stdout: string; stderr: string } {
  const output = server.output();
  const split = output.indexOf("\nstderr:\n");
  return { stdout: output.slice("stdout:\n".length, split), stderr: output.slice(split + "\nstderr:\n".length) };
}

/** Waits until stderr holds `line` (the child's pipes are read apart from the readiness answer). */
function untilStderrHas(server: ServerProcess, line: string): Promise<string> {
  return pollUntil(`stderr line ${JSON.stringify(line)}`, READY_TIMEOUT_MS, async () => {
    const { stderr } = streams(server);
    return stderr.split("\n").includes(line) ? stderr : undefined;
  });
}

/** Every stdout line is one JSON object: the human lines never go there. */
function jsonLog(stdout: string): { msg?: string }[] {
  // A line still being written (no newline yet) is left for the next read.
  const lines = stdout
    .split("\n")
    .slice(0, -1)
    .filter((line) => line !== "");
  return lines.map((line) => JSON.parse(line) as { msg?: string });
}

describe("serve without ADMIN_TOKEN", () => {
  let dir: string;
  let server: ServerProcess;

  beforeAll(async () => {
    dir = tempDir("startup");
    server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), LOG_LEVEL: "info" });
  });
  afterAll(async () => {
    await server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the API, console and docs URLs and the admin warning on stderr, and only JSON on stdout", async () => {
    const stderr = await untilStderrHas(server, ADMIN_WARNING);
    const lines = stderr.split("\n");
    expect(lines).toContain(`points-ledger is listening on ${server.url}`);
    expect(lines).toContain(`  API:      ${server.url}/v1`);
    expect(lines).toContain(`  console:  ${server.url}/console`);
    expect(lines).toContain(`  API docs: ${server.url}/docs`);
    // stdout and stderr are separate pipes: the JSON line may arrive after the human ones.
    const log = await pollUntil("the JSON listening line", READY_TIMEOUT_MS, async () => {
      const entries = jsonLog(streams(server).stdout);
      return entries.some((entry) => entry.msg === "points-ledger listening") ? entries : undefined;
    });
    expect(log.map((entry) => entry.msg)).toContain("points-ledger listening");
  });

  it("redirects / to the console", async () => {
    const response = await fetch(`${server.url}/`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/console/");
    const followed = await fetch(`${server.url}/`);
    expect(followed.status).toBe(200);
    expect(followed.headers.get("content-type")).toMatch(/^text\/html/);
  });

  it("serves /favicon.ico as an SVG image, cacheable for a day", async () => {
    const response = await fetch(`${server.url}/favicon.ico`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/svg+xml");
    expect(response.headers.get("cache-control")).toBe("public, max-age=86400");
    expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^]*<\/svg>$/);
  });

  it.skipIf(!HAVE_CHROMIUM)("loads the console in Chromium with no 404, and the favicon decodes as an image", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const failed: string[] = [];
      page.on("response", (response) => {
        if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
      });
      await page.goto(`${server.url}/`);
      expect(page.url()).toBe(`${server.url}/console/`);
      const width = await page.evaluate(
        () =>
          new Promise<number>((resolve) => {
            const image = new Image();
            image.onload = () => resolve(image.naturalWidth);
            image.onerror = () => resolve(-1);
            image.src = "/favicon.ico";
          }),
      );
      expect(width).toBeGreaterThan(0);
      expect(failed).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("says it stopped on SIGTERM, in the JSON log and on stderr, and exits 0", async () => {
    const exit = await server.kill("SIGTERM");
    expect(exit).toEqual({ code: 0, signal: null });
    const { stdout, stderr } = streams(server);
    expect(stderr.split("\n")).toContain("points-ledger stopped");
    const messages = jsonLog(stdout).map((entry) => entry.msg);
    expect(messages).toContain("shutting down");
    expect(messages.at(-1)).toBe("stopped");
  });
});

describe("serve with ADMIN_TOKEN", () => {
  let dir: string;
  let server: ServerProcess;

  beforeAll(async () => {
    dir = tempDir("startup-admin");
    server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: newAdminToken() });
  });
  afterAll(async () => {
    await server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the URLs and no admin warning", async () => {
    const stderr = await untilStderrHas(server, `  API docs: ${server.url}/docs`);
    expect(stderr.split("\n")).toContain(`points-ledger is listening on ${server.url}`);
    expect(stderr).not.toContain("ADMIN_TOKEN");
  });

  it("answers a bad points value with the CLI's message from the batch intake's worker threads", async () => {
    const contract = randomAddress();
    const operator = privateKeyToAccount(generatePrivateKey());
    await setOperator(server.url, server.env.ADMIN_TOKEN!, contract, operator.address);
    const token = await signIn(server.url, contract, operator);
    const response = await call(server.url, "PUT", `/v1/contracts/${contract}/batches/b-1`, token, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: randomAddress(), points: "-3" }],
    });
    expect(response.status).toBe(400);
    expect((response.body.error as { details: unknown }).details).toEqual([
      { path: "transfers[0].points", message: '"-3" is not a decimal points string (e.g. "12.5", up to 12 decimals)' },
    ]);
  });
});
