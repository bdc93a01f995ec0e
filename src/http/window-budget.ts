import type { FastifyRequest } from "fastify";
import type { AddressKey } from "../domain/address.js";
import type { PointType } from "../domain/batch.js";
import { isAllTime, type DayWindow } from "../domain/leaderboard.js";
import { rateLimited } from "../domain/errors.js";
import {
  MAX_TRACKED_WINDOW_BOARDS,
  MAX_WINDOW_BUDGET_KEYS,
  NEW_WINDOWS_CALLER_BURST,
  NEW_WINDOWS_CONTRACT_BURST,
  WINDOW_BOARDS_PER_BOARD,
} from "../domain/limits.js";
import type { AppContext } from "./context.js";

/**
 * A budget of new leaderboard windows (issue 30). A window whose board is not kept is read from
 * the window's batches, summed, and asks the window job to build its board: the most expensive
 * read there is. One caller asking for 300 distinct windows in 3.7 s with PUBLIC_READS=true took
 * another tenant's submit p50 from 15 to 282 ms. So a read of a window that is not one of the last
 * WINDOW_BOARDS_PER_BOARD windows asked of that board in this process (the ones the store keeps)
 * takes a token from the caller's bucket (NEW_WINDOWS_CALLER_BURST, refilled at
 * NEW_WINDOWS_PER_MINUTE_PER_CALLER) and from the contract's (NEW_WINDOWS_CONTRACT_BURST,
 * NEW_WINDOWS_PER_MINUTE_PER_CONTRACT: many callers, one contract); with either empty it is 429
 * RATE_LIMITED with Retry-After (when a token is back), before the store is read. Buckets, not
 * a count per minute: a minute's 30 windows asked at once still took the other tenant's submit
 * p50 from 8 to 44 ms (test/window-budget.test.ts). All-time boards, the kept windows and the
 * admin token pay nothing.
 *
 * The caller is what authenticated the read: an API key, the contract's operator token, or
 * without a token the client's address (TRUST_PROXY honoured). Like every rate limit here, the
 * counts are per process: N instances allow up to N times the budget.
 */
export type WindowBudget = (request: FastifyRequest, contract: AddressKey, pointType: PointType, window: DayWindow) => Promise<void>;

export function windowBudget(ctx: AppContext): WindowBudget {
  const perCaller = new TokenBuckets(NEW_WINDOWS_CALLER_BURST, ctx.config.newWindowsPerMinutePerCaller);
  const perContract = new TokenBuckets(NEW_WINDOWS_CONTRACT_BURST, ctx.config.newWindowsPerMinutePerContract);
  const recent = new RecentWindows();
  return async (request, contract, pointType, window) => {
    if (isAllTime(window) || request.actor?.type === "admin") return;
    const board = `${contract}:${pointType}`;
    const key = `${window.fromDay ?? ""}..${window.toDay ?? ""}`;
    if (recent.has(board, key)) return;
    const nowMs = performance.now();
    const caller = callerOf(request);
    // The caller's budget first: one caller past its own never spends the contract's.
    const waitMs = perCaller.waitMs(caller, nowMs) || perContract.waitMs(contract, nowMs);
    if (waitMs > 0) throw rateLimited(Math.ceil(waitMs / 1000), "too many new leaderboard windows asked for, retry later");
    perCaller.take(caller, nowMs);
    perContract.take(contract, nowMs);
    recent.add(board, key);
  };
}

function callerOf(request: FastifyRequest): string {
  const grant = request.grant;
  if (grant?.kind === "api_key") return `api-key:${grant.apiKey.id}`;
  if (grant?.kind === "operator") return `operator:${grant.contract}`;
  return `address:${request.ip}`;
}

/**
 * Token buckets by key: each holds up to `burst` tokens and gains `perMinute` a minute; a bucket
 * back to full is the same as none, so the map forgets the least recently used past
 * MAX_WINDOW_BUDGET_KEYS (a forgotten key starts full again: a caller gains at most one burst).
 */
class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();
  private readonly perMs: number;

  constructor(
    private readonly burst: number,
    perMinute: number,
  ) {
    this.perMs = perMinute / 60_000;
  }

  /** How long until the bucket of `key` holds a token (0: it holds one now). */
  waitMs(key: string, nowMs: number): number {
    const tokens = this.tokensAt(key, nowMs);
    return tokens >= 1 ? 0 : Math.max(1, (1 - tokens) / this.perMs);
  }

  take(key: string, nowMs: number): void {
    const tokens = this.tokensAt(key, nowMs) - 1;
    this.buckets.delete(key);
    this.buckets.set(key, { tokens, atMs: nowMs });
    if (this.buckets.size > MAX_WINDOW_BUDGET_KEYS) this.buckets.delete(this.buckets.keys().next().value!);
  }

  private tokensAt(key: string, nowMs: number): number {
    const bucket = this.buckets.get(key);
    if (bucket === undefined) return this.burst;
    return Math.min(this.burst, bucket.tokens + (nowMs - bucket.atMs) * this.perMs);
  }
}

/**
 * The last WINDOW_BOARDS_PER_BOARD windows asked of each board (contract and point type), oldest
 * first, for at most MAX_TRACKED_WINDOW_BOARDS boards (the least recently asked forgotten: their
 * windows count as new again, the safe side).
 */
class RecentWindows {
  private readonly boards = new Map<string, string[]>();

  has(board: string, key: string): boolean {
    return this.boards.get(board)?.includes(key) ?? false;
  }

  add(board: string, key: string): void {
    const windows = this.boards.get(board) ?? [];
    this.boards.delete(board);
    windows.push(key);
    if (windows.length > WINDOW_BOARDS_PER_BOARD) windows.shift();
    this.boards.set(board, windows);
    if (this.boards.size > MAX_TRACKED_WINDOW_BOARDS) this.boards.delete(this.boards.keys().next().value!);
  }
}
