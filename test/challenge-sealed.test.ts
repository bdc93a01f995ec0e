/**
 * Sign-in challenges that carry themselves (issue 19 item 1; src/auth/challenge-data.ts): issuing
 * one stores nothing, so no stranger can evict an operator's pending challenge, and a challenge
 * stays single-use across instances on one database. Also the `Cache-Control: no-store` of the
 * answers that carry a challenge or a token (item 12). On SQLite and, with DATABASE_URL_TEST, on
 * PostgreSQL, each through the real app.
 */
import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sealChallenge } from "../src/auth/challenge-data.js";
import { ManualClock } from "../src/clock.js";
import { loadConfig } from "../src/config.js";
import type { AddressKey } from "../src/domain/address.js";
import { buildApp } from "../src/http/app.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import type { LedgerStore } from "../src/store/store.js";
import {
  TEST_ENV,
  addContract,
  createTestApp,
  expectError,
  injectSender,
  newAccount,
  randomAddress,
  registerOperator,
  requestChallenge,
  type Send,
  type TestResponse,
} from "./helpers/http.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

const T0_MS = Date.UTC(2026, 10, 25, 12);
/** TEST_ENV's CHALLENGE_TTL_SECONDS. */
const CHALLENGE_TTL_MS = 60_000;
const STRANGER_CHALLENGES = 1000;

/** One database and the app instances started over it, each with its own store (its own connections). */
interface Deployment {
  adminToken: string;
  startInstance(clock?: ManualClock): Promise<Send>;
  /** Rows in every table of the database. */
  totalRows(): Promise<number>;
  remove(): Promise<void>;
}

async function deploymentOver(
  databaseUrl: string,
  openStore: () => LedgerStore,
  totalRows: () => Promise<number>,
  removeDatabase: () => Promise<void>,
): Promise<Deployment> {
  const adminToken = `admin-${randomBytes(16).toString("hex")}`;
  const config = loadConfig({ ...TEST_ENV, ADMIN_TOKEN: adminToken, DATABASE_URL: databaseUrl });
  const closeApps: (() => Promise<void>)[] = [];
  return {
    adminToken,
    startInstance: async (clock = new ManualClock(T0_MS)) => {
      const store = openStore();
      await store.migrate();
      const app = await buildApp({ config, store, clock, logger: false });
      closeApps.push(() => app.close());
      return injectSender(app);
    },
    totalRows,
    remove: async () => {
      await Promise.all(closeApps.map((close) => close()));
      await removeDatabase();
    },
  };
}

