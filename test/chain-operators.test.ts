/**
 * Operators on chain (API.md) against the built server over SQLite and a real EVM node (anvil):
 * a contract that names its operator in its constructor signs in and any other address is 403
 * with the reason and the block; a rotation, a ban and an unban on chain are followed within
 * CHAIN_POLL_SECONDS (tokens 401, the keys the previous operator created revoked, operator.changed
 * with the chain actor); a reorganisation at `latest` that undoes a rotation is followed back;
 * the administrator's route and the CLI's `operator set` are refused; GET /v1/chain.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAddress, type Address } from "viem";
import { ANVIL_PATH, ANVIL_SKIP_REASON, deploy, startAnvil, type Anvil } from "./helpers/anvil.js";
import { adminEvents, anvilSigner, deployDapp, sendToRegistry, tokenStatus, trySignIn } from "./helpers/chain-registry.js";
import {
  assertBuilt,
  call,
  callOk,
  newAdminToken,
  pollUntil,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type Env,
  type ServerProcess,
} from "./helpers/process.js";

const TIMEOUT_MS = 120_000;
const POLL_SECONDS = 0.5;
/** How long a test waits for a change to be followed: the poll, and a busy 2-core machine. */
const FOLLOW_DEADLINE_MS = 15_000;

describe.skipIf(ANVIL_PATH === null)(`operators on chain, SQLite${ANVIL_PATH === null ? ` (skipped: ${ANVIL_SKIP_REASON})` : ""}`, () => {
  let anvil: Anvil;
  let dir: string;
  let server: ServerProcess;
  let registry: Address;
  let env: Env;
  const adminToken = newAdminToken();
  const owner = anvilSigner(0);
  const first = anvilSigner(1);
  const second = anvilSigner(2);
  const stranger = anvilSigner(3);

  beforeAll(async () => {
    assertBuilt();
    anvil = await startAnvil();
    registry = await deploy(anvil, owner, "PointsOperatorRegistry", [owner.address]);
    dir = tempDir("chain-operators");
    env = {
      DATABASE_URL: sqliteUrl(dir),
      ADMIN_TOKEN: adminToken,
      CHAIN_RPC_URL: anvil.rpcUrl,
      OPERATOR_REGISTRY_ADDRESS: registry,
      CHAIN_BLOCK_TAG: "latest",
      CHAIN_POLL_SECONDS: String(POLL_SECONDS),
      CHAIN_TIMEOUT_MS: "2000",
    };
    server = await startServerProcess(env);
  }, TIMEOUT_MS);
  afterAll(async () => {
    await server?.kill("SIGTERM");
    await anvil?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(
    "signs in the operator a contract named in its constructor; another address, a contract without one: 403 with the block",
    { timeout: TIMEOUT_MS },
    async () => {
      const dapp = await deployDapp(anvil, owner, registry, first.address);
      const signedIn = await trySignIn(server.url, dapp, first);
      expect(signedIn.solve?.status, JSON.stringify(signedIn)).toBe(200);
      expect(await tokenStatus(server.url, dapp, signedIn.token!)).toBe(200);

      const other = await trySignIn(server.url, dapp, stranger);
      expect(other.challenge.status).toBe(403);
      const refused = other.challenge.body.error as { code: string; message: string };
      expect(refused.code).toBe("FORBIDDEN");
      expect(refused.message).toMatch(/not the contract's operator in the operator registry at block \d+/);

      const nobody = await trySignIn(server.url, getAddress(stranger.address), first);
      expect(nobody.challenge.status).toBe(403);
      expect((nobody.challenge.body.error as { message: string }).message).toMatch(/no operator in the operator registry at block \d+/);

      const chain = await callOk(server.url, "GET", "/v1/chain", null);
      expect(chain).toMatchObject({ success: true, chainId: anvil.chainId, registry, blockTag: "latest", state: "ok" });
      expect(chain.blockNumber).toBeGreaterThan(0);
      expect(Date.parse(String(chain.readAt))).toBeGreaterThan(0);
    },
  );

  it(
    "follows a rotation: the previous operator's tokens 401, its keys revoked, operator.changed with the chain actor",
    { timeout: TIMEOUT_MS },
    async () => {
      const dapp = await deployDapp(anvil, owner, registry, first.address);
      const { token } = await trySignIn(server.url, dapp, first);
      const key = await callOk(server.url, "POST", `/v1/contracts/${dapp}/api-keys`, token!, { name: "backend", scopes: ["read"] });
      const secret = String(key.secret);
      expect(await tokenStatus(server.url, dapp, secret)).toBe(200);

      const changedAtMs = Date.now();
      const block = await sendToRegistry(anvil, registry, "configurePointsOperatorOnBehalf", [dapp, second.address], first);
      await pollUntil("the old token to stop working", FOLLOW_DEADLINE_MS, async () =>
        (await tokenStatus(server.url, dapp, token!)) === 401 ? true : undefined,
      );
      const followedMs = Date.now() - changedAtMs;
      expect(await tokenStatus(server.url, dapp, secret)).toBe(401);

      const events = (await adminEvents(server.url, adminToken, "operator.changed,api_key.revoked")).filter(
        (event) => event.contractAddress === dapp,
      );
      // The first sign-in registered the operator the chain named, as an administrator's first registration does.
      const [registered, ...changed] = events.filter((event) => event.type === "operator.changed");
      expect(registered!.data).toEqual({ operatorAddress: first.address, previousOperatorAddress: null, banned: false });
      expect(changed).toHaveLength(1);
      expect(changed[0]!.data).toEqual({ operatorAddress: second.address, previousOperatorAddress: first.address, banned: false });
      expect(changed[0]!.actor).toMatchObject({ type: "chain", chainId: anvil.chainId, transactionHash: null });
      expect(changed[0]!.actor.blockNumber).toBeGreaterThanOrEqual(block);
      const revoked = events.filter((event) => event.type === "api_key.revoked");
      expect(revoked).toHaveLength(1);
      expect(revoked[0]!.actor).toEqual(changed[0]!.actor);

      expect((await trySignIn(server.url, dapp, first)).challenge.status).toBe(403);
      expect((await trySignIn(server.url, dapp, second)).solve?.status).toBe(200);
      console.log(`rotation followed in ${followedMs} ms (CHAIN_POLL_SECONDS ${POLL_SECONDS})`);
    },
  );

  it("follows a ban (no operator, banned: true) and an unban (the operator again, banned: false)", { timeout: TIMEOUT_MS }, async () => {
    const dapp = await deployDapp(anvil, owner, registry, first.address);
    const { token } = await trySignIn(server.url, dapp, first);
    await sendToRegistry(anvil, registry, "setBanned", [dapp, true], owner);
    await pollUntil("the banned contract's token to stop working", FOLLOW_DEADLINE_MS, async () =>
      (await tokenStatus(server.url, dapp, token!)) === 401 ? true : undefined,
    );
    const banned = await trySignIn(server.url, dapp, first);
    expect(banned.challenge.status).toBe(403);
    expect((banned.challenge.body.error as { message: string }).message).toMatch(/banned in the operator registry at block \d+/);

    await sendToRegistry(anvil, registry, "setBanned", [dapp, false], owner);
    const changes = await pollUntil("the unban to be recorded", FOLLOW_DEADLINE_MS, async () => {
      const events = (await adminEvents(server.url, adminToken, "operator.changed")).filter((event) => event.contractAddress === dapp);
      return events.length === 3 ? events : undefined;
    });
    expect(changes.map((event) => event.data)).toEqual([
      { operatorAddress: first.address, previousOperatorAddress: null, banned: false },
      { operatorAddress: null, previousOperatorAddress: first.address, banned: true },
      { operatorAddress: first.address, previousOperatorAddress: null, banned: false },
    ]);
    expect((await trySignIn(server.url, dapp, first)).solve?.status).toBe(200);
  });

  it(
    "refuses the administrator's operator route (409 OPERATORS_ON_CHAIN) and the CLI's operator set (exit 1, one line)",
    { timeout: TIMEOUT_MS },
    async () => {
      const dapp = await deployDapp(anvil, owner, registry, first.address);
      const answer = await call(server.url, "PUT", `/v1/admin/contracts/${dapp}/operator`, adminToken, {
        operatorAddress: stranger.address,
      });
      expect(answer.status).toBe(409);
      expect((answer.body.error as { code: string }).code).toBe("OPERATORS_ON_CHAIN");
      expect((await trySignIn(server.url, dapp, stranger)).challenge.status).toBe(403);

      const cli = await runCli(["operator", "set", dapp, stranger.address], env);
      expect(cli.code).toBe(1);
      expect(cli.stderr.trim().split("\n")).toHaveLength(1);
      expect(cli.stderr).toContain("OPERATORS_ON_CHAIN");
    },
  );

  it("follows a reorganisation at latest that undoes a rotation as a change back", { timeout: TIMEOUT_MS }, async () => {
    const dapp = await deployDapp(anvil, owner, registry, first.address);
    const { token: firstToken } = await trySignIn(server.url, dapp, first);
    const snapshot = await anvil.testClient.snapshot();
    await sendToRegistry(anvil, registry, "configurePointsOperatorOnBehalf", [dapp, second.address], first);
    await pollUntil("the rotation to be followed", FOLLOW_DEADLINE_MS, async () =>
      (await tokenStatus(server.url, dapp, firstToken!)) === 401 ? true : undefined,
    );
    const { token: secondToken } = await trySignIn(server.url, dapp, second);
    expect(secondToken).not.toBeNull();

    // The rotation's block is undone: the chain names the first operator again, at a lower height.
    await anvil.testClient.revert({ id: snapshot });
    await pollUntil("the reorganisation to be followed", FOLLOW_DEADLINE_MS, async () =>
      (await tokenStatus(server.url, dapp, secondToken!)) === 401 ? true : undefined,
    );
    const changes = (await adminEvents(server.url, adminToken, "operator.changed")).filter((event) => event.contractAddress === dapp);
    expect(changes.map((event) => event.data)).toEqual([
      { operatorAddress: first.address, previousOperatorAddress: null, banned: false },
      { operatorAddress: second.address, previousOperatorAddress: first.address, banned: false },
      { operatorAddress: first.address, previousOperatorAddress: second.address, banned: false },
    ]);
    expect((await trySignIn(server.url, dapp, first)).solve?.status).toBe(200);
  });
});
