import { randomUUID } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsApiError, PointsClient } from "../src/client/index.js";
import { newAdminToken, randomAddress, runCli, startOperatedServer, type ServerProcess } from "./helpers/process.js";

/**
 * API keys from the client and the CLI (issue 21), against a real server process: the operator
 * manages keys with `client.apiKeys` and `points-ledger api-keys`; a backend then works with
 * `new PointsClient({ apiKey })` or POINTS_LEDGER_API_KEY, within the key's scopes only.
 */

let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;
const adminToken = newAdminToken();
const operatorKey = generatePrivateKey();
const contract = randomAddress();

beforeAll(async () => {
  ({ server, stop } = await startOperatedServer("points-ledger-api-keys-", { adminToken, operatorKey, contract, points: "100" }));
});

afterAll(async () => {
  await stop?.();
});

describe("PointsClient with an API key", () => {
  it("the operator creates, lists, reads and revokes keys; a key submits within its scopes and nothing else", async () => {
    const operator = new PointsClient({ baseUrl: server.url, contractAddress: contract, operator: operatorKey });
    const { apiKey, secret } = await operator.apiKeys.create({ name: "nightly job", scopes: ["submit", "read"] });
    expect(secret).toMatch(/^plk_/);
    expect(apiKey.createdBy).toEqual({ type: "operator", address: privateKeyToAccount(operatorKey).address });
    expect((await operator.apiKeys.list()).map((key) => key.id)).toContain(apiKey.id);
    expect(await operator.apiKeys.get(apiKey.id)).toEqual(apiKey);

    const backend = new PointsClient({ baseUrl: server.url, contractAddress: contract, apiKey: secret });
    const batchId = randomUUID();
    const submitted = await backend.submitBatch(batchId, {
      pointType: "PHASE2_POINTS",
      transfers: [{ toAddress: randomAddress(), points: "1" }],
    });
    expect(submitted.created).toBe(true);
    expect((await backend.getBatch(batchId)).status).toBe("PENDING");
    const cancel = await backend.cancelBatch(batchId).catch((error: unknown) => error);
    expect(PointsApiError.is(cancel, "FORBIDDEN") && cancel.details).toEqual({ requiredScope: "cancel" });
    const manage = await backend.apiKeys.list().catch((error: unknown) => error);
    expect(PointsApiError.is(manage, "FORBIDDEN")).toBe(true);

    const revoked = await operator.apiKeys.revoke(apiKey.id);
    expect(revoked.revokedReason).toBe("revoked");
    const refused = await backend.getBalances().catch((error: unknown) => error);
    expect(PointsApiError.is(refused, "UNAUTHORIZED")).toBe(true);
  });
});

describe("points-ledger api-keys", () => {
  it("create prints the secret alone on stdout; other commands take it from POINTS_LEDGER_API_KEY; list and revoke", async () => {
    const operatorEnv = { OPERATOR_PRIVATE_KEY: operatorKey, POINTS_LEDGER_URL: server.url };
    const created = await runCli(["api-keys", "create", "--contract", contract, "--name", "reports", "--scopes", "read"], operatorEnv);
    expect(created.stderr).toContain("shown only now");
    expect(created.code).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^plk_[A-Za-z0-9_-]{49}$/);

    const keyEnv = { POINTS_LEDGER_API_KEY: secret, POINTS_LEDGER_URL: server.url };
    const balances = await runCli(["balances", "--contract", contract], keyEnv);
    expect(balances.stderr).toBe("");
    expect(balances.code).toBe(0);
    expect(balances.stdout).toContain("PHASE2_POINTS");

    const list = await runCli(["api-keys", "list", "--contract", contract, "--json"], operatorEnv);
    expect(list.code).toBe(0);
    const listed = list.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: string; name: string; prefix: string });
    const key = listed.find((entry) => entry.name === "reports")!;
    expect(key.prefix).toBe(secret.slice(0, 12));
    expect(list.stdout).not.toContain(secret);

    const revoke = await runCli(["api-keys", "revoke", key.id, "--contract", contract], operatorEnv);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toContain("revoked");
    const after = await runCli(["balances", "--contract", contract], keyEnv);
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/^points-ledger: UNAUTHORIZED \(HTTP 401\)/);
  });

  it("refuses an action it does not know with its usage, exit 2", async () => {
    const result = await runCli(["api-keys", "rotate", "--contract", contract], { OPERATOR_PRIVATE_KEY: operatorKey });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("api-keys create --name");
  });
});
