import type { FastifyInstance, FastifyRequest } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { ADMIN_ACTOR } from "../../domain/actors.js";
import { checksumAddress } from "../../domain/address.js";
import type { PointType } from "../../domain/batch.js";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import { validationFailed, type FieldError } from "../../domain/errors.js";
import { ALL_TIME, BOARD_CURSOR, dayStartMs, rankPage, type BoardCursor, type DayWindow } from "../../domain/leaderboard.js";
import { PAGE_LIMIT_DEFAULT } from "../../domain/limits.js";
import { dayMessage } from "../../domain/messages.js";
import { formatPoints } from "../../domain/points.js";
import { requireAddress } from "../../domain/validate.js";
import type { ApiKeyUses } from "../../auth/api-key-uses.js";
import { declareScope } from "../access.js";
import { authenticateContract, type AuthLimits } from "../auth.js";
import type { AppContext } from "../context.js";
import { presentsAdminToken, publicReadLimit } from "../public-reads.js";
import { windowBudget, type WindowBudget } from "../window-budget.js";
import {
  LeaderboardResponses,
  LeaderboardStandingParams,
  ContractParams,
  leaderboardQuerySchema,
  leaderboardStandingQuerySchema,
  responses,
} from "../schemas.js";

/**
 * Leaderboards (API.md "Leaderboards and history"): GET …/leaderboard and …/leaderboard/{address}.
 * Unlike the other contract routes they are read by more than the contract's own credentials: the
 * operator's token or an API key with `read` (the contract hook, auth.ts), the admin token, or no
 * token at all when PUBLIC_READS=true (a program shows its users where they stand). So they live in
 * their own scope under the same prefix, with a hook that lets those two in first and hands every
 * other request to the contract hook.
 */

const tags = ["leaderboards"];
const security = [{ bearer: [] }];

export function leaderboardRoutes(scope: FastifyInstance, ctx: AppContext, limits: AuthLimits, uses: ApiKeyUses): void {
  scope.addHook("onRoute", declareScope);
  const contractHook = authenticateContract(ctx, limits, uses);
  const publicRead = publicReadLimit(scope, ctx);
  scope.addHook("onRequest", async function (this: FastifyInstance, request: FastifyRequest, reply) {
    if (presentsAdminToken(ctx, request)) {
      request.actor = ADMIN_ACTOR;
      return;
    }
    if (ctx.config.publicReads && request.headers.authorization === undefined) {
      await publicRead(request);
      return;
    }
    await contractHook.call(this, request, reply);
  });
  const budget = windowBudget(ctx);
  boardRoute(scope, ctx, budget);
  standingRoute(scope, ctx, budget);
}

function boardRoute(fastify: FastifyInstance, ctx: AppContext, budget: WindowBudget): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/leaderboard",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: leaderboardQuerySchema(ctx.config),
        response: responses(LeaderboardResponses.page, 400, 401, 403, 429),
      },
    },
    async (request) => {
      const contract = requireAddress(request.params.contractAddress, "contractAddress");
      const { pointType, limit = PAGE_LIMIT_DEFAULT } = request.query;
      const window = windowOf(request.query);
      const previous = request.query.cursor === undefined ? null : boardCursorOf(request.query.cursor, pointType, window);
      await budget(request, contract, pointType, window);
      const page = await ctx.store.replicaReads.readBoard({
        contract,
        pointType,
        window,
        limit,
        after: previous === null ? null : { units: previous.units, address: previous.address },
        nowMs: ctx.clock.now(),
      });
      const { entries, last } = rankPage(page.rows, previous);
      const next: BoardCursor | null =
        page.more && last !== null ? { ...last, pointType, fromDay: window.fromDay, toDay: window.toDay } : null;
      return {
        success: true as const,
        pointType,
        from: window.fromDay,
        to: window.toDay,
        participants: page.participants,
        through: new Date(page.throughMs).toISOString(),
        entries: entries.map((entry) => ({ rank: entry.rank, address: checksumAddress(entry.address), points: formatPoints(entry.units) })),
        cursor: next === null ? null : encodeCursor(BOARD_CURSOR, next),
      };
    },
  );
}

function standingRoute(fastify: FastifyInstance, ctx: AppContext, budget: WindowBudget): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/leaderboard/:address",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: LeaderboardStandingParams,
        querystring: leaderboardStandingQuerySchema(ctx.config),
        response: responses(LeaderboardResponses.standing, 400, 401, 403, 429),
      },
    },
    async (request) => {
      const contract = requireAddress(request.params.contractAddress, "contractAddress");
      const address = requireAddress(request.params.address, "address");
      const window = windowOf(request.query);
      await budget(request, contract, request.query.pointType, window);
      const standing = await ctx.store.replicaReads.readStanding(contract, request.query.pointType, window, address, ctx.clock.now());
      return {
        success: true as const,
        address: checksumAddress(address),
        rank: standing.units > 0n ? standing.ahead + 1 : null,
        points: formatPoints(standing.units),
        participants: standing.participants,
        through: new Date(standing.throughMs).toISOString(),
      };
    },
  );
}

/** `from` and `to` as a window of whole UTC days: each a day that exists, `to` after `from`. */
function windowOf(query: { from?: string; to?: string }): DayWindow {
  if (query.from === undefined && query.to === undefined) return ALL_TIME;
  const errors: FieldError[] = [];
  const dayMs = (path: "from" | "to", day: string | undefined): number | null => {
    if (day === undefined) return null;
    const ms = dayStartMs(day);
    if (ms === null) errors.push({ path, message: dayMessage(day) });
    return ms;
  };
  const fromMs = dayMs("from", query.from);
  const toMs = dayMs("to", query.to);
  if (fromMs !== null && toMs !== null && toMs <= fromMs) {
    errors.push({ path: "to", message: `must be a day after from (${query.from ?? ""}): to is exclusive` });
  }
  if (errors.length > 0) throw validationFailed(errors);
  return { fromDay: query.from ?? null, toDay: query.to ?? null, fromMs, toMs };
}

/** The position a cursor holds, when it was given out for this very board (point type and window); else 400 naming `cursor`. */
function boardCursorOf(cursor: string, pointType: PointType, window: DayWindow): BoardCursor {
  const position = decodeCursor(BOARD_CURSOR, cursor);
  if (position.pointType !== pointType || position.fromDay !== window.fromDay || position.toDay !== window.toDay) {
    throw validationFailed([
      { path: "cursor", message: "belongs to another board: repeat the query that returned it (same pointType, from and to)" },
    ]);
  }
  return position;
}
