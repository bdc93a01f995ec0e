import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { join } from "node:path";
import type { Send, TestRequest, TestResponse } from "./http.js";
import { freePort, pollUntil, READY_TIMEOUT_MS } from "./process.js";

/**
 * The real nginx binary in front of a test server: a self-signed certificate made with the
 * openssl CLI, the shipped site (deploy/nginx.conf) with only its ports, upstream and certificate
 * paths changed, wrapped in a main configuration whose pid file, logs and temporary folders are
 * in the test's own directory; and an HTTPS client that trusts that certificate alone and can
 * connect from any loopback address (127.0.0.2, 127.0.0.3, …) to stand for distinct clients.
 */

export const NGINX_MISSING = "nginx is not installed: install nginx: apt-get install -y nginx";
export const OPENSSL_MISSING = "the openssl command is not installed: apt-get install -y openssl";

const STOP_TIMEOUT_MS = 10_000;

export interface Certificate {
  certPath: string;
  keyPath: string;
  /** PEM of the certificate, the only CA the test client trusts. */
  pem: string;
  fingerprint256: string;
}

/** A self-signed certificate for 127.0.0.1 and localhost, valid for a day, made with the openssl CLI. */
export function makeCertificate(dir: string): Certificate {
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  const result = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
      .concat(["-keyout", keyPath, "-out", certPath, "-subj", "/CN=localhost"])
      .concat(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]),
    { encoding: "utf8" },
  );
  if (result.status !== 0) throw new Error(`openssl req failed: ${result.stderr}`);
  const pem = readFileSync(certPath, "utf8");
  return { certPath, keyPath, pem, fingerprint256: new X509Certificate(pem).fingerprint256 };
}

export interface SitePlaces {
  httpsPort: number;
  httpPort: number;
  upstreamPort: number;
  certificate: Certificate;
}

/** Replaces `pattern` in `text`, failing when the shipped file no longer has it (the test would silently test less). */
function substitute(text: string, pattern: RegExp, replacement: string, what: string): string {
  if (!pattern.test(text)) throw new Error(`deploy/nginx.conf no longer has ${what} (${String(pattern)}): update the test's substitutions`);
  return text.replace(pattern, replacement);
}

/**
 * The shipped site with the machine-specific values of the test: listen on loopback ports (the
 * IPv6 listeners dropped: loopback IPv4 is what the test reaches), the test server as upstream,
 * the test's certificate. Every other directive is the shipped one.
 */
export function siteForTest(shipped: string, places: SitePlaces): string {
  let site = shipped;
  site = substitute(site, /^(\s*)listen \[::\]:(80|443)\b[^;]*;\n/gm, "", "IPv6 listeners");
  site = substitute(site, /^(\s*)listen 443 /m, `$1listen 127.0.0.1:${places.httpsPort} `, "listen 443");
  site = substitute(site, /^(\s*)listen 80;/m, `$1listen 127.0.0.1:${places.httpPort};`, "listen 80");
  site = substitute(site, /^(\s*)server 127\.0\.0\.1:8080;/m, `$1server 127.0.0.1:${places.upstreamPort};`, "the upstream 127.0.0.1:8080");
  site = substitute(site, /^(\s*)ssl_certificate \S+;/m, `$1ssl_certificate ${places.certificate.certPath};`, "ssl_certificate");
  site = substitute(site, /^(\s*)ssl_certificate_key \S+;/m, `$1ssl_certificate_key ${places.certificate.keyPath};`, "ssl_certificate_key");
  return site;
}

