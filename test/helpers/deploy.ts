import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Reading the files of deploy/ as the tools that consume them do: a systemd unit (sections of
 * `Key=value` lines, a key may repeat), an EnvironmentFile (`KEY=value`, `#` comments), and
 * whether an external tool (systemd-analyze, nginx, openssl, promtool) is installed.
 */

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const DEPLOY_DIR = join(REPO_ROOT, "deploy");

export function readDeployFile(name: string): string {
  return readFileSync(join(DEPLOY_DIR, name), "utf8");
}

/** Section → key → every value the key was given, in order (systemd appends most repeated keys). */
export type UnitFile = Record<string, Record<string, string[]>>;

export function parseUnit(text: string): UnitFile {
  const unit: UnitFile = {};
  let section: Record<string, string[]> | undefined;
  // A trailing backslash continues a line (systemd.syntax(7)).
  for (const rawLine of text.replace(/\\\n/g, " ").split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      section = unit[header[1]!] ??= {};
      continue;
    }
    const equals = line.indexOf("=");
    if (equals <= 0 || section === undefined) throw new Error(`not a unit file line: ${line}`);
    const key = line.slice(0, equals).trim();
    (section[key] ??= []).push(line.slice(equals + 1).trim());
  }
  return unit;
}

/** The value a key ends up with when a later assignment replaces an earlier one. */
export function lastValue(unit: UnitFile, section: string, key: string): string | undefined {
  return unit[section]?.[key]?.at(-1);
}

const TIME_UNITS_SECONDS: Record<string, number> = { ms: 0.001, s: 1, sec: 1, m: 60, min: 60, h: 3600, hr: 3600 };

/** A systemd time span (`20s`, `1min 30s`, `90`: seconds when no unit) in seconds. */
export function timeSpanSeconds(span: string): number {
  let seconds = 0;
  const parts = span.trim().split(/\s+/);
  for (const part of parts) {
    const match = /^(\d+(?:\.\d+)?)([a-z]*)$/.exec(part);
    const factor = match ? TIME_UNITS_SECONDS[match[2] === "" ? "s" : match[2]!] : undefined;
    if (!match || factor === undefined) throw new Error(`not a time span this test reads: "${span}"`);
    seconds += Number(match[1]) * factor;
  }
  return seconds;
}

/** An EnvironmentFile: `KEY=value` lines; blank lines and `#` comments skipped. */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match) throw new Error(`not an environment file line: ${line}`);
    env[match[1]!] = match[2]!.replace(/^"(.*)"$/, "$1");
  }
  return env;
}

/** The path of an installed command, or undefined. */
export function which(command: string): string | undefined {
  const found = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" });
  const path = found.stdout.trim();
  return found.status === 0 && path !== "" ? path : undefined;
}
