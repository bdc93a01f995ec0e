/**
 * deploy/nginx.conf in front of the built service (issue 30, "a proxy as a file that is tested"):
 * the real nginx binary, the shipped site with only its ports, upstream and certificate paths
 * changed (test/helpers/nginx.ts), TLS with a certificate the test makes with openssl. Through
 * it: a PUT of a full batch, the event stream delivering an event within 1 s (not buffered), the
 * console, /metrics kept off the proxy, plain HTTP redirected; and with TRUST_PROXY set to the
 * proxy's address, the sign-in rate limit counts each client address (the one nginx saw), not
 * the proxy's — while without it, every client shares the proxy's budget.
 */
import { rmSync } from "node:fs";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDeployFile, which } from "./helpers/deploy.js";
import { creditPoints, newAccount, randomAddress, registerOperator, signIn, type Send } from "./helpers/http.js";
import { httpsSender, NGINX_MISSING, OPENSSL_MISSING, openHttpsStream, startNginx, type Nginx } from "./helpers/nginx.js";
import { assertBuilt, newAdminToken, sqliteUrl, startServerProcess, tempDir, type ServerProcess } from "./helpers/process.js";

const missing = !which("nginx") ? NGINX_MISSING : !which("openssl") ? OPENSSL_MISSING : undefined;
if (missing) console.warn(`deploy-proxy: skipped: ${missing}`);

/** The sign-in limit per client address the rate-limit tests exhaust. */
const AUTH_LIMIT = 5;
/** What "not buffered" means here (issue 30): an event reaches the client within a second of its commit. */
const EVENT_DEADLINE_MS = 1000;

interface Deployment {
  dir: string;
  server: ServerProcess;
  nginx: Nginx;
  adminToken: string;
  /** A contract with a registered operator, so that its challenges are answered 200. */
  contract: string;
  operator: PrivateKeyAccount;
  /** Requests through nginx from 127.0.0.1. */
  send: Send;
  stop(): Promise<void>;
}

