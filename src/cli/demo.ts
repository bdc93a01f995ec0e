import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { loadConfig } from "../config.js";
import { parseAddress } from "../domain/address.js";
import { formatPoints } from "../domain/points.js";
import { startServer } from "../server.js";
import { availableOf } from "../store/store.js";

/** Seconds the demo's batches wait before they finalize. */
const DEMO_FINALIZE_SECONDS = 2;

async function call(base: string, method: string, path: string, token: string | null, body?: unknown) {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  console.log(`  ${method} ${path} → ${response.status}`);
  if (!response.ok) throw new Error(`demo step failed: ${JSON.stringify(json)}`);
  return json;
}

/**
 * The whole flow on a temporary database: operator key, registration, credit, sign-in, a batch
 * that finalizes, a batch that is cancelled, balances before and after.
 */
export async function runDemo(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-demo-"));
  const adminToken = randomBytes(24).toString("base64url");
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "demo.db")}`,
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "100",
    LOG_LEVEL: "warn",
    // The demo's client shares the server's event loop (key generation, signing): its own work
    // is not load to shed, and a 503 here would only end the demo (seen on a busy CI machine).
    MAX_EVENT_LOOP_DELAY_MS: "0",
  });
  const server = await startServer(config);
  // The demo moves the first configured point type (PHASE2_POINTS by default).
  const pointType = config.pointTypes[0]!;
  try {
    const base = server.url;
    const operator = privateKeyToAccount(generatePrivateKey());
    const contract = privateKeyToAccount(generatePrivateKey()).address;
    const recipients = [1, 2, 3].map(() => privateKeyToAccount(generatePrivateKey()).address);
    console.log(`server ${base}\ncontract ${contract}\noperator ${operator.address} (fresh key)\n`);

    console.log("1. an administrator registers the operator and credits 1000 points");
    await call(base, "PUT", `/v1/admin/contracts/${contract}/operator`, adminToken, { operatorAddress: operator.address });
    await call(base, "PUT", `/v1/admin/contracts/${contract}/credits/demo-credit-1`, adminToken, { pointType, points: "1000" });

    console.log("2. the operator signs a challenge and gets a bearer token");
    const challenge = await call(base, "POST", "/v1/dapp-auth/challenge", null, {
      contractAddress: contract,
      operatorAddress: operator.address,
    });
    const signature = await operator.signMessage({ message: String(challenge.message) });
    const solved = await call(base, "POST", "/v1/dapp-auth/solve", null, { challengeData: challenge.challengeData, signature });
    const token = String(solved.bearerToken);

    console.log(`3. two batches: one finalizes after ${DEMO_FINALIZE_SECONDS}s, the other is cancelled`);
    const transfers = recipients.map((toAddress, i) => ({ toAddress, points: ["100", "25.5", "0.125"][i]! }));
    await call(base, "PUT", `/v1/contracts/${contract}/batches/demo-batch-1`, token, {
      pointType,
      transfers,
      secondsToFinalize: DEMO_FINALIZE_SECONDS,
    });
    await call(base, "PUT", `/v1/contracts/${contract}/batches/demo-batch-2`, token, {
      pointType,
      transfers: [{ toAddress: recipients[0], points: "500" }],
      secondsToFinalize: DEMO_FINALIZE_SECONDS,
    });
    const pending = await call(base, "GET", `/v1/contracts/${contract}/point-balances`, token);
    console.log("   balances while pending:", JSON.stringify((pending.balancesByPointType as Record<string, unknown>)[pointType]));
    await call(base, "DELETE", `/v1/contracts/${contract}/batches/demo-batch-2`, token);

    console.log("4. waiting for the finalizer");
    for (;;) {
      const { batch } = (await call(base, "GET", `/v1/contracts/${contract}/batches/demo-batch-1`, token)) as { batch: { status: string } };
      if (batch.status === "FINALIZED") break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const after = await call(base, "GET", `/v1/contracts/${contract}/point-balances`, token);
    console.log(`\n5. final balances (${pointType})`);
    console.log(`   contract ${contract}: ${JSON.stringify((after.balancesByPointType as Record<string, unknown>)[pointType])}`);
    for (const recipient of recipients) {
      const balances = await server.store.getBalances(parseAddress(recipient)!, [pointType]);
      console.log(`   recipient ${recipient}: available ${formatPoints(availableOf(balances[pointType]!))}`);
    }
    const violations = await server.store.verify();
    console.log(`\nledger invariants: ${violations.length === 0 ? "all hold" : JSON.stringify(violations)}`);
    return violations.length === 0 ? 0 : 1;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