/** nginx's main file, as Debian's includes conf.d/*.conf inside `http { }`, with every path in `dir`. */
function mainConfig(dir: string, sitePath: string): string {
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"];
  for (const name of temp) {
    mkdirSync(join(dir, name), { recursive: true });
    // Workers run as `nobody` when the test runs as root and must write there.
    chmodSync(join(dir, name), 0o777);
  }
  const runAs = process.getuid?.() === 0 ? `user nobody ${spawnSync("id", ["-gn", "nobody"], { encoding: "utf8" }).stdout.trim()};` : "";
  return [
    runAs,
    "daemon off;",
    "worker_processes 1;",
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "error.log")} info;`,
    "events { worker_connections 512; }",
    "http {",
    `  access_log ${join(dir, "access.log")};`,
    ...temp.map((name) => `  ${name}_temp_path ${join(dir, name)};`),
    `  include ${sitePath};`,
    "}",
    "",
  ].join("\n");
}

export interface Nginx {
  httpsUrl: string;
  httpUrl: string;
  certificate: Certificate;
  /** The site nginx runs (the shipped one after siteForTest). */
  site: string;
  errorLog(): string;
  stop(): Promise<void>;
}

/** Runs the real nginx in front of `upstreamPort` with the shipped site; resolves once it proxies /healthz. */
export async function startNginx(dir: string, shippedSite: string, upstreamPort: number): Promise<Nginx> {
  chmodSync(dir, 0o755);
  const certificate = makeCertificate(dir);
  const site = siteForTest(shippedSite, { httpsPort: await freePort(), httpPort: await freePort(), upstreamPort, certificate });
  const sitePath = join(dir, "points-ledger.conf");
  const configPath = join(dir, "nginx.conf");
  writeFileSync(sitePath, site);
  writeFileSync(configPath, mainConfig(dir, sitePath));
  const args = ["-p", dir, "-e", join(dir, "error.log"), "-c", configPath];
  const check = spawnSync("nginx", ["-t", ...args], { encoding: "utf8" });
  if (check.status !== 0) throw new Error(`nginx -t refused the configuration:\n${check.stderr}\n${site}`);

  const child: ChildProcess = spawn("nginx", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const errorLog = () => `${output}${readFileSync(join(dir, "error.log"), "utf8")}`;
  const httpsPort = /listen 127\.0\.0\.1:(\d+) ssl/.exec(site)![1]!;
  const httpPort = /listen 127\.0\.0\.1:(\d+);/.exec(site)![1]!;
  const nginx: Nginx = {
    httpsUrl: `https://127.0.0.1:${httpsPort}`,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    certificate,
    site,
    errorLog,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
  const send = httpsSender(nginx.httpsUrl, certificate);
  try {
    await pollUntil("nginx to proxy /healthz", READY_TIMEOUT_MS, async () => {
      if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${errorLog()}`);
      const response = await send({ method: "GET", url: "/healthz" }).catch(() => undefined);
      return response?.status === 200 ? true : undefined;
    });
  } catch (error) {
    await nginx.stop();
    throw error;
  }
  return nginx;
}

export interface HttpsOptions {
  /** The client's own address, e.g. 127.0.0.2: nginx sees it as $remote_addr. */
  localAddress?: string;
}

function httpsOptions(baseUrl: string, certificate: Certificate, options: HttpsOptions): RequestOptions {
  const base = new URL(baseUrl);
  return {
    host: base.hostname,
    port: base.port,
    // Trust the test's certificate and nothing else: an answer proves nginx served TLS with it.
    ca: certificate.pem,
    rejectUnauthorized: true,
    agent: false,
    ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A `Send` (test/helpers/http.ts) over HTTPS through the proxy. */
export function httpsSender(baseUrl: string, certificate: Certificate, options: HttpsOptions = {}): Send {
  return (request: TestRequest) =>
    new Promise<TestResponse>((resolve, reject) => {
      const headers: Record<string, string> = { ...request.headers };
      let payload: string | undefined;
      if (request.body !== undefined) {
        payload = typeof request.body === "string" ? request.body : JSON.stringify(request.body);
        headers["content-type"] ??= "application/json";
        headers["content-length"] = String(Buffer.byteLength(payload));
      }
      if (request.token) headers.authorization = `Bearer ${request.token}`;
      const outgoing = httpsRequest(
        { ...httpsOptions(baseUrl, certificate, options), method: request.method, path: request.url, headers },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
          incoming.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text, json: parseJson(text) });
          });
          incoming.on("error", reject);
        },
      );
      outgoing.on("error", reject);
      outgoing.end(payload);
    });
}

export interface HttpsStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Resolves with the time (performance.now()) at which the body first contained `text`. */
  arrival(text: string, timeoutMs: number): Promise<number>;
  close(): void;
}

/** A GET whose body is read as it arrives (server-sent events), over HTTPS through the proxy; its headers must come within `timeoutMs`. */
export function openHttpsStream(
  baseUrl: string,
  certificate: Certificate,
  path: string,
  token: string,
  timeoutMs = 5000,
): Promise<HttpsStream> {
  return new Promise((resolve, reject) => {
    const outgoing = httpsRequest({
      ...httpsOptions(baseUrl, certificate, {}),
      method: "GET",
      path,
      headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
    const timer = setTimeout(() => {
      outgoing.destroy();
      reject(new Error(`no answer to GET ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    outgoing.on("error", reject);
    outgoing.on("response", (incoming) => {
      clearTimeout(timer);
      let body = "";
      const waiters = new Set<() => void>();
      incoming.setEncoding("utf8");
      incoming.on("data", (chunk: string) => {
        body += chunk;
        for (const waiter of waiters) waiter();
      });
      incoming.on("error", () => undefined);
      const arrival = (text: string, timeoutMs: number) =>
        new Promise<number>((resolveArrival, rejectArrival) => {
          const check = () => {
            if (!body.includes(text)) return;
            waiters.delete(check);
            clearTimeout(timer);
            resolveArrival(performance.now());
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            rejectArrival(new Error(`"${text}" did not arrive within ${timeoutMs} ms; received:\n${body}`));
          }, timeoutMs);
          waiters.add(check);
          check();
        });
      resolve({
        status: incoming.statusCode ?? 0,
        headers: incoming.headers,
        arrival,
        close: () => {
          incoming.destroy();
          outgoing.destroy();
        },
      });
    });
    outgoing.end();
  });
}