async function sqliteDeployment(): Promise<Deployment> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-challenge-"));
  const path = join(dir, "ledger.db");
  const stores: LedgerStore[] = [];
  return deploymentOver(
    `sqlite:${path}`,
    () => {
      const store = createSqliteStore({ path, synchronous: "NORMAL" });
      stores.push(store);
      return store;
    },
    async () => {
      const db = new Database(path, { readonly: true, fileMustExist: true });
      try {
        const tables = db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
          .pluck()
          .all() as string[];
        return tables.reduce((sum, table) => sum + (db.prepare(`SELECT count(*) FROM "${table}"`).pluck().get() as number), 0);
      } finally {
        db.close();
      }
    },
    async () => {
      await Promise.all(stores.map((store) => store.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  );
}

async function postgresDeployment(): Promise<Deployment> {
  const schema = await createTestSchema(DATABASE_URL_TEST!);
  return deploymentOver(
    schema.connectionString,
    () => schema.openStore(),
    async () => {
      const tables = await schema.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
      );
      let sum = 0;
      for (const { table_name } of tables)
        sum += Number((await schema.query<{ n: string }>(`SELECT count(*) AS n FROM "${table_name}"`))[0]!.n);
      return sum;
    },
    () => schema.drop(),
  );
}

function solve(send: Send, challengeData: string, signature: string): Promise<TestResponse> {
  return send({ method: "POST", url: "/v1/dapp-auth/solve", body: { challengeData, signature } });
}

/** A contract whose operator is a fresh key, registered through the admin API of `send`. */
async function operatedContract(deployment: Deployment, send: Send) {
  const operator = newAccount();
  const contract = randomAddress();
  await registerOperator(send, deployment.adminToken, contract, operator.address);
  /** The operator's own sign-in, split where a stranger may act: challenge and signature, then solve. */
  const signedChallenge = async (via: Send = send) => {
    const challenge = await requestChallenge(via, contract, operator.address);
    return { ...challenge, signature: await operator.signMessage({ message: challenge.message }) };
  };
  return { operator, contract, signedChallenge };
}

const databases = [
  { label: "SQLite", open: sqliteDeployment, skip: false },
  { label: "PostgreSQL", open: postgresDeployment, skip: !DATABASE_URL_TEST },
];

describe.each(databases)("sealed sign-in challenges on $label", ({ open, skip }) => {
  const deployments: Deployment[] = [];
  const deployment = async () => {
    const opened = await open();
    deployments.push(opened);
    return opened;
  };
  afterAll(async () => {
    await Promise.all(deployments.map((opened) => opened.remove()));
  });

  it.skipIf(skip)(
    `stores no row for a stranger's ${STRANGER_CHALLENGES} challenges, and the operator's pending challenge still solves`,
    async () => {
      const db = await deployment();
      const send = await db.startInstance();
      const { contract, operator, signedChallenge } = await operatedContract(db, send);
      const pending = await signedChallenge();
      const rowsBefore = await db.totalRows();
      for (let i = 0; i < STRANGER_CHALLENGES; i++) await requestChallenge(send, contract, operator.address);
      expect(await db.totalRows()).toBe(rowsBefore);
      expect((await solve(send, pending.challengeData, pending.signature)).status).toBe(200);
    },
    60_000,
  );

  it.skipIf(skip)(
    "signs in 5 of 5 times when each signing takes 3.5 s while a stranger asks for 5 challenges a second (before: 0 of 5)",
    async () => {
      const db = await deployment();
      const clock = new ManualClock(T0_MS);
      const send = await db.startInstance(clock);
      const { contract, operator, signedChallenge } = await operatedContract(db, send);
      let signedIn = 0;
      for (let attempt = 0; attempt < 5; attempt++) {
        const pending = await signedChallenge();
        // 3.5 s of signing, a stranger's challenge every 200 ms.
        for (let elapsedMs = 0; elapsedMs < 3500; elapsedMs += 200) {
          clock.advance(200);
          await requestChallenge(send, contract, operator.address);
        }
        if ((await solve(send, pending.challengeData, pending.signature)).status === 200) signedIn++;
      }
      console.log(`operator sign-ins that succeeded beside a stranger's 5 challenges/s: ${signedIn}/5`);
      expect(signedIn).toBe(5);
    },
  );

  it.skipIf(skip)(
    "answers one of 10 concurrent solves of one challenge, spread over two instances, with a token and the rest 401",
    async () => {
      const db = await deployment();
      const [first, second] = [await db.startInstance(), await db.startInstance()];
      const { signedChallenge } = await operatedContract(db, first);
      const pending = await signedChallenge();
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => solve(i % 2 ? second : first, pending.challengeData, pending.signature)),
      );
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      for (const answer of answers.filter((answer) => answer.status !== 200)) expectError(answer, 401, "UNAUTHORIZED");
    },
  );

  it.skipIf(skip)("shares one challenge key between instances that start together on an empty database", async () => {
    const db = await deployment();
    const [first, second] = await Promise.all([db.startInstance(), db.startInstance()]);
    // Registering goes through one instance; the key is first needed by both challenges at once.
    const { signedChallenge } = await operatedContract(db, first);
    const [fromFirst, fromSecond] = await Promise.all([signedChallenge(first), signedChallenge(second)]);
    expect((await solve(second, fromFirst.challengeData, fromFirst.signature)).status).toBe(200);
    expect((await solve(first, fromSecond.challengeData, fromSecond.signature)).status).toBe(200);
  });

  it.skipIf(skip)("refuses a changed, expired, foreign or forged challengeData with 401, and the untouched one still solves", async () => {
    const db = await deployment();
    const clock = new ManualClock(T0_MS);
    const send = await db.startInstance(clock);
    const { contract, operator, signedChallenge } = await operatedContract(db, send);
    const pending = await signedChallenge();
    const data = pending.challengeData;
    // Every character changed in turn (the nonce, the addresses, the times and the tag are all in it).
    for (let i = 0; i < data.length; i++) {
      const changed = data.slice(0, i) + (data[i] === "A" ? "B" : "A") + data.slice(i + 1);
      expectError(await solve(send, changed, pending.signature), 401, "UNAUTHORIZED");
    }
    for (const changed of [data.slice(1), `${data}A`, `${data.slice(0, -1)}=`, data.toUpperCase()]) {
      expectError(await solve(send, changed, pending.signature), 401, "UNAUTHORIZED");
    }
    // Sealed with another key: a later expiry, say, that this server never issued.
    const forged = sealChallenge(randomBytes(32), {
      contract: contract.toLowerCase() as AddressKey,
      operator: operator.address.toLowerCase() as AddressKey,
      nonce: randomBytes(16).toString("hex"),
      issuedAtMs: T0_MS,
      expiresAtMs: T0_MS + 365 * 24 * 3600 * 1000,
    });
    expectError(await solve(send, forged, pending.signature), 401, "UNAUTHORIZED");
    // Issued by another deployment (another database, another key).
    const elsewhere = await deployment();
    const elsewhereSend = await elsewhere.startInstance(clock);
    await registerOperator(elsewhereSend, elsewhere.adminToken, contract, operator.address);
    const foreign = await requestChallenge(elsewhereSend, contract, operator.address);
    const foreignSignature = await operator.signMessage({ message: foreign.message });
    expectError(await solve(send, foreign.challengeData, foreignSignature), 401, "UNAUTHORIZED");

    expect((await solve(send, data, pending.signature)).status).toBe(200);
    const late = await signedChallenge();
    clock.advance(CHALLENGE_TTL_MS);
    expectError(await solve(send, late.challengeData, late.signature), 401, "UNAUTHORIZED");
  });

  it.skipIf(skip)("answers the challenge and the solve (a token) with Cache-Control: no-store", async () => {
    const db = await deployment();
    const send = await db.startInstance();
    const { contract, operator } = await operatedContract(db, send);
    const challenge = await send({
      method: "POST",
      url: "/v1/dapp-auth/challenge",
      body: { contractAddress: contract, operatorAddress: operator.address },
    });
    expect(challenge.status).toBe(200);
    expect(challenge.headers["cache-control"]).toBe("no-store");
    const { challengeData, message } = challenge.json as { challengeData: string; message: string };
    const solved = await solve(send, challengeData, await operator.signMessage({ message }));
    expect(solved.status).toBe(200);
    expect(solved.headers["cache-control"]).toBe("no-store");
  });
});

