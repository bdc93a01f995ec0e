/**
 * deploy/alerts.yml and deploy/grafana-dashboard.json (issue 30, "alerts and a dashboard"):
 * - `promtool check rules` accepts the rules;
 * - each alert's expression, as shipped, is true on the situation it names and empty on a healthy
 *   one (`promtool test rules` over series written here);
 * - every metric the rules and the dashboard query is one the built service's GET /metrics
 *   exports after some work (a batch finalized, a webhook given up, /readyz asked), with the
 *   labels they match on; any other is one of the named exporters', and the rule says which;
 * - each alert's runbook link leads to a heading of docs/operations.md.
 * Without promtool the promtool parts are skipped with a message; the rest still runs.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_DIR, readDeployFile, REPO_ROOT, which } from "./helpers/deploy.js";
import {
  callOk,
  creditPoints,
  freePort,
  newAdminToken,
  pollUntil,
  randomAddress,
  setOperator,
  signIn,
  sqliteUrl,
  startServerProcess,
  tempDir,
  type ServerProcess,
} from "./helpers/process.js";
import { headingAnchor, parseAlertRules, parseExposition, selectors, type Exposition, type Selector } from "./helpers/promql.js";

const PROMTOOL_MISSING = "promtool is not installed: apt-get install -y prometheus (Debian's package ships promtool)";
const promtool = which("promtool");
if (!promtool) console.warn(`deploy-alerts: promtool parts skipped: ${PROMTOOL_MISSING}`);

const RULES_PATH = join(DEPLOY_DIR, "alerts.yml");
const rules = parseAlertRules(readDeployFile("alerts.yml"));

interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: { id: number; type: string; title: string; gridPos: unknown; targets?: { refId: string; expr: string }[] }[];
  templating: { list: { name: string; type: string; query?: string | { query: string } }[] };
}
const dashboard = JSON.parse(readDeployFile("grafana-dashboard.json")) as Dashboard;
/** Every PromQL query of the dashboard: the panels' and the template variables' (`label_values(<selector>, label)`). */
const dashboardQueries: { where: string; expr: string }[] = [
  ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr }))),
  ...dashboard.templating.list.flatMap((variable) => {
    if (variable.type !== "query") return [];
    const query = typeof variable.query === "string" ? variable.query : (variable.query?.query ?? "");
    const selector = /^label_values\((.*),\s*\w+\)$/.exec(query);
    return [{ where: `variable $${variable.name}`, expr: selector ? selector[1]! : query }];
  }),
];

/**
 * Metrics that points-ledger does not export, by the exporter that does; a rule that uses one
 * names that exporter in its `metrics_from` annotation.
 */
const EXTERNAL_METRICS: Record<string, string> = {
  up: "Prometheus",
  probe_success: "blackbox_exporter",
  node_filesystem_avail_bytes: "node_exporter",
  node_filesystem_size_bytes: "node_exporter",
  patroni_primary: "Patroni",
  patroni_sync_standby: "Patroni",
  patroni_replica: "Patroni",
  patroni_xlog_location: "Patroni",
  patroni_xlog_replayed_location: "Patroni",
};
/**
 * Metrics the service exports only under a setting this test's server does not have, by that
 * setting: points_database_replica_lag_seconds is measured only where DATABASE_READ_URL names a
 * replica (its own tests run one).
 */
const SETTING_METRICS: Record<string, string> = {
  points_database_replica_lag_seconds: "DATABASE_READ_URL",
};
/** Labels that Prometheus adds at scrape time (the target's), not the service. */
const TARGET_LABELS = new Set(["job", "instance"]);

// ---------------------------------------------------------------------------------------------
// The service's /metrics after a little of every kind of work the rules watch.

let dir: string;
let server: ServerProcess;
let exposition: Exposition;

