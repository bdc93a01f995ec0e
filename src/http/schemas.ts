import { Type, type TSchema } from "@sinclair/typebox";
import type { Config } from "../config.js";
import { ADDRESS_PATTERN } from "../domain/address.js";
import { BATCH_STATUSES, ID_MAX_LENGTH, ID_PATTERN, POINT_TYPES } from "../domain/batch.js";
import { ERROR_STATUS } from "../domain/errors.js";
import { POINTS_PATTERN, POINTS_STRING_MAX_LENGTH } from "../domain/points.js";

/**
 * One set of TypeBox schemas drives request validation, TypeScript types and the OpenAPI
 * document. Bodies are closed objects (extra fields rejected) and are never coerced.
 */

/** ISO 8601 UTC with optional milliseconds, as printed by the service. */
export const ISO_TIME_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$";
const CURSOR_MAX_LENGTH = 128;
export const LIST_LIMIT_MAX = 1000;
export const LIST_LIMIT_DEFAULT = 100;

export const Address = Type.String({ pattern: ADDRESS_PATTERN, description: "0x + 40 hex digits; EIP-55 checksum checked when mixed case" });
export const Points = Type.String({ pattern: POINTS_PATTERN, maxLength: POINTS_STRING_MAX_LENGTH, description: "decimal points, up to 12 fractional digits" });
export const Id = Type.String({ pattern: ID_PATTERN, maxLength: ID_MAX_LENGTH, minLength: 1 });
export const PointTypeSchema = Type.Union(POINT_TYPES.map((t) => Type.Literal(t)));
export const StatusSchema = Type.Union(BATCH_STATUSES.map((s) => Type.Literal(s)));
const Time = Type.String({ format: "date-time", description: "ISO 8601 UTC with milliseconds" });
const NullableTime = Type.Union([Time, Type.Null()]);

const closed = { additionalProperties: false } as const;

export const ContractParams = Type.Object({ contractAddress: Address }, closed);
export const BatchParams = Type.Object({ contractAddress: Address, batchId: Id }, closed);
export const CreditParams = Type.Object({ contractAddress: Address, creditId: Id }, closed);

export function batchBodySchema(config: Config) {
  return Type.Object(
    {
      pointType: PointTypeSchema,
      transfers: Type.Array(Type.Object({ toAddress: Address, points: Points }, closed), {
        minItems: 1,
        maxItems: config.maxTransfersPerBatch,
      }),
      secondsToFinalize: Type.Optional(
        Type.Union([
          Type.Integer({ minimum: config.minimumFinalizeSeconds, maximum: config.defaultFinalizeSeconds }),
          Type.Null(),
        ]),
      ),
    },
    closed,
  );
}

export const ListQuery = Type.Object(
  {
    pointType: Type.Optional(PointTypeSchema),
    status: Type.Optional(StatusSchema),
    createdBefore: Type.Optional(Type.String({ pattern: ISO_TIME_PATTERN })),
    createdAfter: Type.Optional(Type.String({ pattern: ISO_TIME_PATTERN })),
    sort: Type.Optional(Type.Union([Type.Literal("ASC"), Type.Literal("DESC")])),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMIT_MAX })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: CURSOR_MAX_LENGTH })),
  },
  closed,
);

export const ChallengeBody = Type.Object({ contractAddress: Address, operatorAddress: Address }, closed);
export const SolveBody = Type.Object(
  {
    challengeData: Type.String({ minLength: 1, maxLength: 256 }),
    signature: Type.String({ minLength: 1, maxLength: 4096, description: "0x hex ERC-191 signature" }),
  },
  closed,
);
export const OperatorBody = Type.Object({ operatorAddress: Address }, closed);
export const CreditBody = Type.Object({ pointType: PointTypeSchema, points: Points }, closed);

export const BatchJson = Type.Object({
  id: Type.String(),
  contractAddress: Type.String(),
  pointType: Type.String(),
  status: Type.String(),
  points: Type.String(),
  transferCount: Type.Integer(),
  secondsToFinalize: Type.Integer(),
  createdAt: Time,
  finalizeAt: Time,
  updatedAt: NullableTime,
  finalizedAt: NullableTime,
  cancelledAt: NullableTime,
});

const TransferJson = Type.Object({ toAddress: Type.String(), points: Type.String() });
const BalanceJson = Type.Object({
  available: Type.String(),
  pendingSent: Type.String(),
  earnedCumulative: Type.String(),
  receivedCumulative: Type.String(),
  finalizedSentCumulative: Type.String(),
});

const ok = <T extends Record<string, TSchema>>(fields: T) => Type.Object({ success: Type.Literal(true), ...fields });

export const ErrorJson = Type.Object({
  success: Type.Literal(false),
  error: Type.Object({
    code: Type.Union(Object.keys(ERROR_STATUS).map((code) => Type.Literal(code))),
    message: Type.String(),
    details: Type.Optional(Type.Unknown()),
  }),
});

export const Responses = {
  submitted: ok({ batchId: Type.String() }),
  batch: ok({ batch: BatchJson }),
  batchWithTransfers: ok({ batch: Type.Intersect([BatchJson, Type.Object({ transfers: Type.Array(TransferJson) })]) }),
  batchList: ok({ batches: Type.Array(BatchJson), cursor: Type.Union([Type.String(), Type.Null()]) }),
  balances: ok({ balancesByPointType: Type.Object({ PHASE2_POINTS: BalanceJson, PHASE2_GOLD: BalanceJson }) }),
  challenge: ok({ challengeData: Type.String(), message: Type.String() }),
  solved: ok({ bearerToken: Type.String(), expiresAt: Time }),
  operator: ok({ contractAddress: Type.String(), operatorAddress: Type.String() }),
  credited: ok({ creditId: Type.String() }),
};

/** Response schemas for a route: its 200 shape plus the error body for documentation. */
export function responses(success: TSchema, ...errorStatuses: number[]): Record<number, TSchema> {
  const result: Record<number, TSchema> = { 200: success };
  for (const status of errorStatuses) result[status] = ErrorJson;
  return result;
}