describe("Cache-Control: no-store on answers carrying a webhook secret (issue 19 item 12)", () => {
  it("sends no-store with the secret of a new webhook endpoint and of a rotation, and on a 404 rotation too", async () => {
    const testApp = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" } });
    try {
      const { contract, token } = await addContract(testApp);
      const base = `/v1/contracts/${contract}/webhook-endpoints`;
      const created = await testApp.send({ method: "POST", url: base, token, body: { url: "http://127.0.0.1:9/hook" } });
      expect(created.status, created.text).toBe(200);
      expect(created.headers["cache-control"]).toBe("no-store");
      const { endpoint } = created.json as { endpoint: { id: string } };
      const rotated = await testApp.send({ method: "POST", url: `${base}/${endpoint.id}/rotate-secret`, token });
      expect(rotated.status, rotated.text).toBe(200);
      expect(rotated.headers["cache-control"]).toBe("no-store");
      expect((await testApp.send({ method: "DELETE", url: `${base}/${endpoint.id}`, token })).status).toBe(200);
      const missing = await testApp.send({ method: "POST", url: `${base}/${endpoint.id}/rotate-secret`, token });
      expect(missing.status).toBe(404);
      expect(missing.headers["cache-control"]).toBe("no-store");
    } finally {
      await testApp.close();
    }
  });
});
