/**
 * The client installs alone (issue 30): `npm run pack:client` writes the client's package as a
 * tarball in the checkout; installed into an empty project with npm, offline and from an empty
 * cache (so nothing can come from a registry), it brings no dependency at all, hence no native
 * module and none of the server's; `import { PointsClient } from "@points-ledger/client"` works
 * there and talks to the real built server; its types check in a strict TypeScript project; and
 * `points-ledger/client` of the root package still resolves for existing users.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callOk,
  creditPoints,
  newAdminToken,
  pollUntil,
  randomAddress,
  signIn,
  sqliteUrl,
  startOperatedServer,
  startServerProcess,
  tempDir,
} from "./helpers/process.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE_NAME = "@points-ledger/client";
/** Packing builds the bundle and the declarations; generous for a busy 2-core machine. */
const PACK_TIMEOUT_MS = 180_000;
const NPM_TIMEOUT_MS = 120_000;
const NODE_TIMEOUT_MS = 60_000;
/** What a backend must not receive with the client: the server's dependencies and the libraries bundled into it. */
const SERVER_PACKAGES = ["better-sqlite3", "fastify", "pg", "@fastify/static", "pino", "viem", "js-sha3", "bindings"];

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Run {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: timeoutMs });
  return { status: result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}

function runOk(command: string, args: string[], cwd: string, timeoutMs: number, env?: NodeJS.ProcessEnv): Run {
  const result = run(command, args, cwd, timeoutMs, env);
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  }
  return result;
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/** The installed packages of node_modules: `name` or `@scope/name`, nested ones included. */
function installedPackages(nodeModules: string): string[] {
  return filesUnder(nodeModules)
    .filter((file) => file.endsWith("/package.json"))
    .map((file) => /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\/package\.json$/.exec(`node_modules/${file}`)?.[1])
    .filter((name): name is string => name !== undefined);
}

const rootVersion = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;
const tarball = join(REPO_ROOT, "dist-client", `points-ledger-client-${rootVersion}.tgz`);
let project: string;

