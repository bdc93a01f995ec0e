import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { challengeMessage, signatureMatches } from "../../auth/challenge.js";
import { newChallengeNonce, openChallenge, sealChallenge } from "../../auth/challenge-data.js";
import { challengeKeyOf } from "../../auth/challenge-key.js";
import { hashToken, newBearerToken } from "../../auth/tokens.js";
import type { AddressKey } from "../../domain/address.js";
import { signInRefusal } from "../../domain/chain.js";
import { chainUnavailable, forbidden, unauthorized } from "../../domain/errors.js";
import { requireAddress } from "../../domain/validate.js";
import type { AppContext } from "../context.js";
import { noStore } from "../no-store.js";
import { isoTime } from "../present.js";
import { ChallengeBody, Responses, SolveBody, responses } from "../schemas.js";
import { chainRoutes } from "./chain.js";

const tags = ["dapp-auth"];
const NOT_A_LIVE_CHALLENGE = "unknown, expired or already used challenge";

export function authRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const rateLimit = { max: ctx.config.authRateLimitPerMinute, timeWindow: 60_000 };
  const challengeKey = challengeKeyOf(ctx.store);

  app.post(
    "/v1/dapp-auth/challenge",
    {
      config: { rateLimit },
      onRequest: noStore,
      schema: { tags, body: ChallengeBody, response: responses(Responses.challenge, 400, 403, 429, 503) },
    },
    async (request) => {
      const contract = requireAddress(request.body.contractAddress, "contractAddress");
      const operator = requireAddress(request.body.operatorAddress, "operatorAddress");
      if (ctx.chain !== null) await chainOperatorMayEnter(ctx, contract, operator, false);
      else if ((await ctx.store.getOperator(contract)) !== operator) {
        throw forbidden("operatorAddress is not the operator of this contract");
      }
      const issuedAtMs = ctx.clock.now();
      const claims = {
        contract,
        operator,
        nonce: newChallengeNonce(),
        issuedAtMs,
        expiresAtMs: issuedAtMs + ctx.config.challengeTtlSeconds * 1000,
      };
      // Nothing is stored: the challenge is sealed with the server's key and comes back whole to /solve.
      const challengeData = sealChallenge(await challengeKey(), claims);
      return { success: true as const, challengeData, message: challengeMessage({ ...claims, publicUrl: ctx.config.publicUrl }) };
    },
  );

  app.post(
    "/v1/dapp-auth/solve",
    {
      config: { rateLimit },
      onRequest: noStore,
      schema: { tags, body: SolveBody, response: responses(Responses.solved, 400, 401, 403, 429, 503) },
    },
    async (request) => {
      const nowMs = ctx.clock.now();
      const challenge = openChallenge(await challengeKey(), request.body.challengeData);
      if (!challenge || challenge.expiresAtMs <= nowMs) throw unauthorized(NOT_A_LIVE_CHALLENGE);
      // Used before the signature is checked: a wrong guess burns the challenge. Only a challenge
      // this server sealed gets this far, so a stranger's junk writes nothing.
      if (!(await ctx.store.useChallengeNonce(challenge.nonce, challenge.expiresAtMs))) throw unauthorized(NOT_A_LIVE_CHALLENGE);
      const message = challengeMessage({ ...challenge, publicUrl: ctx.config.publicUrl });
      if (!(await signatureMatches(message, request.body.signature, challenge.operator))) {
        throw unauthorized("the signature does not recover to the operator");
      }
      if (ctx.chain !== null) await chainOperatorMayEnter(ctx, challenge.contract, challenge.operator, true);
      if ((await ctx.store.getOperator(challenge.contract)) !== challenge.operator) {
        throw ctx.chain === null
          ? unauthorized("the contract's operator changed since the challenge was issued")
          : chainUnavailable("the registry was read at a block older than the one last followed; retry", ctx.chain.retryAfterSeconds);
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
  chainRoutes(fastify, ctx);
}

/**
 * Operators on chain: `operator` may sign in for `contract` when the registry names it at the
 * block tag (403 naming why and the block otherwise; 503 CHAIN_UNAVAILABLE when the chain does
 * not answer). At `solve` the ledger then follows what was read, so the new token is the
 * operator's and the contract is followed from now on (src/worker/chain-follow.ts).
 */
async function chainOperatorMayEnter(ctx: AppContext, contract: AddressKey, operator: AddressKey, follow: boolean): Promise<void> {
  const chain = ctx.chain!;
  const { chainId, observation } = await chain.observe(contract);
  const refusal = signInRefusal(observation, operator, observation.block.number);
  if (refusal !== null) throw forbidden(refusal);
  if (follow) await ctx.store.applyChainObservation(contract, observation, chainId, ctx.clock.now(), false);
}