/** Registers an operator, finalizes a batch, has a webhook delivery fail for good, asks /readyz; returns /metrics. */
async function scrapeAfterWork(): Promise<string> {
  const adminToken = newAdminToken();
  server = await startServerProcess({
    DATABASE_URL: sqliteUrl(dir),
    ADMIN_TOKEN: adminToken,
    MINIMUM_FINALIZE_SECONDS: "1",
    FINALIZER_INTERVAL_MS: "50",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    // One immediate retry, then FAILED: a failing endpoint shows every result but endpoint_disabled quickly.
    WEBHOOK_RETRY_SCHEDULE_SECONDS: "0",
  });
  const contract = randomAddress();
  const operator = privateKeyToAccount(generatePrivateKey());
  await setOperator(server.url, adminToken, contract, operator.address);
  await creditPoints(server.url, adminToken, contract, "grant", "PHASE2_POINTS", "100");
  const token = await signIn(server.url, contract, operator);
  // A port nobody listens on: every delivery attempt fails to connect.
  const deadPort = await freePort();
  await callOk(server.url, "POST", `/v1/contracts/${contract}/webhook-endpoints`, token, {
    url: `http://127.0.0.1:${deadPort}/hook`,
    types: ["batch.accepted"],
  });
  const transfers = [{ toAddress: randomAddress(), points: "1" }];
  await callOk(server.url, "PUT", `/v1/contracts/${contract}/batches/b1`, token, {
    pointType: "PHASE2_POINTS",
    secondsToFinalize: 1,
    transfers,
  });
  await fetch(`${server.url}/readyz`).then((response) => response.arrayBuffer());
  return pollUntil("a finalized batch and a failed webhook delivery on /metrics", 30_000, async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return /^points_batches_finalized_total 1$/m.test(text) && /^points_webhook_deliveries_total\{result="failed"\} 1$/m.test(text)
      ? text
      : undefined;
  });
}

