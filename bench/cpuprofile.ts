import { readFileSync } from "node:fs";
import { basename } from "node:path";

/**
 * Top self-time functions of a V8 `.cpuprofile` (from `--cpu-prof`, e.g. `npm run bench --
 * --cpu-prof DIR`): `node dist/bench/cpuprofile.js FILE [N]`. Self time is the time a function
 * was on top of the stack, so the rows add up to the whole profile.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

function label(frame: ProfileNode["callFrame"]): string {
  const where = frame.url === "" ? "" : ` ${basename(frame.url.replace(/^file:\/\//, ""))}:${frame.lineNumber + 1}`;
  return `${frame.functionName || "(anonymous)"}${where}`;
}

export function topSelfTimes(profile: Profile, count: number): SelfTime[] {
  const labels = new Map(profile.nodes.map((node) => [node.id, label(node.callFrame)]));
  const byLabel = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const name = labels.get(profile.samples[i]!) ?? "(unknown)";
    const deltaUs = Math.max(0, profile.timeDeltas[i] ?? 0);
    byLabel.set(name, (byLabel.get(name) ?? 0) + deltaUs);
    totalUs += deltaUs;
  }
  return [...byLabel]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((us / totalUs) * 1000) / 10 }));
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) {
  const [file, count] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node dist/bench/cpuprofile.js FILE.cpuprofile [N]");
    process.exitCode = 2;
  } else {
    const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
    for (const row of topSelfTimes(profile, Number(count ?? 25))) {
      console.log(`${row.share.toFixed(1).padStart(5)}%  ${String(row.ms).padStart(7)} ms  ${row.name}`);
    }
  }
}
