import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import type { LedgerEvent, Parameters, PointsClient } from "../../client/index.js";
import type { StoredSession } from "./lib/session-store.js";
import { errorText } from "./lib/errors.js";

export interface FeedEntry {
  cursor: string;
  event: LedgerEvent;
}

export interface ConsoleState {
  client: PointsClient;
  session: StoredSession;
  parameters: Parameters;
  /** Grows with every event of the live stream: screens showing ledger state reload on it. */
  ledgerVersion: number;
  /** The newest events first, bounded. */
  feed: FeedEntry[];
  feedStatus: "connecting" | "live" | "reconnecting" | "stopped";
  /** Turns an error into its text; a 401 ends the session and returns to sign-in. */
  fail(error: unknown): string;
}

export const ConsoleContext = createContext<ConsoleState | null>(null);

/**
 * How screens outside the operator console (the admin shell) turn an error into text: the admin
 * shell ends its session on a refused admin token. Inside the operator console, its `fail` wins.
 */
export const FailContext = createContext<(error: unknown) => string>(errorText);

export function useConsole(): ConsoleState {
  const state = useContext(ConsoleContext);
  if (state === null) throw new Error("useConsole outside the signed-in console");
  return state;
}

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `deps` change (and on reload); keeps the last data while reloading. */
/** The `fail` in force: the operator console's, else the FailContext's. */
export function useFail(): (error: unknown) => string {
  const outsideFail = useContext(FailContext);
  return useContext(ConsoleContext)?.fail ?? outsideFail;
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const fail = useFail();
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setLoading(true);
    load().then(
      (value) => {
        if (!current) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!current) return;
        setError(fail(failure));
        setLoading(false);
      },
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  return { data, error, loading, reload: () => setRound((r) => r + 1) };
}

/** The current time, ticking every second while mounted (countdowns). */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

/** "in 1 h 2 min 3 s", "5 s ago" */
export function countdown(targetIso: string, nowMs: number): string {
  const deltaS = Math.round((Date.parse(targetIso) - nowMs) / 1000);
  const abs = Math.abs(deltaS);
  const parts = [];
  const days = Math.floor(abs / 86400);
  const hours = Math.floor((abs % 86400) / 3600);
  const minutes = Math.floor((abs % 3600) / 60);
  if (days) parts.push(`${days} d`);
  if (hours) parts.push(`${hours} h`);
  if (minutes) parts.push(`${minutes} min`);
  parts.push(`${abs % 60} s`);
  const text = parts.slice(0, 3).join(" ");
  return deltaS >= 0 ? `in ${text}` : `${text} ago`;
}

export function shortTime(iso: string | null): string {
  return iso === null ? "—" : iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC");
}

/** `value`, changing at most once per `intervalMs`; the last change always comes through. */
export function useThrottled<T>(value: T, intervalMs: number): T {
  const [shown, setShown] = useState(value);
  const lastMs = useRef(0);
  useEffect(() => {
    const waitMs = Math.max(0, lastMs.current + intervalMs - Date.now());
    const timer = setTimeout(() => {
      lastMs.current = Date.now();
      setShown(value);
    }, waitMs);
    return () => clearTimeout(timer);
  }, [value]);
  return shown;
}
