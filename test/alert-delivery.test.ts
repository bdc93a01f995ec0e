/**
 * Issue 38, "alerts that reach someone": the shipped rules (deploy/alerts.yml), Prometheus
 * configuration (deploy/prometheus.yml) and routing (deploy/alertmanager.yml), run by Debian's own
 * `prometheus` and `prometheus-alertmanager` on free loopback ports with their own data folders,
 * take a firing alert to a real HTTP receiver. Only the addresses change (the scrape targets, the
 * Alertmanager and receiver addresses, the rule file's path) and the scrape and evaluation
 * intervals (15 s → 1 s); `for`, routes, group_wait and templates are as shipped.
 *
 * Prometheus scrapes a real built points-ledger on a fresh SQLite ledger, which has no backup
 * recorded: PointsLedgerBackupTooOld (warning) fires at once and reaches the operators' receiver
 * after the route's group_wait (30 s). The Patroni targets point at ports nobody listens on, so
 * PointsLedgerPatroniNoLeader (critical, `for: 1m`) fires and pages through the critical route.
 * Then `points-ledger backup` records a backup and the alert stops firing. Skipped with a message
 * where the binaries are not installed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_DIR, readDeployFile, which } from "./helpers/deploy.js";
import {
  assertBuilt,
  freePort,
  newAdminToken,
  pollUntil,
  runCli,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/webhook-receiver.js";

const binaries = { prometheus: which("prometheus"), alertmanager: which("prometheus-alertmanager") };
const MISSING = "apt-get install -y prometheus prometheus-alertmanager";
if (!binaries.prometheus || !binaries.alertmanager)
  console.warn(`alert-delivery: skipped: Prometheus or Alertmanager is not installed (${MISSING})`);

/** Bounds of the waits: start-up, and an alert's way (its `for`, Alertmanager's group_wait, the send). */
const START_TIMEOUT_MS = 30_000;
const WARNING_DELIVERY_MS = 60_000;
const CRITICAL_DELIVERY_MS = 110_000;
const RESOLVE_TIMEOUT_MS = 30_000;
const OUTPUT_LIMIT_CHARS = 20_000;

/** Alertmanager's webhook body (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config), the parts read here. */
interface WebhookMessage {
  receiver: string;
  status: string;
  alerts: { status: string; labels: Record<string, string>; annotations: Record<string, string> }[];
}

