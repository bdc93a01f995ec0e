import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { notFound } from "../../domain/errors.js";
import type { AppContext } from "../context.js";
import { noStore } from "../no-store.js";
import { Responses, responses } from "../schemas.js";

/**
 * GET /v1/chain (API.md, Operators on chain; no authentication): which chain and registry name
 * the operators, the last successful read at the block tag, and whether the RPC endpoint answers.
 * 404 when an administrator sets the operators.
 */
export function chainRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get("/v1/chain", { onRequest: noStore, schema: { tags: ["dapp-auth"], response: responses(Responses.chain, 404) } }, async () => {
    if (ctx.chain === null) throw notFound("operators do not come from a chain here: CHAIN_RPC_URL is not set");
    return { success: true as const, ...ctx.chain.view() };
  });
}
