/**
 * The drop-in test of issue 9: a client written the way axios/fetch-based Blast Points API
 * clients are (one fetch wrapper that sends `Content-Type: application/json` on EVERY request,
 * GET and DELETE included; balances read by key, `byAsset` included; first-generation point
 * types LIQUIDITY and DEVELOPER), run against the real server process on SQLite and PostgreSQL:
 * sign-in (challenge, viem signMessage, solve), submit (PUT), list, get, cancel and finalization.
 */
import { rmSync } from "node:fs";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";
import { newAdminToken, pollUntil, sqliteUrl, startServerProcess, tempDir, type ServerProcess } from "./helpers/process.js";

/** Finalization waits ≥ 1 s (MINIMUM_FINALIZE_SECONDS=1); polling gives up after this. */
const FINALIZE_DEADLINE_MS = 15_000;

interface BlastBalance {
  available: string;
  pendingSent: string;
  earnedCumulative: string;
  receivedCumulative: string;
  finalizedSentCumulative: string;
  /** Typed as the Blast client types it: the four assets it reads are always there. */
  byAsset: Record<"ETH" | "WETH" | "USDB" | "BLAST", { earnedCumulative: string; earnedCumulativeBlock: number }>;
}

interface BlastBatch {
  id: string;
  pointType: string;
  status: string;
  points: string;
  transferCount: number;
}

class BlastApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`Blast API ${status}: ${JSON.stringify(body)}`);
  }
}

/**
 * The wrapper such clients share: fixed JSON headers on every call, a body only when there is
 * one, and a thrown error for any non-2xx answer.
 */
function blastApi(baseUrl: string) {
  let bearerToken: string | null = null;
  const request = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        ...(bearerToken === null ? {} : { Authorization: `Bearer ${bearerToken}` }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as T & { success: boolean };
    if (!response.ok || json.success !== true) throw new BlastApiError(response.status, json);
    return json;
  };
  return {
    setToken: (token: string | null) => void (bearerToken = token),
    get: <T>(path: string) => request<T>("GET", path),
    put: <T>(path: string, body: unknown) => request<T>("PUT", path, body),
    post: <T>(path: string, body: unknown) => request<T>("POST", path, body),
    delete: <T>(path: string) => request<T>("DELETE", path),
  };
}

