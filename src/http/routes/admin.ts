import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { checksumAddress, ZERO_ADDRESS_KEY } from "../../domain/address.js";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import { ApiError, validationFailed } from "../../domain/errors.js";
import { alreadyExistsMessage, ZERO_ADDRESS_MESSAGE } from "../../domain/messages.js";
import { isoTime } from "../../domain/json.js";
import { PAGE_LIMIT_DEFAULT } from "../../domain/limits.js";
import { requireAddress, requirePoints } from "../../domain/validate.js";
import type { ApiInstance, AppContext } from "../context.js";
import { CONTRACT_CURSOR } from "../cursor.js";
import { ContractParams, ContractsQuery, CreditParams, OperatorBody, Responses, creditBodySchema, responses } from "../schemas.js";
import { actorOf } from "../auth.js";
import { adminPublisherRoutes } from "./publishers.js";

const tags = ["admin"];
const security = [{ bearer: [] }];

export function adminRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  contractListRoute(app, ctx);
  adminPublisherRoutes(fastify, ctx);
  app.put(
    "/contracts/:contractAddress/operator",
    {
      schema: {
        tags,
        security,
        params: ContractParams,
        body: OperatorBody,
        response: responses(Responses.operator, 400, 403, "OPERATORS_ON_CHAIN"),
      },
    },
    async (request) => {
      const contract = requireAddress(request.params.contractAddress, "contractAddress");
      const operator = requireAddress(request.body.operatorAddress, "operatorAddress");
      if (operator === ZERO_ADDRESS_KEY) throw validationFailed([{ path: "operatorAddress", message: ZERO_ADDRESS_MESSAGE }]);
      // One source of truth at a time (API.md, Operators on chain).
      if (ctx.chain !== null) throw new ApiError("OPERATORS_ON_CHAIN");
      await ctx.store.setOperator(contract, operator, ctx.clock.now(), actorOf(request));
      return { success: true as const, contractAddress: checksumAddress(contract), operatorAddress: checksumAddress(operator) };
    },
  );

  app.put(
    "/contracts/:contractAddress/credits/:creditId",
    {
      schema: {
        tags,
        security,
        params: CreditParams,
        body: creditBodySchema(ctx.config),
        response: responses(Responses.credited, 400, 403, "CREDIT_ID_EXISTS"),
      },
    },
    async (request) => {
      const address = requireAddress(request.params.contractAddress, "contractAddress");
      const amount = requirePoints(request.body.points, "points");
      const { creditId } = request.params;
      const result = await ctx.store.credit(
        {
          address,
          creditId,
          pointType: request.body.pointType,
          amount,
          createdAtMs: ctx.clock.now(),
          asset: request.body.asset ?? null,
          block: request.body.block ?? null,
        },
        actorOf(request),
      );
      if (result.kind === "exists") {
        throw new ApiError("CREDIT_ID_EXISTS", alreadyExistsMessage("credit", creditId), {
          creditId,
          matchesRequest: result.matchesRequest,
        });
      }
      if (result.kind === "overflow") {
        throw validationFailed([
          { path: "points", message: `would take the total supply of ${request.body.pointType} (all credits together) past 10^18 points` },
        ]);
      }
      return { success: true as const, creditId };
    },
  );
}

/** GET /v1/admin/contracts: the registered contracts and their operators, by contract address. */
function contractListRoute(app: ApiInstance, ctx: AppContext): void {
  app.get(
    "/contracts",
    { schema: { tags, security, querystring: ContractsQuery, response: responses(Responses.contractList, 400, 403) } },
    async (request) => {
      const { cursor, limit } = request.query;
      const page = await ctx.store.listOperators({
        limit: limit ?? PAGE_LIMIT_DEFAULT,
        after: cursor === undefined ? undefined : decodeCursor(CONTRACT_CURSOR, cursor),
      });
      return {
        success: true as const,
        contracts: page.operators.map((row) => ({
          contractAddress: checksumAddress(row.contract),
          operatorAddress: checksumAddress(row.operator),
          updatedAt: isoTime(row.updatedAtMs),
        })),
        cursor: page.next && encodeCursor(CONTRACT_CURSOR, page.next),
      };
    },
  );
}
