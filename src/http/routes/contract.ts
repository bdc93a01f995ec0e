import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { AppContext } from "../context.js";
import { asOfMsOf } from "../history.js";
import { balancesAsOfJson, balancesJson } from "../present.js";
import { BalancesAsOfQuery, ContractParams, balancesResponseSchema, responses } from "../schemas.js";

export function balanceRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/point-balances",
    {
      config: { scope: "read" },
      schema: {
        tags: ["balances"],
        security: [{ bearer: [] }],
        params: ContractParams,
        querystring: BalancesAsOfQuery,
        response: responses(balancesResponseSchema(ctx.config), 400, 401, 403, 503),
      },
    },
    async (request) => {
      const contract = request.grant!.contract;
      const { asOf } = request.query;
      if (asOf !== undefined) {
        const asOfMs = asOfMsOf(asOf, ctx.clock.now());
        const balances = await ctx.store.getBalancesAsOf(contract, ctx.config.pointTypes, asOfMs);
        return { success: true as const, balancesByPointType: balancesAsOfJson(balances) };
      }
      // Two indexed reads, side by side (on PostgreSQL, two pooled connections).
      const [balances, assetEarnings] = await Promise.all([
        ctx.store.getBalances(contract, ctx.config.pointTypes),
        ctx.store.getAssetEarnings(contract),
      ]);
      return { success: true as const, balancesByPointType: balancesJson(balances, assetEarnings, ctx.config.balanceAssets) };
    },
  );
}