interface Backend {
  name: string;
  databaseUrl(): Promise<string>;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const backends: Backend[] = [
  {
    name: "SQLite",
    databaseUrl: async () => {
      const dir = tempDir("points-ledger-blast-");
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

async function startGen1Server(backend: Backend, adminToken: string): Promise<ServerProcess> {
  const server = await startServerProcess({
    DATABASE_URL: await backend.databaseUrl(),
    ADMIN_TOKEN: adminToken,
    POINT_TYPES: "PHASE2_POINTS,PHASE2_GOLD,LIQUIDITY,DEVELOPER",
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
  });
  cleanups.push(async () => void (await server.kill("SIGTERM")));
  return server;
}

for (const backend of backends) {
  const skip = backend.name === "PostgreSQL" && !DATABASE_URL_TEST;
  describe.skipIf(skip)(
    `a fetch-based Blast client against the server process on ${backend.name}${skip ? ` (${SKIP_REASON})` : ""}`,
    () => {
      it("signs in, submits, lists, reads, cancels and sees its batch finalize, reading balances by key", async () => {
        const adminToken = newAdminToken();
        const server = await startGen1Server(backend, adminToken);
        const operator = privateKeyToAccount(generatePrivateKey());
        const contract = privateKeyToAccount(generatePrivateKey()).address;
        const recipients = [1, 2].map(() => privateKeyToAccount(generatePrivateKey()).address);

        // The administrator's side, through the same wrapper.
        const admin = blastApi(server.url);
        admin.setToken(adminToken);
        await admin.put(`/admin/contracts/${contract}/operator`, { operatorAddress: operator.address });
        await admin.put(`/admin/contracts/${contract}/credits/liq-eth`, {
          pointType: "LIQUIDITY",
          points: "100",
          asset: "ETH",
          block: 1_234_567,
        });
        await admin.put(`/admin/contracts/${contract}/credits/liq-usdb`, {
          pointType: "LIQUIDITY",
          points: "20.5",
          asset: "USDB",
          block: 1_234_000,
        });
        await admin.put(`/admin/contracts/${contract}/credits/dev`, { pointType: "DEVELOPER", points: "7" });

        // Sign-in: challenge, personal_sign, solve.
        const api = blastApi(server.url);
        const { challengeData, message } = await api.post<{ challengeData: string; message: string }>("/dapp-auth/challenge", {
          contractAddress: contract,
          operatorAddress: operator.address,
        });
        const signature = await operator.signMessage({ message });
        const { bearerToken } = await api.post<{ bearerToken: string }>("/dapp-auth/solve", { challengeData, signature });
        api.setToken(bearerToken);

        // Balances read by key, as the Phase-2 client does.
        type Balances = { balancesByPointType: Record<"LIQUIDITY" | "DEVELOPER" | "PHASE2_POINTS" | "PHASE2_GOLD", BlastBalance> };
        const before = (await api.get<Balances>(`/contracts/${contract}/point-balances`)).balancesByPointType;
        expect(before.LIQUIDITY.available).toBe("120.5");
        expect(before.LIQUIDITY.byAsset.ETH.earnedCumulative).toBe("100");
        expect(before.LIQUIDITY.byAsset.ETH.earnedCumulativeBlock).toBe(1_234_567);
        expect(before.LIQUIDITY.byAsset.USDB.earnedCumulative).toBe("20.5");
        expect(before.LIQUIDITY.byAsset.BLAST.earnedCumulative).toBe("0");
        expect(before.DEVELOPER.available).toBe("7");
        expect(before.DEVELOPER.byAsset.WETH.earnedCumulativeBlock).toBe(0);
        expect(before.PHASE2_POINTS.available).toBe("0");

        // Submit two batches: one to finalize, one to cancel.
        await api.put(`/contracts/${contract}/batches/pay-1`, {
          pointType: "LIQUIDITY",
          transfers: [
            { toAddress: recipients[0], points: "10.25" },
            { toAddress: recipients[1], points: "0.75" },
          ],
          secondsToFinalize: 1,
        });
        await api.put(`/contracts/${contract}/batches/pay-2`, {
          pointType: "DEVELOPER",
          transfers: [{ toAddress: recipients[0], points: "2" }],
          secondsToFinalize: 3600,
        });

        const { batches } = await api.get<{ batches: BlastBatch[] }>(`/contracts/${contract}/batches?sort=ASC`);
        expect(batches.map((b) => [b.id, b.pointType, b.points])).toEqual([
          ["pay-1", "LIQUIDITY", "11"],
          ["pay-2", "DEVELOPER", "2"],
        ]);
        const { batch: second } = await api.get<{ batch: BlastBatch & { transfers: unknown[] } }>(`/contracts/${contract}/batches/pay-2`);
        expect(second).toMatchObject({ id: "pay-2", status: "PENDING", transferCount: 1 });

        // Cancel: DELETE with the JSON content type and no body.
        const cancelled = await api.delete<{ batch: BlastBatch }>(`/contracts/${contract}/batches/pay-2`);
        expect(cancelled.batch.status).toBe("CANCELLED");

        // Finalization: poll the batch status, bounded.
        const finalized = await pollUntil("pay-1 to finalize", FINALIZE_DEADLINE_MS, async () => {
          const { batch } = await api.get<{ batch: BlastBatch }>(`/contracts/${contract}/batches/pay-1`);
          return batch.status === "FINALIZED" ? batch : undefined;
        });
        expect(finalized.points).toBe("11");

        const after = (await api.get<Balances>(`/contracts/${contract}/point-balances`)).balancesByPointType;
        expect(after.LIQUIDITY).toMatchObject({ available: "109.5", pendingSent: "0", finalizedSentCumulative: "11" });
        expect(after.LIQUIDITY.byAsset.ETH.earnedCumulative).toBe("100");
        expect(after.DEVELOPER).toMatchObject({ available: "7", pendingSent: "0", finalizedSentCumulative: "0" });

        // A token-less GET with the JSON header is served too; an unknown type is a clear 400.
        expect((await blastApi(server.url).get<{ parameters: { POINT_TYPES: string[] } }>("/parameters")).parameters.POINT_TYPES).toContain(
          "LIQUIDITY",
        );
        const refused = await api
          .put(`/contracts/${contract}/batches/pay-3`, { pointType: "XP", transfers: [{ toAddress: recipients[0], points: "1" }] })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(BlastApiError);
        expect((refused as BlastApiError).status).toBe(400);
        expect(JSON.stringify((refused as BlastApiError).body)).toContain("pointType");
      });
    },
  );
}
