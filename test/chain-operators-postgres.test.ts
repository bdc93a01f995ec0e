/**
 * Operators on chain over PostgreSQL with several instances (API.md: one change, one event):
 * two built servers on one database follow a rotation and a ban read on anvil, and the ledger
 * records each change once; two stores applying the same observations at once (the sign-in of one
 * instance racing the follower of another) record one operator.changed each; a read of an older
 * block than the stored one changes nothing, unless a reorganisation voided the stored block.
 * Skipped without DATABASE_URL_TEST.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Address } from "viem";
import type { AddressKey } from "../src/domain/address.js";
import type { ChainObservation } from "../src/domain/chain.js";
import type { LedgerStore } from "../src/store/store.js";
import { ANVIL_PATH, ANVIL_SKIP_REASON, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { adminEvents, anvilSigner, deployDapp, sendToRegistry, tokenStatus, trySignIn } from "./helpers/chain-registry.js";
import { createTestSchema, DATABASE_URL_TEST, randomAddress, SKIP_REASON, type TestSchema } from "./helpers/postgres.js";
import { assertBuilt, newAdminToken, pollUntil, sleep, startServerProcess, type ServerProcess } from "./helpers/process.js";

const TIMEOUT_MS = 180_000;
const POLL_SECONDS = 0.2;
const skip = !DATABASE_URL_TEST ? SKIP_REASON : ANVIL_PATH === null ? ANVIL_SKIP_REASON : null;
if (skip !== null) console.warn(skip);

function observation(operator: AddressKey | null, banned: boolean, number: number): ChainObservation {
  return { operator, banned, block: { number, hash: `0x${number.toString(16).padStart(64, "0")}` } };
}

describe.skipIf(skip !== null)(`operators on chain, two PostgreSQL instances${skip === null ? "" : ` (skipped: ${skip})`}`, () => {
  let schema: TestSchema;
  let anvil: Anvil;
  let registry: Address;
  const servers: ServerProcess[] = [];
  const adminToken = newAdminToken();
  const owner = anvilSigner(0);
  const first = anvilSigner(1);
  const second = anvilSigner(2);

  beforeAll(async () => {
    assertBuilt();
    schema = await createTestSchema(DATABASE_URL_TEST!);
    anvil = await startAnvil();
    registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
    const env = {
      DATABASE_URL: schema.connectionString,
      ADMIN_TOKEN: adminToken,
      CHAIN_RPC_URL: anvil.rpcUrl,
      OPERATOR_REGISTRY_ADDRESS: registry,
      CHAIN_BLOCK_TAG: "latest",
      CHAIN_POLL_SECONDS: String(POLL_SECONDS),
    };
    servers.push(await startServerProcess(env));
    servers.push(await startServerProcess(env));
  }, TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill("SIGTERM")));
    await anvil?.stop();
    await schema?.drop();
  });

  it("two servers follow a rotation and a ban: each change recorded once", { timeout: TIMEOUT_MS }, async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const dapp = await deployDapp(anvil, owner, registry, first.address);
    const onA = await trySignIn(a.url, dapp, first);
    const onB = await trySignIn(b.url, dapp, first);
    expect([onA.solve?.status, onB.solve?.status]).toEqual([200, 200]);

    await sendToRegistry(anvil, registry, "configurePointsOperatorOnBehalf", [dapp, second.address], first);
    for (const [server, signedIn] of [
      [a, onA],
      [b, onB],
    ] as const) {
      await pollUntil("the rotation to be followed", 20_000, async () =>
        (await tokenStatus(server.url, dapp, signedIn.token!)) === 401 ? true : undefined,
      );
    }
    // Both sign the new operator in at once, while the follower of either may be applying the same read.
    const both = await Promise.all([trySignIn(a.url, dapp, second), trySignIn(b.url, dapp, second)]);
    expect(both.map((signedIn) => signedIn.solve?.status)).toEqual([200, 200]);
    await sendToRegistry(anvil, registry, "setBanned", [dapp, true], owner);
    for (const signedIn of both) {
      await pollUntil("the ban to be followed", 20_000, async () =>
        (await tokenStatus(a.url, dapp, signedIn.token!)) === 401 ? true : undefined,
      );
    }
    // Several polls of both instances later, still one event per change.
    await sleep(POLL_SECONDS * 1000 * 5);
    const changes = (await adminEvents(b.url, adminToken, "operator.changed")).filter((event) => event.contractAddress === dapp);
    expect(changes.map((event) => event.data)).toEqual([
      { operatorAddress: first.address, previousOperatorAddress: null, banned: false },
      { operatorAddress: second.address, previousOperatorAddress: first.address, banned: false },
      { operatorAddress: null, previousOperatorAddress: second.address, banned: true },
    ]);
  });

  it(
    "two stores applying the same observations at once record one operator.changed each; an older read changes nothing",
    { timeout: TIMEOUT_MS },
    async () => {
      const stores: LedgerStore[] = [schema.openStore(), schema.openStore()];
      const contracts = Array.from({ length: 20 }, () => randomAddress());
      const named = randomAddress();
      const nowMs = Date.now();
      const applied = await Promise.all(
        contracts.flatMap((contract) =>
          stores.map((store) => store.applyChainObservation(contract, observation(named, false, 100), 31337, nowMs, false)),
        ),
      );
      expect(applied.filter((result) => result === "changed")).toHaveLength(contracts.length);
      const contract = contracts[0]!;
      const rows = await schema.query<{ count: string }>(
        "SELECT count(*) FROM events WHERE type = 'operator.changed' AND stream = ANY($1)",
        [contracts],
      );
      expect(Number(rows[0]!.count)).toBe(contracts.length);

      // An instance whose endpoint lags reads block 99: stale, the operator stays.
      const other = randomAddress();
      expect(await stores[1]!.applyChainObservation(contract, observation(other, false, 99), 31337, nowMs, false)).toBe("stale");
      expect(await stores[0]!.getOperator(contract)).toBe(named);
      // After a reorganisation voided block 100, the same read is followed.
      expect(await stores[1]!.applyChainObservation(contract, observation(other, false, 99), 31337, nowMs, true)).toBe("changed");
      expect(await stores[0]!.getOperator(contract)).toBe(other);
    },
  );
});