/** `text` with `from` replaced by `to`, failing when the shipped file no longer has `from`. */
function substitute(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the shipped file no longer contains ${JSON.stringify(from)}: update this test`);
  return text.split(from).join(to);
}

/** A daemon of the test, its output kept for failure messages. */
class Daemon {
  output = "";
  constructor(readonly child: ChildProcess) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString("utf8")).slice(-OUTPUT_LIMIT_CHARS);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("close", () => resolve()));
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

async function answers200(url: string): Promise<boolean> {
  try {
    const response = await fetch(url);
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

async function startDaemon(command: string, args: string[], readyUrl: string): Promise<Daemon> {
  const daemon = new Daemon(spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] }));
  await pollUntil(`${command} ready at ${readyUrl}`, START_TIMEOUT_MS, async () => {
    if (daemon.child.exitCode !== null) throw new Error(`${command} exited (${daemon.child.exitCode}):\n${daemon.output}`);
    return (await answers200(readyUrl)) ? true : undefined;
  });
  return daemon;
}

/** The messages of `path` that carry a firing `alertname`, with when each arrived. */
function firing(receiver: Receiver, path: string, alertname: string): (WebhookMessage & { atMs: number })[] {
  return receiver.received
    .filter((request) => request.method === "POST" && request.path === path)
    .map((request) => ({ ...(JSON.parse(request.body) as WebhookMessage), atMs: request.atMs }))
    .filter((message) => message.alerts.some((alert) => alert.status === "firing" && alert.labels.alertname === alertname));
}

describe.skipIf(!binaries.prometheus || !binaries.alertmanager)("a firing rule of deploy/alerts.yml reaches a receiver", () => {
  let dir: string;
  let server: ServerProcess;
  let receiver: Receiver;
  const daemons: Daemon[] = [];
  let prometheusUrl: string;
  let alertmanagerUrl: string;
  /** When Prometheus answered ready: the alerts' delays are reported from it. */
  let prometheusReadyMs: number;

  beforeAll(async () => {
    assertBuilt();
    dir = tempDir("alert-delivery");
    receiver = await startReceiver();
    server = await startServerProcess({ DATABASE_URL: sqliteUrl(dir), ADMIN_TOKEN: newAdminToken() });

    const alertmanagerPort = await freePort();
    alertmanagerUrl = `http://127.0.0.1:${alertmanagerPort}`;
    const alertmanagerConfig = join(dir, "alertmanager.yml");
    writeFileSync(alertmanagerConfig, substitute(readDeployFile("alertmanager.yml"), "127.0.0.1:9095", `127.0.0.1:${receiver.port}`));
    mkdirSync(join(dir, "alertmanager-data"));
    daemons.push(
      await startDaemon(
        binaries.alertmanager!,
        [
          `--config.file=${alertmanagerConfig}`,
          `--storage.path=${join(dir, "alertmanager-data")}`,
          `--web.listen-address=127.0.0.1:${alertmanagerPort}`,
          // No cluster: a lone Alertmanager, nothing bound on the default 9094.
          "--cluster.listen-address=",
        ],
        `http://127.0.0.1:${alertmanagerPort}/-/ready`,
      ),
    );

    // Ports nobody listens on: blackbox_exporter, node_exporter and the three Patroni nodes are down.
    const deadPorts = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
    let config = readDeployFile("prometheus.yml");
    config = substitute(config, "scrape_interval: 15s", "scrape_interval: 1s");
    config = substitute(config, "evaluation_interval: 15s", "evaluation_interval: 1s");
    config = substitute(config, "\n  - /etc/prometheus/points-ledger.yml\n", `\n  - ${join(DEPLOY_DIR, "alerts.yml")}\n`);
    config = substitute(config, '"127.0.0.1:9093"', `"127.0.0.1:${alertmanagerPort}"`);
    config = substitute(config, '"127.0.0.1:8080"', `"${new URL(server.url).host}"`);
    config = substitute(config, '"127.0.0.1:9115"', `"127.0.0.1:${deadPorts[0]}"`);
    config = substitute(config, '"127.0.0.1:9100"', `"127.0.0.1:${deadPorts[1]}"`);
    for (const [index, node] of ["10.0.0.11:8008", "10.0.0.12:8008", "10.0.0.13:8008"].entries())
      config = substitute(config, `"${node}"`, `"127.0.0.1:${deadPorts[index + 2]}"`);
    const prometheusConfig = join(dir, "prometheus.yml");
    writeFileSync(prometheusConfig, config);
    const prometheusPort = await freePort();
    prometheusUrl = `http://127.0.0.1:${prometheusPort}`;
    daemons.push(
      await startDaemon(
        binaries.prometheus!,
        [
          `--config.file=${prometheusConfig}`,
          `--storage.tsdb.path=${join(dir, "prometheus-data")}`,
          `--web.listen-address=127.0.0.1:${prometheusPort}`,
        ],
        `${prometheusUrl}/-/ready`,
      ),
    );
    prometheusReadyMs = Date.now();
  }, 90_000);

  afterAll(async () => {
    for (const daemon of daemons.reverse()) await daemon.stop();
    await server?.kill("SIGTERM");
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const diagnostics = () =>
    `received: ${JSON.stringify(receiver.received.map((request) => request.path))}\n${daemons.map((daemon) => daemon.output).join("\n")}`;

  /** The first message at `path` with `alertname` firing (waited for up to `withinMs`), its alert, and when it came. */
  async function firstDelivery(path: string, where: string, alertname: string, withinMs: number) {
    const messages = await pollUntil(`${alertname} at the ${where}\n${diagnostics()}`, withinMs, async () => {
      const found = firing(receiver, path, alertname);
      return found.length > 0 ? found : undefined;
    });
    const alert = messages[0]!.alerts.find((each) => each.labels.alertname === alertname)!;
    console.log(`alert-delivery: ${alertname} at the ${where} ${messages[0]!.atMs - prometheusReadyMs} ms after Prometheus started`);
    return { messages, alert };
  }

  it("PointsLedgerBackupTooOld (warning, a ledger with no backup recorded) reaches the operators' receiver with its summary", async () => {
    const { messages, alert } = await firstDelivery("/points-ledger/alerts", "receiver", "PointsLedgerBackupTooOld", WARNING_DELIVERY_MS);
    expect(messages[0]!.receiver).toBe("operators");
    expect(alert.labels.severity).toBe("warning");
    expect(alert.annotations.summary).toBe("no backup of the database was ever recorded");
    expect(alert.annotations.runbook).toBe("docs/operations.md#pointsledgerbackuptooold");
    // Not paged: the pager's route is for critical alerts only.
    expect(firing(receiver, "/points-ledger/pages", "PointsLedgerBackupTooOld")).toEqual([]);
  }, 70_000);

  it("PointsLedgerPatroniNoLeader (critical, every Patroni node unreachable for its minute) pages through the critical route", async () => {
    const { messages, alert } = await firstDelivery("/points-ledger/pages", "pager", "PointsLedgerPatroniNoLeader", CRITICAL_DELIVERY_MS);
    expect(messages[0]!.receiver).toBe("pager");
    expect(alert.annotations.summary).toBe("0 Patroni nodes are primary (exactly 1 should be)");
    // A cluster-wide critical alert (no instance) does not mute the cluster-wide warning: the
    // inhibition is per instance, and a label both lack would otherwise count as equal.
    const backup = (await (await fetch(`${alertmanagerUrl}/api/v2/alerts?filter=alertname%3D%22PointsLedgerBackupTooOld%22`)).json()) as {
      status: { state: string; inhibitedBy: string[]; silencedBy: string[] };
    }[];
    expect(backup.map((each) => each.status)).toEqual([{ state: "active", inhibitedBy: [], silencedBy: [] }]);
  }, 120_000);

  it("`points-ledger backup` records a backup, and PointsLedgerBackupTooOld stops firing", async () => {
    const result = await runCli(["backup", join(dir, "copy.db")], { DATABASE_URL: sqliteUrl(dir) });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    await pollUntil(`PointsLedgerBackupTooOld no longer firing in Prometheus\n${diagnostics()}`, RESOLVE_TIMEOUT_MS, async () => {
      const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as {
        data: { alerts: { labels: Record<string, string>; state: string }[] };
      };
      const names = body.data.alerts.map((alert) => alert.labels.alertname);
      // Still there, the critical one: Prometheus's view is current.
      return names.includes("PointsLedgerPatroniNoLeader") && !names.includes("PointsLedgerBackupTooOld") ? true : undefined;
    });
  }, 40_000);
});
