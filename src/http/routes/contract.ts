import type { FastifyInstance } from "fastify";
import type { Static } from "@sinclair/typebox";
import { contractRateLimit, type AppContext } from "../context.js";
import { balancesJson } from "../present.js";
import { ContractParams, Responses, responses } from "../schemas.js";

export function balanceRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: Static<typeof ContractParams> }>(
    "/point-balances",
    {
      config: contractRateLimit(ctx),
      schema: {
        tags: ["balances"],
        security: [{ bearer: [] }],
        params: ContractParams,
        response: responses(Responses.balances, 400, 401, 403),
      },
    },
    async (request) => ({
      success: true as const,
      balancesByPointType: balancesJson(await ctx.store.getBalances(request.grant!.contract)),
    }),
  );
}
