import type { FastifyInstance } from "fastify";
import type { Static } from "@sinclair/typebox";
import { checksumAddress, ZERO_ADDRESS_KEY } from "../../domain/address.js";
import { ApiError, validationFailed } from "../../domain/errors.js";
import { requireAddress, requirePoints } from "../../domain/validate.js";
import type { AppContext } from "../context.js";
import { ContractParams, CreditBody, CreditParams, OperatorBody, Responses, responses } from "../schemas.js";

const tags = ["admin"];
const security = [{ bearer: [] }];

export function adminRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.put<{ Params: Static<typeof ContractParams>; Body: Static<typeof OperatorBody> }>(
    "/contracts/:contractAddress/operator",
    { schema: { tags, security, params: ContractParams, body: OperatorBody, response: responses(Responses.operator, 400, 403) } },
    async (request) => {
      const contract = requireAddress(request.params.contractAddress, "contractAddress");
      const operator = requireAddress(request.body.operatorAddress, "operatorAddress");
      if (operator === ZERO_ADDRESS_KEY) throw validationFailed([{ path: "operatorAddress", message: "must not be the zero address" }]);
      await ctx.store.setOperator(contract, operator, ctx.clock.now());
      return { success: true as const, contractAddress: checksumAddress(contract), operatorAddress: checksumAddress(operator) };
    },
  );

  app.put<{ Params: Static<typeof CreditParams>; Body: Static<typeof CreditBody> }>(
    "/contracts/:contractAddress/credits/:creditId",
    { schema: { tags, security, params: CreditParams, body: CreditBody, response: responses(Responses.credited, 400, 403, 409) } },
    async (request) => {
      const address = requireAddress(request.params.contractAddress, "contractAddress");
      const amount = requirePoints(request.body.points, "points");
      const { creditId } = request.params;
      const result = await ctx.store.credit({
        address,
        creditId,
        pointType: request.body.pointType,
        amount,
        createdAtMs: ctx.clock.now(),
      });
      if (result.kind === "exists") {
        throw new ApiError("CREDIT_ID_EXISTS", `credit ${creditId} already exists`, { creditId, matchesRequest: result.matchesRequest });
      }
      if (result.kind === "overflow") {
        throw validationFailed([{ path: "points", message: "would take earnedCumulative past 10^18 points" }]);
      }
      return { success: true as const, creditId };
    },
  );
}