async function deploy(name: string, env: Record<string, string>): Promise<Deployment> {
  assertBuilt();
  const dir = tempDir(`deploy-proxy-${name}`);
  const adminToken = newAdminToken();
  const server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    AUTH_RATE_LIMIT_PER_MINUTE: String(AUTH_LIMIT),
    ...env,
  });
  let nginx: Nginx;
  try {
    nginx = await startNginx(dir, readDeployFile("nginx.conf"), Number(new URL(server.url).port));
  } catch (error) {
    await server.kill("SIGKILL");
    throw error;
  }
  const deployment: Deployment = {
    dir,
    server,
    nginx,
    adminToken,
    contract: randomAddress(),
    operator: newAccount(),
    send: httpsSender(nginx.httpsUrl, nginx.certificate),
    stop: async () => {
      await nginx.stop();
      await server.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Set-up goes through the proxy too (the admin routes have no per-client budget).
  await registerOperator(deployment.send, adminToken, deployment.contract, deployment.operator.address);
  return deployment;
}

/** A challenge request from `clientAddress` (a loopback address nginx sees as the client). */
async function challengeFrom(deployment: Deployment, clientAddress: string, headers: Record<string, string> = {}): Promise<number> {
  const send = httpsSender(deployment.nginx.httpsUrl, deployment.nginx.certificate, { localAddress: clientAddress });
  const response = await send({
    method: "POST",
    url: "/v1/dapp-auth/challenge",
    headers,
    body: { contractAddress: deployment.contract, operatorAddress: deployment.operator.address },
  });
  return response.status;
}

async function challengesFrom(deployment: Deployment, clientAddress: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push(await challengeFrom(deployment, clientAddress));
  return statuses;
}

const transfers = (count: number) => Array.from({ length: count }, () => ({ toAddress: randomAddress(), points: "0.01" }));

describe.skipIf(missing !== undefined)("nginx (deploy/nginx.conf) with TLS in front of the service, TRUST_PROXY=127.0.0.1", () => {
  let deployment: Deployment;
  let contract: string;
  let token: string;
  beforeAll(async () => {
    deployment = await deploy("trusted", { TRUST_PROXY: "127.0.0.1" });
    contract = deployment.contract;
    await creditPoints(deployment.send, deployment.adminToken, contract, "PHASE2_POINTS", "1000");
    // Through the proxy from 127.0.0.1: two of that address's sign-in budget.
    token = await signIn(deployment.send, contract, deployment.operator);
  });
  afterAll(async () => {
    await deployment?.stop();
  });

  it("accepts a PUT of a full batch (2,000 transfers, ≈ 175 KB) and serves it back", async () => {
    const body = { pointType: "PHASE2_POINTS", secondsToFinalize: 3600, transfers: transfers(2000) };
    const put = await deployment.send({ method: "PUT", url: `/v1/contracts/${contract}/batches/through-nginx`, token, body });
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual({ success: true, batchId: "through-nginx" });
    const read = await deployment.send({ method: "GET", url: `/v1/contracts/${contract}/batches/through-nginx`, token });
    expect(read.status, read.text).toBe(200);
    expect(read.json).toMatchObject({ batch: { status: "PENDING", transferCount: 2000, points: "20" } });
  });

  it("delivers an event on the stream within 1 s of its commit, unbuffered", async () => {
    const stream = await openHttpsStream(
      deployment.nginx.httpsUrl,
      deployment.nginx.certificate,
      `/v1/contracts/${contract}/events/stream`,
      token,
    );
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers["content-type"]).toMatch(/^text\/event-stream/);
      // The retry hint and the replayed operator.changed are the stream's first bytes: it is open end to end.
      await stream.arrival('"type":"operator.changed"', 5000);
      const batchId = `live-${Date.now()}`;
      const put = await deployment.send({
        method: "PUT",
        url: `/v1/contracts/${contract}/batches/${batchId}`,
        token,
        body: { pointType: "PHASE2_POINTS", secondsToFinalize: 3600, transfers: transfers(1) },
      });
      const answeredMs = performance.now();
      expect(put.status, put.text).toBe(200);
      const arrivedMs = await stream.arrival(`"id":"${batchId}"`, 5000);
      console.log(`batch.accepted arrived through nginx ${Math.round(arrivedMs - answeredMs)} ms after the PUT's answer`);
      expect(arrivedMs - answeredMs).toBeLessThan(EVENT_DEADLINE_MS);
    } finally {
      stream.close();
    }
  });

  it("serves the console, its scripts and its Content-Security-Policy", async () => {
    const redirect = await deployment.send({ method: "GET", url: "/console" });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe("/console/");
    const page = await deployment.send({ method: "GET", url: "/console/" });
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.headers["content-security-policy"]).toBeDefined();
    const scripts = [...page.text.matchAll(/<script[^>]*src="([^"]+)"/g)].map((match) => match[1]!);
    expect(scripts.length, page.text).toBeGreaterThan(0);
    for (const script of scripts) {
      const asset = await deployment.send({ method: "GET", url: new URL(script, "https://x/console/").pathname });
      expect(asset.status, script).toBe(200);
      expect(asset.headers["content-type"], script).toMatch(/javascript/);
    }
  });

  it("refuses /metrics through the proxy (403) while Prometheus reads it on the service's own port", async () => {
    expect((await deployment.send({ method: "GET", url: "/metrics" })).status).toBe(403);
    const direct = await fetch(`${deployment.server.url}/metrics`);
    expect(direct.status).toBe(200);
    expect(await direct.text()).toContain("points_http_requests_total");
  });

  it("redirects plain HTTP to HTTPS", async () => {
    const response = await fetch(`${deployment.nginx.httpUrl}/v1/parameters`, { redirect: "manual" });
    expect(response.status).toBe(301);
    expect(response.headers.get("location")).toBe("https://127.0.0.1/v1/parameters");
  });

  it("makes the sign-in limit count each client's address: 127.0.0.2 is refused past its budget, 127.0.0.3 is not", async () => {
    expect(await challengesFrom(deployment, "127.0.0.2", AUTH_LIMIT + 1)).toEqual([...Array<number>(AUTH_LIMIT).fill(200), 429]);
    // nginx replaces X-Forwarded-For with the address it saw: a forged one buys no fresh budget.
    expect(await challengeFrom(deployment, "127.0.0.2", { "x-forwarded-for": "198.51.100.7" })).toBe(429);
    expect(await challengesFrom(deployment, "127.0.0.3", 2)).toEqual([200, 200]);
  });
});

describe.skipIf(missing !== undefined)("nginx in front of the service without TRUST_PROXY (the contrast)", () => {
  let deployment: Deployment;
  beforeAll(async () => {
    deployment = await deploy("untrusted", {});
  });
  afterAll(async () => {
    await deployment?.stop();
  });

  it("counts every client as the proxy: once 127.0.0.2 spent the budget, 127.0.0.3 is refused too", async () => {
    expect(await challengesFrom(deployment, "127.0.0.2", AUTH_LIMIT)).toEqual(Array<number>(AUTH_LIMIT).fill(200));
    expect(await challengesFrom(deployment, "127.0.0.3", 1)).toEqual([429]);
  });
});