beforeAll(async () => {
  dir = tempDir("deploy-alerts");
  exposition = parseExposition(await scrapeAfterWork());
}, 60_000);
afterAll(async () => {
  await server?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

/** What is wrong with one selector of a query, or null. */
function selectorProblem(selector: Selector, metricsFrom: string | undefined): string | null {
  const { metric } = selector;
  const exporter = EXTERNAL_METRICS[metric];
  if (!exposition.names.has(metric)) {
    if (SETTING_METRICS[metric] !== undefined) return null;
    if (exporter === undefined) return `${metric} is not on the service's /metrics, nor a known exporter's`;
    if (metricsFrom !== undefined && !metricsFrom.includes(exporter))
      return `${metric} comes from ${exporter}, which metrics_from does not name`;
    return null;
  }
  const seen = exposition.labels.get(metric);
  for (const { label, op, value } of selector.matchers) {
    if (TARGET_LABELS.has(label)) continue;
    if (!seen?.has(label)) return `${metric} has no label "${label}" on /metrics (it has: ${[...(seen ?? [])].join(", ") || "none"})`;
    // A route is Fastify's route pattern: a misspelt one would match nothing, silently.
    if (label === "route" && op === "=" && !exposition.values.get(`${metric}/route`)?.has(value))
      return `${metric} never has route="${value}"`;
  }
  return null;
}

describe("the metrics the rules and the dashboard query", () => {
  it("finds 24 alerting rules in deploy/alerts.yml, each with a severity, a summary, a runbook and where its metrics come from", () => {
    expect(rules.map((rule) => rule.alert).sort()).toEqual(
      [
        "PointsLedgerBackupTooOld",
        "PointsLedgerBatchesFailingToFinalize",
        "PointsLedgerBatchesOverdue",
        "PointsLedgerDatabaseErrors",
        "PointsLedgerDatabaseUnavailable",
        "PointsLedgerDiskFillingUp",
        "PointsLedgerDiskSpaceLow",
        "PointsLedgerDown",
        "PointsLedgerFinalizerLagHigh",
        "PointsLedgerNoPrimary",
        "PointsLedgerNotReady",
        "PointsLedgerPatroniNoLeader",
        "PointsLedgerPatroniNoSyncStandby",
        "PointsLedgerPatroniReplicaLagging",
        "PointsLedgerProjectionLagHigh",
        "PointsLedgerPublisherLagHigh",
        "PointsLedgerRateLimited",
        "PointsLedgerReplicaLagHigh",
        "PointsLedgerServerErrors",
        "PointsLedgerShedding",
        "PointsLedgerTransparencyLogStalled",
        "PointsLedgerWebhookBacklog",
        "PointsLedgerWebhookDeliveriesFailing",
        "PointsLedgerWebhooksGivenUp",
      ].sort(),
    );
    for (const rule of rules)
      expect(Object.keys(rule.annotations).sort(), rule.alert).toEqual(["description", "metrics_from", "runbook", "summary"]);
  });

  it("each rule queries only metrics that /metrics exports (with the labels it matches) or a named exporter's", () => {
    const problems = rules.flatMap((rule) =>
      selectors(rule.expr).flatMap((selector) => {
        const problem = selectorProblem(selector, rule.annotations.metrics_from);
        return problem === null ? [] : [`${rule.alert}: ${problem}`];
      }),
    );
    expect(problems).toEqual([]);
    // And a rule on the service's own metrics says so.
    for (const rule of rules) {
      const ours = selectors(rule.expr).some((selector) => selector.metric.startsWith("points_"));
      if (ours) expect(rule.annotations.metrics_from, rule.alert).toContain("points-ledger /metrics");
    }
  });

  it("the dashboard queries only metrics that /metrics exports (with the labels it matches) or a named exporter's", () => {
    expect(dashboardQueries.length).toBeGreaterThan(10);
    const problems = dashboardQueries.flatMap(({ where, expr }) => {
      const found = selectors(expr);
      if (found.length === 0) return [`${where}: no metric in "${expr}"`];
      return found.flatMap((selector) => {
        const problem = selectorProblem(selector, undefined);
        return problem === null ? [] : [`${where}: ${problem}`];
      });
    });
    expect(problems).toEqual([]);
  });
});

describe("deploy/grafana-dashboard.json", () => {
  it("is a dashboard Grafana imports: title, uid, schema version, a data source variable, panels with unique ids and a place each", () => {
    expect(dashboard).toMatchObject({ title: "points-ledger", uid: "points-ledger" });
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.templating.list.find((variable) => variable.type === "datasource")).toMatchObject({
      name: "datasource",
      query: "prometheus",
    });
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels) {
      expect(panel.gridPos, panel.title).toMatchObject({
        x: expect.any(Number),
        y: expect.any(Number),
        w: expect.any(Number),
        h: expect.any(Number),
      });
      if (panel.type !== "row") expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    }
  });
});

