import { readFileSync } from "node:fs";

/**
 * CPU use during a phase, from Linux's /proc: how busy each core of the machine was (the load
 * client included: it runs in the bench process), and how much CPU time the server processes
 * used, so the summary shows whether both cores work. Null fields where /proc is not there.
 */

interface CoreTimes {
  busy: number;
  total: number;
}

function readCores(): CoreTimes[] | null {
  try {
    return readFileSync("/proc/stat", "utf8")
      .split("\n")
      .filter((line) => /^cpu[0-9]+ /.test(line))
      .map((line) => {
        // user nice system idle iowait irq softirq steal …, in clock ticks
        const ticks = line.trim().split(/\s+/).slice(1).map(Number);
        const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
        const total = ticks.slice(0, 8).reduce((sum, tick) => sum + tick, 0);
        return { busy: total - idle, total };
      });
  } catch {
    return null;
  }
}

/** utime + stime of a process and all its threads, in clock ticks. */
function processTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** Linux's USER_HZ: /proc times are in hundredths of a second on every common kernel. */
const TICKS_PER_SECOND = 100;

export interface CpuUse {
  /** Per core, the share of the phase it was busy (0–1). */
  perCoreBusy: number[] | null;
  /** CPU seconds the server processes used, and per second of the phase (2.0 = two whole cores). */
  serverCpuSeconds: number | null;
  serverCoresUsed: number | null;
}

/** Starts measuring; the returned function ends the phase and reports it. */
export function measureCpu(serverPids: number[]): () => CpuUse {
  const startedMs = performance.now();
  const coresBefore = readCores();
  const ticksBefore = serverPids.map(processTicks);
  return () => {
    const seconds = (performance.now() - startedMs) / 1000;
    const coresAfter = readCores();
    const ticksAfter = serverPids.map(processTicks);
    const perCoreBusy =
      coresBefore && coresAfter && coresBefore.length === coresAfter.length
        ? coresAfter.map((after, i) => round((after.busy - coresBefore[i]!.busy) / Math.max(1, after.total - coresBefore[i]!.total)))
        : null;
    const used = ticksAfter.every((t, i) => t !== null && ticksBefore[i] !== null)
      ? ticksAfter.reduce<number>((sum, t, i) => sum + (t! - ticksBefore[i]!), 0) / TICKS_PER_SECOND
      : null;
    return {
      perCoreBusy,
      serverCpuSeconds: used === null ? null : round(used),
      serverCoresUsed: used === null ? null : round(used / seconds),
    };
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
