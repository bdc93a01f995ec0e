import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { challengeMessage, signatureMatches } from "../../auth/challenge.js";
import { hashToken, newBearerToken, newChallengeId, newNonce } from "../../auth/tokens.js";
import { forbidden, unauthorized } from "../../domain/errors.js";
import { requireAddress } from "../../domain/validate.js";
import type { AppContext } from "../context.js";
import { isoTime } from "../present.js";
import { ChallengeBody, Responses, SolveBody, responses } from "../schemas.js";

const tags = ["dapp-auth"];

export function authRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const rateLimit = { max: ctx.config.authRateLimitPerMinute, timeWindow: 60_000 };

  app.post(
    "/v1/dapp-auth/challenge",
    { config: { rateLimit }, schema: { tags, body: ChallengeBody, response: responses(Responses.challenge, 400, 403, 429) } },
    async (request) => {
      const contract = requireAddress(request.body.contractAddress, "contractAddress");
      const operator = requireAddress(request.body.operatorAddress, "operatorAddress");
      if ((await ctx.store.getOperator(contract)) !== operator) {
        throw forbidden("operatorAddress is not the operator of this contract");
      }
      const issuedAtMs = ctx.clock.now();
      const expiresAtMs = issuedAtMs + ctx.config.challengeTtlSeconds * 1000;
      const message = challengeMessage({ contract, operator, nonce: newNonce(), issuedAtMs, expiresAtMs, publicUrl: ctx.config.publicUrl });
      const challengeId = newChallengeId();
      await ctx.store.createChallenge({ challengeId, contract, operator, message, createdAtMs: issuedAtMs, expiresAtMs });
      return { success: true as const, challengeData: challengeId, message };
    },
  );

  app.post(
    "/v1/dapp-auth/solve",
    { config: { rateLimit }, schema: { tags, body: SolveBody, response: responses(Responses.solved, 400, 401, 429) } },
    async (request) => {
      const nowMs = ctx.clock.now();
      // Consumed before the signature is checked: a wrong guess burns the challenge.
      const challenge = await ctx.store.consumeChallenge(request.body.challengeData, nowMs);
      if (!challenge) throw unauthorized("unknown, expired or already used challenge");
      if (!(await signatureMatches(challenge.message, request.body.signature, challenge.operator))) {
        throw unauthorized("the signature does not recover to the operator");
      }
      if ((await ctx.store.getOperator(challenge.contract)) !== challenge.operator) {
        throw unauthorized("the contract's operator changed since the challenge was issued");
      }
      const bearerToken = newBearerToken();
      const expiresAtMs = nowMs + ctx.config.bearerTokenTtlSeconds * 1000;
      await ctx.store.createToken({
        tokenHash: hashToken(bearerToken),
        contract: challenge.contract,
        operator: challenge.operator,
        createdAtMs: nowMs,
        expiresAtMs,
      });
      return { success: true as const, bearerToken, expiresAt: isoTime(expiresAtMs) };
    },
  );
}