describe("docs/operations.md", () => {
  it("has a heading for each alert's runbook link", () => {
    const doc = readFileSync(join(REPO_ROOT, "docs/operations.md"), "utf8");
    const anchors = new Set([...doc.matchAll(/^#{1,6} (.+)$/gm)].map((heading) => headingAnchor(heading[1]!)));
    const missing = rules.filter((rule) => !anchors.has(rule.annotations.runbook!.replace(/^docs\/operations\.md#/, "")));
    expect(missing.map((rule) => `${rule.alert} → ${rule.annotations.runbook}`)).toEqual([]);
    for (const rule of rules) expect(doc, rule.alert).toContain(rule.alert);
  });
});

// ---------------------------------------------------------------------------------------------
// promtool.

describe.skipIf(!promtool)("promtool", () => {
  it("`promtool check rules deploy/alerts.yml` accepts the file and finds its 24 rules", () => {
    const result = spawnSync(promtool!, ["check", "rules", RULES_PATH], { encoding: "utf8" });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it("`promtool test rules`: each alert's expression, as shipped, holds on its failure and is empty when healthy", () => {
    const tests = rules.flatMap((rule) => {
      const scenario = SCENARIOS[rule.alert];
      if (!scenario) throw new Error(`no scenario for ${rule.alert}: add one to SCENARIOS`);
      const check = (series: Series[], firing: boolean) => ({
        interval: scenario.interval ?? "1m",
        input_series: series.map(([name, values]) => ({ series: name, values })),
        promql_expr_test: [
          { expr: `count(${rule.expr})`, eval_time: scenario.evalTime, exp_samples: firing ? [{ labels: "{}", value: 1 }] : [] },
        ],
      });
      return [
        check(scenario.failing, true),
        ...(scenario.alsoFailing ?? []).map((series) => check(series, true)),
        check(scenario.healthy, false),
        ...(scenario.alsoHealthy ?? []).map((series) => check(series, false)),
      ];
    });
    // JSON is YAML: promtool reads it as is.
    const path = join(dir, "alerts.test.yml");
    writeFileSync(path, JSON.stringify({ rule_files: [RULES_PATH], evaluation_interval: "1m", tests }, null, 2));
    const result = spawnSync(promtool!, ["test", "rules", path], { encoding: "utf8" });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("SUCCESS");
  });
});

describe.skipIf(!promtool)("deploy/prometheus.yml", () => {
  it("`promtool check config` accepts it with deploy/alerts.yml as its rule file; it scrapes every job the rules read and sends to Alertmanager", () => {
    const config = readDeployFile("prometheus.yml");
    const path = join(dir, "prometheus.yml");
    writeFileSync(path, config.replace("\n  - /etc/prometheus/points-ledger.yml\n", `\n  - ${RULES_PATH}\n`));
    const result = spawnSync(promtool!, ["check", "config", path], { encoding: "utf8" });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    for (const job of ["points-ledger", "points-ledger-readyz", "node", "patroni"]) expect(config).toContain(`- job_name: ${job}\n`);
    expect(config).toContain('targets: ["127.0.0.1:9093"]');
  });
});

/** Debian's Patroni (3.0.2) writes its /metrics in patroni/api.py, do_GET_metrics. */
const PATRONI_API = "/usr/lib/python3/dist-packages/patroni/api.py";
const patroniInstalled = existsSync(PATRONI_API);
if (!patroniInstalled) console.warn(`deploy-alerts: Patroni metric names not checked: ${PATRONI_API} absent (apt-get install -y patroni)`);

describe.skipIf(!patroniInstalled)("the Patroni rules", () => {
  it("query only metrics the installed Patroni's GET /metrics writes", () => {
    const written = new Set([...readFileSync(PATRONI_API, "utf8").matchAll(/"(patroni_\w+)\s?\{0\}/g)].map((match) => match[1]!));
    expect(written.size).toBeGreaterThan(10);
    const used = Object.keys(EXTERNAL_METRICS).filter((metric) => metric.startsWith("patroni_"));
    expect(used.filter((metric) => !written.has(metric))).toEqual([]);
    const queried = rules
      .flatMap((rule) => selectors(rule.expr).map((selector) => selector.metric))
      .filter((metric) => metric.startsWith("patroni_"));
    expect(new Set(queried)).toEqual(new Set(used));
  });
});

/** A series and its values in promtool's expanding notation (`0+1x10`: 0, 1, …, 10 one interval apart). */
type Series = [string, string];
interface Scenario {
  evalTime: string;
  /** Between two values of a series (1m unless said): promtool evaluates every rule at each step, so a day of minutes is slow. */
  interval?: string;
  failing: Series[];
  healthy: Series[];
  /** Other situations the rule names (another branch of its expression), and other healthy ones. */
  alsoFailing?: Series[][];
  alsoHealthy?: Series[][];
}

const SVC = 'job="points-ledger", instance="a:8080"';
const HTTP = `points_http_requests_total{${SVC}, method="PUT", route="/v1/contracts/:contractAddress/batches/:batchId"`;
const NODE = 'job="node", instance="a:9100", fstype="ext4", mountpoint="/"';
const LAG_BUCKETS = ["0.05", "0.1", "0.25", "0.5", "1", "2", "5", "10", "60", "600", "+Inf"];
/** Ten observations a minute of the lag histogram `name`, each `lagSeconds`. */
const lagSeries = (name: string, lagSeconds: number): Series[] =>
  LAG_BUCKETS.map((le) => [`${name}_bucket{${SVC}, le="${le}"}`, le === "+Inf" || Number(le) >= lagSeconds ? "0+10x20" : "0x20"]);
/** A Patroni node's series: `patroni(1, "patroni_primary")`. */
const patroni = (node: number, metric: string): string =>
  `${metric}{job="patroni", instance="10.0.0.1${node}:8008", scope="points-ledger"}`;
/** A three-node Patroni cluster whose leader is `leader` (0: none) and synchronous standby `sync` (0: none), for 10 minutes. */
const cluster = (leader: number, sync: number): Series[] =>
  [1, 2, 3].flatMap((node): Series[] => [
    [patroni(node, "up"), "1x10"],
    [patroni(node, "patroni_primary"), node === leader ? "1x10" : "0x10"],
    [patroni(node, "patroni_sync_standby"), node === sync ? "1x10" : "0x10"],
  ]);
const DAY_SECONDS = 24 * 3600;
const deliveries = (perMinute: Record<string, number>): Series[] =>
  Object.entries(perMinute).map(([result, n]) => [`points_webhook_deliveries_total{${SVC}, result="${result}"}`, `0+${n}x60`]);

const SCENARIOS: Record<string, Scenario> = {
  PointsLedgerDown: { evalTime: "5m", failing: [[`up{${SVC}}`, "0x10"]], healthy: [[`up{${SVC}}`, "1x10"]] },
  PointsLedgerNotReady: {
    evalTime: "5m",
    failing: [['probe_success{job="points-ledger-readyz", instance="https://points.example.com/readyz"}', "0x10"]],
    healthy: [['probe_success{job="points-ledger-readyz", instance="https://points.example.com/readyz"}', "1x10"]],
  },
  PointsLedgerDatabaseUnavailable: {
    evalTime: "10m",
    failing: [
      [`points_database_up{${SVC}}`, "1 1 1 0x10"],
      [`points_database_up{job="points-ledger", instance="b:8080"}`, "1x13"],
    ],
    // A database that went away for a minute and came back.
    healthy: [[`points_database_up{${SVC}}`, "1 1 1 0 1x10"]],
  },
  PointsLedgerDatabaseErrors: {
    evalTime: "15m",
    // Writes reaching a standby: 30 failures a minute, every minute.
    failing: [[`points_database_errors_total{${SVC}, kind="read_only"}`, "0+30x20"]],
    // One restart's burst, then nothing; and lock conflicts, which are not an outage.
    healthy: [
      [`points_database_errors_total{${SVC}, kind="shutdown"}`, "0 40 40x18"],
      [`points_database_errors_total{${SVC}, kind="conflict"}`, "0+30x20"],
    ],
  },
  PointsLedgerBatchesOverdue: {
    evalTime: "10m",
    failing: [[`points_batches_overdue{${SVC}}`, "0 0 3 5 8 13x10"]],
    // An overdue batch that the finalizer caught up with within minutes.
    healthy: [[`points_batches_overdue{${SVC}}`, "0 2 1 0x10"]],
  },
  PointsLedgerTransparencyLogStalled: {
    evalTime: "10m",
    // The log stopped: its oldest unlogged event ages a minute a minute.
    failing: [[`points_log_lag_seconds{${SVC}}`, "0 0+60x15"]],
    // A log that keeps up, with one slow minute.
    healthy: [[`points_log_lag_seconds{${SVC}}`, "0 1 0 45 0x10"]],
  },
  PointsLedgerFinalizerLagHigh: {
    evalTime: "15m",
    failing: lagSeries("points_finalizer_lag_seconds", 8),
    healthy: lagSeries("points_finalizer_lag_seconds", 0.03),
  },
  PointsLedgerProjectionLagHigh: {
    evalTime: "15m",
    failing: lagSeries("points_projection_lag_seconds", 300),
    healthy: lagSeries("points_projection_lag_seconds", 2),
  },
  PointsLedgerBatchesFailingToFinalize: {
    evalTime: "20m",
    failing: [[`points_finalize_failing_batches{${SVC}}`, "2x30"]],
    healthy: [[`points_finalize_failing_batches{${SVC}}`, "0x30"]],
  },
  PointsLedgerServerErrors: {
    evalTime: "10m",
    failing: [[`${HTTP}, status="500"}`, "0+1x10"]],
    healthy: [
      [`${HTTP}, status="500"}`, "4x10"],
      [`${HTTP}, status="200"}`, "0+100x10"],
    ],
  },
  PointsLedgerShedding: {
    evalTime: "10m",
    failing: [
      [`${HTTP}, status="503"}`, "0+60x10"],
      [`${HTTP}, status="200"}`, "0+60x10"],
    ],
    healthy: [
      [`${HTTP}, status="503"}`, "0+1x10"],
      [`${HTTP}, status="200"}`, "0+100x10"],
    ],
  },
  PointsLedgerRateLimited: {
    evalTime: "20m",
    failing: [
      [`${HTTP}, status="429"}`, "0+60x20"],
      [`${HTTP}, status="200"}`, "0+60x20"],
    ],
    healthy: [
      [`${HTTP}, status="429"}`, "0+1x20"],
      [`${HTTP}, status="200"}`, "0+100x20"],
    ],
  },
  PointsLedgerWebhookDeliveriesFailing: {
    evalTime: "40m",
    failing: deliveries({ succeeded: 1, retrying: 10 }),
    healthy: deliveries({ succeeded: 10, retrying: 1 }),
  },
  PointsLedgerWebhooksGivenUp: {
    evalTime: "40m",
    failing: deliveries({ succeeded: 10, failed: 1 }),
    healthy: [...deliveries({ succeeded: 10 }), [`points_webhook_deliveries_total{${SVC}, result="failed"}`, "2x60"]],
  },
  PointsLedgerWebhookBacklog: {
    evalTime: "20m",
    failing: [[`points_webhook_oldest_pending_delivery_seconds{${SVC}}`, "7200x30"]],
    healthy: [[`points_webhook_oldest_pending_delivery_seconds{${SVC}}`, "60x30"]],
  },
  PointsLedgerPublisherLagHigh: {
    evalTime: "15m",
    // A broker down for good: the oldest unpublished event ages a minute a minute.
    failing: [[`points_ledger_publisher_lag_seconds{${SVC}, kind="nats"}`, "0+60x20"]],
    // A broker away for two minutes, then caught up.
    healthy: [[`points_ledger_publisher_lag_seconds{${SVC}, kind="amqp"}`, "0 60 120 0x17"]],
  },
  PointsLedgerDiskSpaceLow: {
    evalTime: "10m",
    failing: [
      [`node_filesystem_avail_bytes{${NODE}}`, "5000000000x20"],
      [`node_filesystem_size_bytes{${NODE}}`, "100000000000x20"],
    ],
    healthy: [
      [`node_filesystem_avail_bytes{${NODE}}`, "50000000000x20"],
      [`node_filesystem_size_bytes{${NODE}}`, "100000000000x20"],
    ],
  },
  PointsLedgerDiskFillingUp: {
    evalTime: "6h",
    // 1 GB less every minute from 1 TB: empty in under a day.
    failing: [[`node_filesystem_avail_bytes{${NODE}}`, "1000000000000-1000000000x400"]],
    healthy: [[`node_filesystem_avail_bytes{${NODE}}`, "1000000000000x400"]],
  },
  PointsLedgerNoPrimary: {
    evalTime: "5m",
    // Every instance: the address reaches a standby, or nothing.
    failing: [
      [`points_database_up{${SVC}}`, "1 0x10"],
      [`points_database_up{job="points-ledger", instance="b:8080"}`, "1 0x10"],
    ],
    // One instance's own trouble (PointsLedgerDatabaseUnavailable's), and a failover done in 30 s.
    healthy: [
      [`points_database_up{${SVC}}`, "1 0x10"],
      [`points_database_up{job="points-ledger", instance="b:8080"}`, "1x10"],
    ],
    alsoHealthy: [[[`points_database_up{${SVC}}`, "1 1 1 0 1x10"]]],
  },
  PointsLedgerReplicaLagHigh: {
    evalTime: "10m",
    failing: [[`points_database_replica_lag_seconds{${SVC}}`, "0 30x20"]],
    // A replica that fell behind for a minute (a long query held its replay) and caught up.
    healthy: [[`points_database_replica_lag_seconds{${SVC}}`, "0 1 12 0.5x16"]],
  },
  PointsLedgerBackupTooOld: {
    // promtool's time() starts at 0: the backups are recorded at promtool times, one value an hour.
    evalTime: "30h",
    interval: "1h",
    // Recorded at 1 h, then no backup again.
    failing: [
      [`up{${SVC}}`, "1x30"],
      [`points_backup_last_success_timestamp_seconds{${SVC}}`, "3600x30"],
    ],
    alsoFailing: [
      // The service answers but reports no backup time (an older version, a database unreadable since the start).
      [[`up{${SVC}}`, "1x30"]],
      // A ledger with no backup ever recorded: 0. Evaluated at 30 h, its age is 30 h.
      [
        [`up{${SVC}}`, "1x30"],
        [`points_backup_last_success_timestamp_seconds{${SVC}}`, "0x30"],
      ],
    ],
    // A backup a day: recorded at 1 h and at 25 h.
    healthy: [
      [`up{${SVC}}`, "1x30"],
      [`points_backup_last_success_timestamp_seconds{${SVC}}`, `3600x24 ${3600 + DAY_SECONDS}x6`],
    ],
    // The service down: PointsLedgerDown's, not a backup alert.
    alsoHealthy: [[[`up{${SVC}}`, "0x30"]]],
  },
  PointsLedgerPatroniNoLeader: {
    evalTime: "5m",
    failing: cluster(0, 0),
    alsoFailing: [
      // Every node unreachable: nothing to read patroni_primary from.
      [1, 2, 3].map((node): Series => [patroni(node, "up"), "0x10"]),
      // Two nodes claim to be primary.
      [
        ...cluster(1, 2).filter(([name]) => !name.startsWith("patroni_primary")),
        [patroni(1, "patroni_primary"), "1x10"],
        [patroni(2, "patroni_primary"), "1x10"],
      ],
    ],
    healthy: cluster(1, 2),
    // A managed database: no Patroni scraped at all.
    alsoHealthy: [[[`up{${SVC}}`, "1x10"]]],
  },
  PointsLedgerPatroniNoSyncStandby: {
    evalTime: "5m",
    failing: cluster(1, 0),
    healthy: cluster(1, 2),
    // No leader at all is PointsLedgerPatroniNoLeader's.
    alsoHealthy: [cluster(0, 0)],
  },
  PointsLedgerPatroniReplicaLagging: {
    evalTime: "15m",
    // The primary writes 100 MB of WAL a minute; node 2 stopped replaying, node 3 keeps up.
    failing: [
      [patroni(1, "patroni_replica"), "0x20"],
      [patroni(1, "patroni_xlog_location"), "0+100000000x20"],
      [patroni(1, "patroni_xlog_replayed_location"), "0x20"],
      [patroni(2, "patroni_replica"), "1x20"],
      [patroni(2, "patroni_xlog_location"), "0x20"],
      [patroni(2, "patroni_xlog_replayed_location"), "100000000x20"],
    ],
    // The primary's own replayed location is 0 (it is not a replica): no alert for it.
    healthy: [
      [patroni(1, "patroni_replica"), "0x20"],
      [patroni(1, "patroni_xlog_location"), "0+100000000x20"],
      [patroni(1, "patroni_xlog_replayed_location"), "0x20"],
      [patroni(3, "patroni_replica"), "1x20"],
      [patroni(3, "patroni_xlog_location"), "0x20"],
      [patroni(3, "patroni_xlog_replayed_location"), "0+100000000x20"],
    ],
  },
};
