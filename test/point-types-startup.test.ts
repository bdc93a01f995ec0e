/**
 * Dropping a point type the database still holds stops start-up with a message naming it: the
 * real server process (`serve`) and the CLI commands that open the store, on SQLite and on
 * PostgreSQL (skipped without DATABASE_URL_TEST).
 */
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import { callOk, newAdminToken, randomAddress, runCli, sqliteUrl, startServerProcess, tempDir, type Env } from "./helpers/process.js";

const GEN1_TYPES = "PHASE2_POINTS,PHASE2_GOLD,LIQUIDITY,DEVELOPER";
/** A refusing `serve` exits at once; a server that wrongly starts is stopped by this bound. */
const REFUSAL_TIMEOUT_MS = 15_000;

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

interface Backend {
  name: string;
  /** DATABASE_URL of a fresh, empty database. */
  databaseUrl(): Promise<string>;
}

const backends: Backend[] = [
  {
    name: "SQLite",
    databaseUrl: async () => {
      const dir = tempDir("points-ledger-types-");
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      return sqliteUrl(dir);
    },
  },
  {
    name: "PostgreSQL",
    databaseUrl: async () => {
      const schema = await createTestSchema(DATABASE_URL_TEST!);
      cleanups.push(() => schema.drop());
      return schema.connectionString;
    },
  },
];

for (const backend of backends) {
  const skip = backend.name === "PostgreSQL" && !DATABASE_URL_TEST;
  describe.skipIf(skip)(`start-up checks POINT_TYPES against the ${backend.name} database${skip ? ` (${SKIP_REASON})` : ""}`, () => {
    it("serve and migrate refuse to drop LIQUIDITY once it holds credits, naming it; with it configured they run", async () => {
      const env: Env = { DATABASE_URL: await backend.databaseUrl(), LOG_LEVEL: "warn" };
      const gen1: Env = { ...env, POINT_TYPES: GEN1_TYPES };
      expect((await runCli(["credit", randomAddress(), "LIQUIDITY", "5"], gen1)).code).toBe(0);

      const serve = await runCli(["serve"], { ...env, PORT: "0" }, REFUSAL_TIMEOUT_MS);
      expect(serve.code, serve.stderr).toBe(2);
      expect(serve.stderr).toContain("POINT_TYPES");
      expect(serve.stderr).toContain("LIQUIDITY");
      expect(serve.stderr).not.toContain("DEVELOPER");

      const migrate = await runCli(["migrate"], { ...env, POINT_TYPES: "PHASE2_POINTS,DEVELOPER" });
      expect(migrate.code, migrate.stderr).toBe(2);
      expect(migrate.stderr).toMatch(/POINT_TYPES.*LIQUIDITY/);

      expect((await runCli(["migrate"], gen1)).code).toBe(0);
      // Types are names, not positions: another order, or more types, still holds LIQUIDITY.
      expect((await runCli(["migrate"], { ...env, POINT_TYPES: "LIQUIDITY,XP" })).code).toBe(0);
    });

    it("the server process refuses to drop a type credited through its own admin API, and starts once it is configured again", async () => {
      const adminToken = newAdminToken();
      const env: Env = { DATABASE_URL: await backend.databaseUrl(), ADMIN_TOKEN: adminToken, MINIMUM_FINALIZE_SECONDS: "1" };
      const server = await startServerProcess({ ...env, POINT_TYPES: "XP,GEMS" });
      try {
        const contract = randomAddress();
        await callOk(server.url, "PUT", `/v1/admin/contracts/${contract}/credits/c-1`, adminToken, { pointType: "GEMS", points: "3" });
        const parameters = await callOk(server.url, "GET", "/v1/parameters", null);
        expect((parameters.parameters as { POINT_TYPES: string[] }).POINT_TYPES).toEqual(["XP", "GEMS"]);
      } finally {
        expect((await server.kill("SIGTERM")).code).toBe(0);
      }
      const refused = await runCli(["serve"], { ...env, PORT: "0", POINT_TYPES: "XP" }, REFUSAL_TIMEOUT_MS);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain("GEMS");
      const restarted = await startServerProcess({ ...env, POINT_TYPES: "GEMS,XP" });
      expect((await restarted.kill("SIGTERM")).code).toBe(0);
    });

    it("the local credit command checks its point type against POINT_TYPES", async () => {
      const env: Env = { DATABASE_URL: await backend.databaseUrl(), POINT_TYPES: "XP,GEMS" };
      const refused = await runCli(["credit", randomAddress(), "PHASE2_POINTS", "1"], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("pointType must be one of XP, GEMS");
      const withAsset = await runCli(["credit", randomAddress(), "XP", "1", "--asset", "ETH", "--block", "42"], env);
      expect(withAsset.code, withAsset.stderr).toBe(0);
      expect((await runCli(["credit", randomAddress(), "XP", "1", "--asset", "eth"], env)).code).toBe(2);
      expect((await runCli(["credit", randomAddress(), "XP", "1", "--block=-3"], env)).code).toBe(2);
    });
  });
}
