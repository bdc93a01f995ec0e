/**
 * Just enough reading of deploy/alerts.yml, PromQL and the Prometheus text format to check that
 * the alert rules and the dashboard name only metrics that exist. promtool validates the rule
 * file itself (test/deploy-alerts.test.ts); this reads the shape that file is written in and
 * fails loudly on any other.
 */

export interface AlertRule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** The alerting rules of a rule file: `- alert:`, `expr:` (one line or a `|` block), `annotations:` of `key: "value"` lines. */
export function parseAlertRules(yaml: string): AlertRule[] {
  const rules: AlertRule[] = [];
  const lines = yaml.split("\n");
  let rule: AlertRule | undefined;
  let inAnnotations = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const alert = /^\s*- alert: (\S+)$/.exec(line);
    if (alert) {
      rule = { alert: alert[1]!, expr: "", annotations: {} };
      rules.push(rule);
      inAnnotations = -1;
      continue;
    }
    if (!rule) continue;
    const expr = /^(\s*)expr: (.*)$/.exec(line);
    if (expr) {
      if (expr[2] !== "|") {
        rule.expr = expr[2]!;
        continue;
      }
      const block: string[] = [];
      while (i + 1 < lines.length && (lines[i + 1]!.trim() === "" || indentOf(lines[i + 1]!) > expr[1]!.length))
        block.push(lines[++i]!.trim());
      rule.expr = block.join(" ").trim();
      continue;
    }
    if (/^\s*annotations:$/.test(line)) {
      inAnnotations = indentOf(line);
      continue;
    }
    const annotation = /^(\s*)([a-z_]+): "(.*)"$/.exec(line);
    if (inAnnotations >= 0 && annotation && annotation[1]!.length > inAnnotations) rule.annotations[annotation[2]!] = annotation[3]!;
    else if (line.trim() !== "" && indentOf(line) <= inAnnotations) inAnnotations = -1;
  }
  for (const each of rules) if (each.expr === "") throw new Error(`alert ${each.alert}: no expr read`);
  return rules;
}

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);

export interface Selector {
  metric: string;
  matchers: { label: string; op: string; value: string }[];
}

/** Every `metric{…}` or bare metric name in an expression, with its label matchers. */
export function selectors(expr: string): Selector[] {
  const found: Selector[] = [];
  const text = expr
    // Grouping clauses hold label names, not metrics.
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    // Range and subquery durations, Grafana's $__rate_interval included.
    .replace(/\[[^\]]*\]/g, " ");
  const token = /(?<![\w$.:])([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?(\s*\()?/g;
  for (const match of text.matchAll(token)) {
    const [, name, braces, call] = match;
    if (call !== undefined || KEYWORDS.has(name!)) continue;
    const matchers = [...(braces ?? "").matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map((m) => ({
      label: m[1]!,
      op: m[2]!,
      value: m[3]!,
    }));
    found.push({ metric: name!, matchers });
  }
  return found;
}

export interface Exposition {
  /** Every name a query may use: each TYPE'd metric, and a histogram's _bucket, _sum and _count. */
  names: Set<string>;
  /** Label names seen on each name's samples. */
  labels: Map<string, Set<string>>;
  /** Label values seen, by name and label. */
  values: Map<string, Set<string>>;
}

/** Reads the Prometheus text exposition format (what GET /metrics answers). */
export function parseExposition(text: string): Exposition {
  const exposition: Exposition = { names: new Set(), labels: new Map(), values: new Map() };
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type;
      exposition.names.add(name!);
      if (kind === "histogram" || kind === "summary") for (const suffix of ["_sum", "_count"]) exposition.names.add(name! + suffix);
      if (kind === "histogram") exposition.names.add(`${name!}_bucket`);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const [, name, labelText] = sample;
    exposition.names.add(name!);
    const labels = exposition.labels.get(name!) ?? new Set<string>();
    exposition.labels.set(name!, labels);
    for (const label of (labelText ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels.add(label[1]!);
      const key = `${name!}/${label[1]!}`;
      exposition.values.set(key, (exposition.values.get(key) ?? new Set()).add(label[2]!));
    }
  }
  return exposition;
}

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}
