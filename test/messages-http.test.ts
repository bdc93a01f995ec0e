/**
 * Issue 18: the API's refusals read like the CLI's. A bad points value, batchId, address, webhook
 * URL, an empty or over-long transfers list and an oversized body get messages that quote the value
 * and say what is expected, on SQLite and PostgreSQL; and the client (the CLI's and the console's
 * checks) gives the same message as the server for the same bad value (one source:
 * src/domain/messages.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PointsInputError, PublicClient } from "../src/client/index.js";
import { mergeTransfers } from "../src/client/plan.js";
import { previewDistribution } from "../src/console/src/lib/upload.js";
import type { LedgerStore } from "../src/store/store.js";
import { buildAppOverStore, temporarySqliteStore, type StoreApp } from "./helpers/app-over-store.js";
import { addContract, breakChecksum, expectError, randomAddress, type OperatedContract, type TestResponse } from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const MAX_TRANSFERS = 5;
const BODY_LIMIT_BYTES = 4096;
const ENV = { MAX_TRANSFERS_PER_BATCH: String(MAX_TRANSFERS), BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES) };

interface Fixture {
  store: LedgerStore;
  databaseUrl: string;
  close(): Promise<void>;
}

function details(response: TestResponse): { path: string; message: string }[] {
  return expectError(response, 400, "VALIDATION_FAILED").details as { path: string; message: string }[];
}

function describeMessages(name: string, open: () => Promise<Fixture>, skip: boolean): void {
  describe.skipIf(skip)(`validation messages on ${name}`, () => {
    let fixture: Fixture;
    let app: StoreApp;
    let ledger: OperatedContract;
    const batchUrl = (batchId: string) => `/v1/contracts/${ledger.contract}/batches/${batchId}`;
    const putBatch = (transfers: unknown, batchId = "b-1") =>
      app.send({ method: "PUT", url: batchUrl(batchId), token: ledger.token, body: { pointType: "PHASE2_POINTS", transfers } });

    beforeAll(async () => {
      fixture = await open();
      app = await buildAppOverStore(fixture.store, fixture.databaseUrl, { env: ENV });
      ledger = await addContract(app, { PHASE2_POINTS: "1000" });
    });
    afterAll(async () => {
      await app?.close();
      await fixture?.close();
    });

    it("names a bad points value as the CLI does", async () => {
      const response = await putBatch([{ toAddress: randomAddress(), points: "-3" }]);
      expect(details(response)).toEqual([
        { path: "transfers[0].points", message: '"-3" is not a decimal points string (e.g. "12.5", up to 12 decimals)' },
      ]);
    });

    it("says a points value of the right form is too large, and quotes a JSON number as sent", async () => {
      const response = await putBatch([
        { toAddress: randomAddress(), points: "9999999999999999999" },
        { toAddress: randomAddress(), points: 12.5 },
      ]);
      // Schema findings come before the ledger rules' (parsePoints refuses the size).
      expect(details(response)).toEqual([
        { path: "transfers[1].points", message: '12.5 is not a decimal points string (e.g. "12.5", up to 12 decimals)' },
        { path: "transfers[0].points", message: '"9999999999999999999" is more than the largest amount, 10^18 points' },
      ]);
    });

    it("names a bad batchId with the characters allowed", async () => {
      const response = await putBatch([{ toAddress: randomAddress(), points: "1" }], "bad%20id!");
      expect(details(response)).toEqual([
        { path: "batchId", message: '"bad id!" is not a valid id (1 to 64 of A-Z a-z 0-9 . _ : -, and not "." or "..")' },
      ]);
    });

    it("names a malformed address and a broken checksum", async () => {
      const broken = breakChecksum(randomAddress());
      const response = await putBatch([
        { toAddress: "0x12", points: "1" },
        { toAddress: broken, points: "1" },
      ]);
      expect(details(response)).toEqual([
        { path: "transfers[0].toAddress", message: '"0x12" is not a valid address (0x + 40 hex, EIP-55 checksum if mixed case)' },
        {
          path: "transfers[1].toAddress",
          message: `"${broken}" is not a valid address: its mixed case is not the EIP-55 checksum (write it all lowercase, or checksummed)`,
        },
      ]);
    });

    it("names a bad address in a body field and in a path parameter", async () => {
      const challenge = await app.send({
        method: "POST",
        url: "/v1/dapp-auth/challenge",
        body: { contractAddress: "0xnope", operatorAddress: ledger.operatorAccount.address },
      });
      expect(details(challenge)).toEqual([
        { path: "contractAddress", message: '"0xnope" is not a valid address (0x + 40 hex, EIP-55 checksum if mixed case)' },
      ]);
      // The client refuses it before sending, with the same detail.
      const client = new PublicClient({ baseUrl: "http://127.0.0.1:9" });
      const refusal = await client.requestChallenge("0xnope", ledger.operatorAccount.address).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(PointsInputError);
      expect((refusal as PointsInputError).details).toEqual(details(challenge));
      const proof = await app.send({ method: "GET", url: "/v1/snapshots/s-1/proofs/0xnope", token: app.adminToken });
      expect(details(proof)).toEqual([
        { path: "address", message: '"0xnope" is not a valid address (0x + 40 hex, EIP-55 checksum if mixed case)' },
      ]);
    });

    it("names a bad webhook URL", async () => {
      const response = await app.send({
        method: "POST",
        url: `/v1/contracts/${ledger.contract}/webhook-endpoints`,
        token: ledger.token,
        body: { url: "ftp://example.com/hook" },
      });
      expect(details(response)).toEqual([
        {
          path: "url",
          message: '"ftp://example.com/hook" is not an http:// or https:// URL (printable ASCII without spaces, up to 2048 characters)',
        },
      ]);
    });

    it("names a bad time and a bad cursor in a query", async () => {
      const response = await app.send({
        method: "GET",
        url: `/v1/contracts/${ledger.contract}/batches?createdBefore=2026-01-31&cursor=${"%24".repeat(3)}`,
        token: ledger.token,
      });
      expect(details(response)).toEqual([
        {
          path: "createdBefore",
          message: '"2026-01-31" is not an ISO 8601 UTC time (e.g. "2026-01-31T12:00:00Z", optionally with .123 milliseconds)',
        },
        { path: "cursor", message: '"$$$" is not a cursor returned by this service (pass back the previous page\'s `cursor` as it is)' },
      ]);
    });

    it("asks for at least 1 transfer, and names the count past MAX_TRANSFERS_PER_BATCH", async () => {
      expect(details(await putBatch([]))).toEqual([{ path: "transfers", message: "must hold at least 1 transfer" }]);
      const tooMany = Array.from({ length: MAX_TRANSFERS + 2 }, () => ({ toAddress: randomAddress(), points: "1" }));
      expect(details(await putBatch(tooMany))).toEqual([
        { path: "transfers", message: `holds ${MAX_TRANSFERS + 2} transfers, more than ${MAX_TRANSFERS} (MAX_TRANSFERS_PER_BATCH)` },
      ]);
    });

    it("names the body limit in bytes in a 413", async () => {
      const transfers = Array.from({ length: 200 }, () => ({ toAddress: randomAddress(), points: "1" }));
      const error = expectError(await putBatch(transfers), 413, "PAYLOAD_TOO_LARGE");
      expect(error.message).toBe(`request body exceeds the size limit of ${BODY_LIMIT_BYTES} bytes (BODY_LIMIT_BYTES)`);
      const credit = await app.send({
        method: "PUT",
        url: `/v1/admin/contracts/${randomAddress()}/credits/c-1`,
        token: app.adminToken,
        body: { pointType: "PHASE2_POINTS", points: "1", pad: "x".repeat(BODY_LIMIT_BYTES) },
      });
      expect(expectError(credit, 413, "PAYLOAD_TOO_LARGE").message).toBe(
        `request body exceeds the size limit of ${BODY_LIMIT_BYTES} bytes (BODY_LIMIT_BYTES)`,
      );
    });

    it("gives the message the client and the console give for the same bad transfer", async () => {
      const contract = ledger.contract;
      const cases = [
        { toAddress: randomAddress(), points: "-3", field: "points" },
        { toAddress: randomAddress(), points: "1.0000000000001", field: "points" },
        { toAddress: randomAddress(), points: "1e3", field: "points" },
        { toAddress: randomAddress(), points: "9999999999999999999", field: "points" },
        { toAddress: "0x12", points: "1", field: "toAddress" },
        { toAddress: breakChecksum(randomAddress()), points: "1", field: "toAddress" },
        { toAddress: `0x${"g".repeat(40)}`, points: "1", field: "toAddress" },
        { toAddress: "0x0000000000000000000000000000000000000000", points: "1", field: "toAddress" },
        { toAddress: contract.toLowerCase(), points: "1", field: "toAddress" },
      ];
      for (const { toAddress, points, field } of cases) {
        const server = details(await putBatch([{ toAddress, points }]));
        expect(server).toHaveLength(1);
        expect(server[0]!.path).toBe(`transfers[0].${field}`);
        const client = mergeTransfers([{ toAddress, points }], { contractAddress: contract });
        expect(client.errors).toEqual([{ index: 0, message: `${field} ${server[0]!.message}` }]);
        const console = previewDistribution({
          text: `address,points\n${toAddress},${points}`,
          parameters: {
            MINIMUM_FINALIZE_SECONDS: 1,
            DEFAULT_FINALIZE_SECONDS: 60,
            MAX_TRANSFERS_PER_BATCH: MAX_TRANSFERS,
            MAX_TRANSFER_DECIMALS: 12,
            POINT_TYPES: ["PHASE2_POINTS"],
            MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: "0.000000000001",
            BATCH_ID_MAX_LENGTH: 64,
            BEARER_TOKEN_TTL_SECONDS: 3600,
            CHALLENGE_TTL_SECONDS: 300,
          },
          pointType: "PHASE2_POINTS",
          contractAddress: contract,
          availablePoints: "1000",
          runId: "run-1",
        });
        expect(console.badLines).toEqual([{ line: 2, reason: `${field} ${server[0]!.message}` }]);
      }
    });
  });
}

describeMessages(
  "SQLite",
  async () => {
    const sqlite = temporarySqliteStore();
    return { store: sqlite.store, databaseUrl: sqlite.databaseUrl, close: sqlite.remove };
  },
  false,
);

describeMessages(
  "PostgreSQL",
  async () => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    return { store: schema.openStore(), databaseUrl: schema.connectionString, close: () => schema.drop() };
  },
  !DATABASE_URL_TEST,
);