beforeAll(
  () => {
    rmSync(tarball, { force: true });
    runOk("npm", ["run", "pack:client"], REPO_ROOT, PACK_TIMEOUT_MS);
    project = tempDir("client-package");
    runOk("npm", ["init", "-y"], project, NPM_TIMEOUT_MS);
    // Offline and with a cache of its own, empty: a dependency to fetch would fail the install.
    const cache = join(project, ".npm-cache");
    runOk("npm", ["install", "--offline", "--no-audit", "--no-fund", "--cache", cache, tarball], project, NPM_TIMEOUT_MS);
  },
  PACK_TIMEOUT_MS + 2 * NPM_TIMEOUT_MS,
);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe("npm run pack:client", () => {
  it("writes the client's tarball in the checkout, named after the package at the root's version", () => {
    expect(existsSync(tarball)).toBe(true);
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", PACKAGE_NAME, "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    expect(manifest.name).toBe(PACKAGE_NAME);
    expect(manifest.version).toBe(rootVersion);
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies ?? {}).toEqual({});
    expect(manifest.optionalDependencies ?? {}).toEqual({});
  });

  it("installs into an empty project offline, bringing nothing but itself: no native module, none of the server's dependencies", () => {
    const nodeModules = join(project, "node_modules");
    expect(installedPackages(nodeModules)).toEqual([PACKAGE_NAME]);
    for (const name of SERVER_PACKAGES) expect(existsSync(join(nodeModules, name)), name).toBe(false);
    const files = filesUnder(nodeModules);
    expect(files.filter((file) => file.endsWith(".node"))).toEqual([]);
    // The bundle imports nothing: every module it needs is inside it.
    const bundle = readFileSync(join(nodeModules, PACKAGE_NAME, "index.js"), "utf8");
    expect(bundle.match(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["'][^"']+["']/gm) ?? []).toEqual([]);
    expect(bundle).not.toMatch(/\brequire\(|\bimport\(/);
  });

  it("type-checks a strict TypeScript backend importing it (no skipLibCheck, no @types/node)", () => {
    writeFileSync(
      join(project, "backend.ts"),
      [
        `import { PointsClient, PointsApiError, type Balances, type BatchRequest } from "${PACKAGE_NAME}";`,
        `const client = new PointsClient({ baseUrl: "http://127.0.0.1:8080", contractAddress: "0x4300000000000000000000000000000000000004", apiKey: "plk_…" });`,
        `const request: BatchRequest = { pointType: "PHASE2_POINTS", transfers: [{ toAddress: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", points: "1" }] };`,
        `export const balances: Promise<Balances> = client.getBalances();`,
        `export const submitted = client.submitBatch("b-1", request).catch((error: unknown) => error instanceof PointsApiError ? error.code : null);`,
        "",
      ].join("\n"),
    );
    const tsconfig = {
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        lib: ["ES2022", "DOM"],
        types: [],
        noEmit: true,
      },
      files: ["backend.ts"],
    };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify(tsconfig));
    const tsc = run(process.execPath, [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], project, NODE_TIMEOUT_MS);
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  });

  it("imports PointsClient by its name in that project, signs in with an operator key and submits a batch to the built server", async () => {
    const operatorKey = generatePrivateKey();
    const contract = randomAddress();
    const recipient = randomAddress();
    const service = await startOperatedServer("client-package-server", {
      adminToken: newAdminToken(),
      operatorKey,
      contract,
      points: "100",
    });
    try {
      writeFileSync(
        join(project, "backend.mjs"),
        [
          `import { PointsClient } from "${PACKAGE_NAME}";`,
          "const { BASE_URL, CONTRACT, OPERATOR_PRIVATE_KEY, RECIPIENT } = process.env;",
          "const client = new PointsClient({ baseUrl: BASE_URL, contractAddress: CONTRACT, operator: OPERATOR_PRIVATE_KEY });",
          'const submitted = await client.submitBatch("packed-client-1", { pointType: "PHASE2_POINTS", secondsToFinalize: 3600, transfers: [{ toAddress: RECIPIENT, points: "12.5" }] });',
          'const batch = await client.getBatch("packed-client-1");',
          "const balances = await client.getBalances();",
          "console.log(JSON.stringify({ submitted, status: batch.status, points: batch.points, operator: client.operatorAddress, balance: balances.PHASE2_POINTS }));",
          "",
        ].join("\n"),
      );
      const env = {
        PATH: process.env.PATH ?? "",
        BASE_URL: service.server.url,
        CONTRACT: contract,
        OPERATOR_PRIVATE_KEY: operatorKey,
        RECIPIENT: recipient,
      };
      const output = JSON.parse(runOk(process.execPath, ["backend.mjs"], project, NODE_TIMEOUT_MS, env).stdout) as Record<string, unknown>;
      const operator = privateKeyToAccount(operatorKey);
      expect(output).toMatchObject({
        submitted: { batchId: "packed-client-1", created: true },
        status: "PENDING",
        points: "12.5",
        operator: operator.address,
        balance: { available: "87.5", pendingSent: "12.5", earnedCumulative: "100" },
      });
      // The service itself, asked without the package, holds the batch the package sent.
      const token = await signIn(service.server.url, contract, operator);
      const stored = await callOk(service.server.url, "GET", `/v1/contracts/${contract}/batches/packed-client-1`, token);
      expect(stored.batch).toMatchObject({ status: "PENDING", points: "12.5", transferCount: 1 });
    } finally {
      await service.stop();
    }
  });

  it("installs the witness with it: points-ledger-witness, run from that project, pins the log's key and proves the log only grew", async () => {
    const adminToken = newAdminToken();
    const server = await startServerProcess({ DATABASE_URL: sqliteUrl(tempDir("witness-server")), ADMIN_TOKEN: adminToken });
    try {
      const witness = join(project, "node_modules", ".bin", "points-ledger-witness");
      const env = { PATH: process.env.PATH ?? "" };
      const args = ["--url", server.url, "--state", "witness.json"];
      const first = runOk(witness, args, project, NODE_TIMEOUT_MS, env);
      expect(first.stdout).toMatch(/^pinned the log's key localhost\/points-ledger\+[0-9a-f]{8}\+/);
      const key = (await (await fetch(`${server.url}/v1/log/key`)).text()).trim();
      expect(JSON.parse(readFileSync(join(project, "witness.json"), "utf8"))).toMatchObject({ url: server.url, verifierKey: key });
      await creditPoints(server.url, adminToken, randomAddress(), "witnessed", "PHASE2_POINTS", "5");
      const grown = await pollUntil("a checkpoint holding the credit", 30_000, async () => {
        const run = runOk(witness, args, project, NODE_TIMEOUT_MS, env);
        return /has [1-9]\d* events and extends the saved checkpoint of \d+ events/.test(run.stdout) ? run.stdout : undefined;
      });
      expect(grown).toContain("ok: localhost/points-ledger");
      // A verdict is an exit code: a state pinned to another key fails it.
      writeFileSync(
        join(project, "other.json"),
        JSON.stringify({ url: server.url, verifierKey: key.replace(/\+[0-9a-f]{8}\+/, "+00000000+"), checkpoint: null }),
      );
      const refused = run(witness, ["--url", server.url, "--state", "other.json"], project, NODE_TIMEOUT_MS, env);
      expect(refused.status).not.toBe(0);
    } finally {
      await server.kill("SIGTERM");
    }
  });

  it("leaves points-ledger/client of the root package working for existing users", () => {
    const script = 'const m = await import("points-ledger/client"); console.log(typeof m.PointsClient, typeof m.planBatches);';
    const result = runOk(process.execPath, ["--input-type=module", "-e", script], REPO_ROOT, NODE_TIMEOUT_MS);
    expect(result.stdout.trim()).toBe("function function");
  });
});
